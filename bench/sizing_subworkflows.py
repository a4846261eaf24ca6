#!/usr/bin/env python3
"""How issue 10's sizing acceptance fares on workflows of few task types.

The acceptance (docs/sizing.md) is checked per workflow: peakcast's waste, mean over seeds
1996-2005 of Sizey's protocol, at most 0.75x the best baseline's, with no more failed attempts
than that baseline. The held-out workflows have 5, 9 and 30 task types; the shared ones 30, 13
and 8. This probe draws random "sub-workflows" of K task types (without replacement) from the
task types Sizey's protocol keeps in the shared nf-core traces, writes each as one Nextflow
trace (so the site's failure price is that sub-workflow's own), replays it with
`peakcast simulate --protocol sizey --seeds 10` and reports how often the acceptance holds,
how often each half of it holds, and the geometric mean of peakcast's waste over the best
baseline's.

    bench/sizing_subworkflows.py --types 5 --draws 60 --seed 7

`--tasks-per-type N` cuts each drawn type to a random N of its tasks (a type with fewer keeps
all of them); with `--min-tasks N` too, only types with at least N tasks are drawn, so every
drawn type has N, as a held-out workflow of N tasks a type does:

    bench/sizing_subworkflows.py --types 4 --min-tasks 332 --tasks-per-type 332 --draws 10

`--per-type` replays each kept type alone instead (a workflow of one type, its own failure
price) and prints, per type, peakcast against its best baseline beside the hindsight floor and
the floor within 4 and 16 bins of the input size: where the input could take an answer below
any fixed allocation, and where peakcast stands from both (docs/sizing-log.md, "Two more
candidates on the input"):

    bench/sizing_subworkflows.py --per-type

Needs only Python's standard library and a built peakcast (build/bin/peakcast).
"""
import argparse
import collections
import csv
import json
import math
import os
import random
import subprocess
import sys
import tempfile

WORKFLOWS = ["chipseq", "eager", "mag"]
MIN_TASKS = 34  # Sizey's protocol leaves out a process with fewer usable tasks


def kept_task_types(data_dir):
    """Task types Sizey's protocol keeps, keyed 'workflow:process', with every row of each."""
    types, header = {}, None
    for wf in WORKFLOWS:
        path = os.path.join(data_dir, f"trace_{wf}.csv")
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            # eager's columns are a subset of the others': write every sub-workflow with them
            if header is None or len(reader.fieldnames) < len(header):
                header = reader.fieldnames
            rows = collections.defaultdict(list)
            for row in reader:
                rows[row["process"]].append(row)
        for process, rs in rows.items():
            kept = [r for r in rs if usable(r)]
            try:
                if len(kept) < MIN_TASKS or any(float(r["realtime"]) == 0 for r in kept):
                    continue
            except ValueError:
                continue
            types[f"{wf}:{process}"] = rs
    return types, header


def usable(row):
    return row["rss"] not in ("-", "", "0")


def best_fixed_cost(rows):
    """GB*h over all of `rows`' usable tasks: the least that one first allocation for every task
    would have cost, in hindsight, each failed attempt retried at the largest peak among them
    (rss, Sizey's target): over-allocation where it holds, else that attempt plus the largest
    peak's excess. With the number of usable tasks."""
    z = sorted((float(r["rss"]), float(r["realtime"])) for r in rows if usable(r))
    top = z[-1][0]
    all_t = sum(t for _, t in z)
    all_yt = sum(y * t for y, t in z)
    best, held_t, held_yt = math.inf, 0.0, 0.0
    for i, (a, t) in enumerate(z):
        held_t += t
        held_yt += a * t
        if i + 1 < len(z) and z[i + 1][0] == a:
            continue
        # held: over-allocation; failed: the attempt at a, then the largest peak's excess
        cost = (a * held_t - held_yt) + (a + top) * (all_t - held_t) - (all_yt - held_yt)
        best = min(best, cost)
    return best * 1e-9 / 3.6e6, len(z)


def online_share(cost, n):
    """A cost over all n tasks of a type, per task, times the tasks Sizey's protocol replays
    online (ceil(0.7 n))."""
    return cost / n * math.ceil(0.7 * n)


def hindsight_floor(rows):
    """GB*h: best_fixed_cost of a type's tasks, scaled to the tasks replayed online. A policy
    that answers every task of a type alike cannot be expected below it; only a prediction from
    the input can get under it (docs/sizing.md, "How far below any fixed allocation")."""
    return online_share(*best_fixed_cost(rows))


