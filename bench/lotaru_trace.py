#!/usr/bin/env python3
"""Writes the Lotaru study's nf-core measurements as one Nextflow trace for `peakcast simulate`.

Lotaru (CRC-FONDA/Lotaru on GitHub, execution_reports/MACHINE/results_WF/execution_report_MACHINE.csv)
ran nf-core workflows on seven machines with inputs downsampled to several sizes and recorded,
per task, the columns of a Nextflow trace under its own header (`Machine`, `Task`, `Realtime`
in ms, `rss`, `rchar`, `memory`, `peak_rss` in bytes, among others). Neither its workflows
atacseq and bacass nor its runs were used to design peakcast's sizing policy, so replaying them
with Sizey's protocol is a check on workflows nothing here was fitted to (docs/sizing.md,
"Workflows nothing here was designed on"). The files stay outside the repository, as
../shared/data does; fetch them from the study's repository and give them all at once:

    bench/lotaru_trace.py execution_report_*.csv -o atacseq.csv
    build/bin/peakcast simulate atacseq.csv --protocol sizey --seed 1996 --seeds 10

Every row becomes one COMPLETED task of the process named by `Task`, tagged with its machine,
in the order given; submit times are one second apart (Sizey's protocol does not read them).
Only the columns named above are read, by name, so a file cut to those columns works too. A
row without them, or with a value that is not a whole number, stops the script with its file,
line and column, and leaves -o as it was (no partial trace).

Needs only Python's standard library.
"""
import argparse
import csv
import os
import sys

COLUMNS = ["Machine", "Task", "Realtime", "rss", "rchar", "memory", "peak_rss"]
NUMERIC = ["Realtime", "rss", "rchar", "memory", "peak_rss"]


def rows(paths):
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}: no column {', '.join(missing)} (a Lotaru execution report has {', '.join(COLUMNS)})")
            for row in reader:
                for c in NUMERIC:
                    if not row[c].isdigit():
                        sys.exit(f"{path}:{reader.line_num}: {c}: not a whole number: '{row[c]}'")
                yield row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="Lotaru execution_report_*.csv files of one workflow")
    ap.add_argument("-o", "--output", required=True, help="the Nextflow trace to write (CSV)")
    a = ap.parse_args()
    header = ["task_id", "hash", "native_id", "process", "tag", "name", "status", "exit", "memory",
              "submit", "start", "complete", "realtime", "rss", "peak_rss", "rchar"]
    t = 1_600_000_000_000  # epoch ms
    n = 0
    # Written beside the output and renamed at the end: a bad row stops the script without
    # leaving a partial trace that `peakcast simulate` would read as if it were whole.
    tmp = a.output + ".partial"
    try:
        with open(tmp, "w", newline="") as out:
            w = csv.writer(out)
            w.writerow(header)
            for n, r in enumerate(rows(a.reports), 1):
                rt = int(r["Realtime"])
                w.writerow([n, f"{n:02x}/{n:06x}", n, r["Task"], r["Machine"], f"{r['Task']} ({r['Machine']} {n})",
                            "COMPLETED", 0, r["memory"], t, t, t + rt, rt, r["rss"], r["peak_rss"], r["rchar"]])
                t += 1000
        os.replace(tmp, a.output)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    print(f"wrote {a.output}: {n} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