def input_binned_floor(rows, bins):
    """GB*h: best_fixed_cost within each of `bins` equal-count bins of the input size (rchar),
    each bin retried at its own largest peak, summed and scaled as hindsight_floor is. What an
    allocation that steps with the input could cost at best, in hindsight; the finer the bins,
    the more it fits the tasks themselves."""
    def read(r):
        try:
            return float(r["rchar"])
        except ValueError:
            return 0.0
    z = sorted((r for r in rows if usable(r)), key=read)
    n = len(z)
    parts = (z[i * n // bins:(i + 1) * n // bins] for i in range(bins))
    return online_share(sum(best_fixed_cost(p)[0] for p in parts if p), n)


def accepted(r):
    """Issue 10's acceptance on one draw: at most 0.75x the best baseline's waste, no more failures."""
    return r["peakcast_waste_gbh"] <= 0.75 * r["best_waste_gbh"] and r["peakcast_failures"] <= r["best_failures"]


def subsample(types, sample, tasks_per_type, rng):
    """Each drawn type's rows; with tasks_per_type, a random that many of its usable rows."""
    out = {}
    for t in sample:
        rows = types[t]
        if tasks_per_type:
            rows = [r for r in rows if usable(r)]
            if len(rows) > tasks_per_type:
                rows = rng.sample(rows, tasks_per_type)
        out[t] = rows
    return out


def replay(peakcast, rows_of, header, workdir, tag):
    trace = os.path.join(workdir, f"{tag}.csv")
    with open(trace, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        w.writeheader()
        for t, rows in rows_of.items():
            for row in rows:
                w.writerow(dict(row, process=t.replace(":", "_")))
    out = os.path.join(workdir, f"{tag}.json")
    run = subprocess.run([peakcast, "simulate", trace, "--protocol", "sizey", "--seed", "1996",
                          "--seeds", "10", "--json", out], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"peakcast simulate failed on {trace}:\n{run.stderr[-2000:]}")
    with open(out) as f:
        c = json.load(f)["comparison"]  # peakcast against the baseline of least mean waste
    if c is None:
        sys.exit(f"{out}: no comparison (peakcast or the baselines missing)")
    return c


def replay_each_type(a, types, header, names):
    """Each type replayed alone; a table sorted by peakcast's waste."""
    task_rng = random.Random(f"{a.seed}:tasks")
    out = []
    with tempfile.TemporaryDirectory() as workdir:
        for i, t in enumerate(names):
            rows_of = subsample(types, [t], a.tasks_per_type, task_rng)
            c = replay(a.peakcast, rows_of, header, workdir, f"type{i}")
            rows = rows_of[t]
            out.append({"type": t, "tasks": sum(map(usable, rows)), "best": c["best_baseline"],
                        "best_waste_gbh": c["baseline_waste_gbh"], "best_failures": c["baseline_failures"],
                        "peakcast_waste_gbh": c["waste_gbh"], "peakcast_failures": c["failures"],
                        "floor_gbh": hindsight_floor(rows), "floor_4_bins_gbh": input_binned_floor(rows, 4),
                        "floor_16_bins_gbh": input_binned_floor(rows, 16)})
            print(f"type {i + 1}/{len(names)}: {t}", file=sys.stderr, flush=True)
    print(f"{'type':58s} {'tasks':>5s}  {'best baseline (GBh / failures)':>34s}  {'peakcast':>17s} "
          f"{'ratio':>5s} {'floor':>9s} {'4 bins':>9s} {'16 bins':>9s}")
    for r in sorted(out, key=lambda r: -r["peakcast_waste_gbh"]):
        ratio = r["peakcast_waste_gbh"] / r["best_waste_gbh"] if r["best_waste_gbh"] > 0 else math.inf
        print(f"{r['type'][-58:]:58s} {r['tasks']:5d}  {r['best']:>16s} {r['best_waste_gbh']:9.4g} / "
              f"{r['best_failures']:5.1f}  {r['peakcast_waste_gbh']:9.4g} / {r['peakcast_failures']:5.1f} "
              f"{ratio:5.2f} {r['floor_gbh']:9.4g} {r['floor_4_bins_gbh']:9.4g} {r['floor_16_bins_gbh']:9.4g}")
    met = sum(map(accepted, out))
    print(f"{len(out)} types alone: acceptance met on {met}; peakcast below the floor on "
          f"{sum(r['peakcast_waste_gbh'] < r['floor_gbh'] for r in out)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--types", type=int, help="task types per sub-workflow (K)")
    ap.add_argument("--per-type", action="store_true",
                    help="replay each kept type alone instead of drawing sub-workflows")
    ap.add_argument("--draws", type=int, default=40, help="sub-workflows to draw (default 40)")
    ap.add_argument("--seed", type=int, default=7, help="seed of the draws (default 7)")
    ap.add_argument("--peakcast", default=os.path.join(here, "..", "build", "bin", "peakcast"))
    ap.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "nextflow"),
                    help="folder with trace_{chipseq,eager,mag}.csv (default ../shared/data/nextflow)")
    ap.add_argument("--tasks-per-type", type=int, default=0, metavar="N",
                    help=f"keep a random N of each drawn type's usable tasks (default: all; "
                         f"at least {MIN_TASKS}, Sizey's least)")
    ap.add_argument("--min-tasks", type=int, default=0, metavar="N",
                    help="draw only among the types with at least N usable tasks (default: all "
                         "kept types); with --tasks-per-type N, every drawn type then has N")
    ap.add_argument("--json", help="also write each draw's (or type's) figures to FILE")
    a = ap.parse_args()
    if (a.types is None) == (not a.per_type):
        sys.exit("give --types K (sub-workflows of K types) or --per-type (each type alone)")
    if a.tasks_per_type and a.tasks_per_type < MIN_TASKS:
        sys.exit(f"--tasks-per-type: must be at least {MIN_TASKS} (Sizey's protocol leaves out "
                 f"a type with fewer)")
    types, header = kept_task_types(a.data)
    names = sorted(t for t in types if sum(usable(r) for r in types[t]) >= a.min_tasks)
    if a.per_type:
        return replay_each_type(a, types, header, names)
    if not 1 <= a.types <= len(names):
        pool = f" with at least {a.min_tasks} usable tasks" if a.min_tasks else ""
        sys.exit(f"--types: must be 1..{len(names)} (the kept task types{pool})")
    rng = random.Random(a.seed)
    # the tasks kept come from a generator of their own, so a draw's types are the same
    # with or without --tasks-per-type
    task_rng = random.Random(f"{a.seed}:tasks")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for d in range(a.draws):
            sample = rng.sample(names, a.types)
            rows_of = subsample(types, sample, a.tasks_per_type, task_rng)
            c = replay(a.peakcast, rows_of, header, workdir, f"draw{d}")
            best, bw, bf = c["best_baseline"], c["baseline_waste_gbh"], c["baseline_failures"]
            pc = (c["waste_gbh"], c["failures"])
            floor = sum(hindsight_floor(r) for r in rows_of.values())
            rows.append({"types": sample, "tasks": {t: len(r) for t, r in rows_of.items()}, "best": best, "best_waste_gbh": bw, "best_failures": bf,
                         "peakcast_waste_gbh": pc[0], "peakcast_failures": pc[1], "floor_gbh": floor})
            ratio = pc[0] / bw if bw > 0 else math.inf
            ok = accepted(rows[-1])
            print(f"draw {d + 1}/{a.draws}: best {best} {bw:.2f} GBh / {bf:.1f}, peakcast {pc[0]:.2f} / "
                  f"{pc[1]:.1f}, waste ratio {ratio:.2f}, floor {floor:.2f} GBh "
                  f"{'met' if ok else 'not met'}", flush=True)
    n = len(rows)
    waste_ok = sum(r["peakcast_waste_gbh"] <= 0.75 * r["best_waste_gbh"] for r in rows)
    fail_ok = sum(r["peakcast_failures"] <= r["best_failures"] for r in rows)
    both = sum(map(accepted, rows))
    gm = math.exp(sum(math.log(max(r["peakcast_waste_gbh"], 1e-9) / max(r["best_waste_gbh"], 1e-9))
                      for r in rows) / n)
    per_type = f", at most {a.tasks_per_type} tasks a type" if a.tasks_per_type else ""
    if a.min_tasks:
        per_type += f", drawn from the {len(names)} types with at least {a.min_tasks}"
    print(f"K={a.types}{per_type}, {n} sub-workflows: acceptance met {both / n:.2f}; waste <= 0.75x best "
          f"{waste_ok / n:.2f}; failures <= best's {fail_ok / n:.2f}; geometric-mean waste ratio {gm:.3f}")
    below = [r for r in rows if 0.75 * r["best_waste_gbh"] < r["floor_gbh"]]
    above = [r for r in rows if 0.75 * r["best_waste_gbh"] >= r["floor_gbh"]]
    print(f"0.75x best below the hindsight floor in {len(below)} draws (met in {sum(map(accepted, below))}), "
          f"above it in {len(above)} (met in {sum(map(accepted, above))})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
