#!/usr/bin/env python3
"""The five-seed judge of a cascade change: MAE over seeds and folds, beside hier_last1.

docs/evaluation.md measures every change to the cascade's choices the same way: `peakcast
evaluate TRACE --methods hier_last1,cascade --folds 5 --seeds 5` on each trace, then the
cascade's split MAE (mean and s.d. over the seeds), its rolling-origin fold means and each
fold, with hier_last1's on the same jobs. A variant is a temporary `--cascade-option K=V`;
this script runs the default and the variant alike and prints one Markdown table, so a
measurement in the docs can be repeated with one command:

    bench/cascade_judge.py                                   # the default, on the dev traces
    bench/cascade_judge.py --option q_source_margin_se=2     # a variant
    bench/cascade_judge.py --trace ../other/trace_x.csv --seeds 3 --json-dir /tmp/judge

The dev traces are the nf-core ones and GPUMemNet's under ../shared/data (those present; the
LANL log, 73k jobs, takes half an hour and is left to --trace). The scored resource of a trace is
memory, or VRAM where no job has a memory label (GPUMemNet). Each evaluate's JSON is kept with
--json-dir; without it they go to a temporary folder removed at the end. Exits non-zero,
printing evaluate's own error, when a run fails.

Needs only Python's standard library and a built peakcast (build/bin/peakcast).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV_TRACES = [
    "nextflow/trace_chipseq.csv",
    "nextflow/trace_eager.csv",
    "nextflow/trace_mag.csv",
    "gpu/gpumemnet-timm-a100.dev.jsonl",
]


def scored_resource(doc):
    """Memory where any result scored a memory job, else VRAM."""
    for r in doc["results"]:
        if r["resource"] == "mem" and r.get("n", 0) > 0:
            return "mem"
    return "vram"


def row_of(doc, method, resource):
    split = next((r for r in doc["results"] if r["method"] == method and r["resource"] == resource), None)
    folds = None
    ro = doc.get("rolling_origin")
    if ro:
        folds = next((s for s in ro["summary"] if s["method"] == method and s["resource"] == resource), None)
    return split, folds


def fmt_mae(x):
    return "-" if x is None else f"{x:.4f}"


def judge_trace(args, trace, json_path):
    cmd = [args.peakcast, "evaluate", trace, "--methods", "hier_last1,cascade", "--threads", str(args.threads),
           "--seeds", str(args.seeds), "--bootstrap", "0", "--latency-jobs", "0", "--json", json_path]
    if args.folds > 0:
        cmd += ["--folds", str(args.folds)]
    for opt in args.option:
        cmd += ["--cascade-option", opt]
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "passive")
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-4000:])
        raise SystemExit(f"cascade_judge: {' '.join(cmd)}: exit {run.returncode}")
    with open(json_path) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                epilog="Runs `peakcast evaluate` once per trace; see the module docstring.")
    p.add_argument("--peakcast", default=os.path.join(ROOT, "build", "bin", "peakcast"),
                   help="the peakcast binary (default: build/bin/peakcast)")
    p.add_argument("--trace", action="append", default=[],
                   help="a trace to judge on (repeatable; default: the dev traces under --data)")
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"),
                   help="where the dev traces are (default: ../shared/data)")
    p.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="a --cascade-option for the cascade (repeatable)")
    p.add_argument("--seeds", type=int, default=5, help="seeds 42.. of the learned methods (default 5)")
    p.add_argument("--folds", type=int, default=5, help="rolling-origin folds (default 5; 0: the split only)")
    p.add_argument("--threads", type=int, default=2, help="evaluate's --threads (default 2)")
    p.add_argument("--json-dir", help="keep each trace's evaluate JSON here (TRACE-NAME.json)")
    args = p.parse_args()
    if args.seeds < 1:
        p.error("--seeds: at least 1")
    if args.folds < 0:
        p.error("--folds: 0 or more")
    if not os.access(args.peakcast, os.X_OK):
        p.error(f"--peakcast {args.peakcast}: not an executable (build first: scripts/build.sh)")
    traces = args.trace or [os.path.join(args.data, t) for t in DEV_TRACES
                            if os.path.exists(os.path.join(args.data, t))]
    if not traces:
        p.error(f"no trace: none of the dev traces is under {args.data}; give --trace")

    if args.json_dir:
        os.makedirs(args.json_dir, exist_ok=True)
        judge_all(args, traces, args.json_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="cascade_judge.") as out_dir:
            judge_all(args, traces, out_dir)


def judge_all(args, traces, out_dir):
    """One evaluate per trace, a table row as each ends (the header before the first)."""
    option_text = " ".join(f"--cascade-option {o}" for o in args.option) or "(the default)"
    header = [f"cascade {option_text}; {args.seeds} seed{'s' if args.seeds != 1 else ''}, "
              f"{'split only' if args.folds == 0 else f'{args.folds} folds'}: MAE, split mean +/- s.d. over "
              "the seeds / fold means [each fold]", "",
              "| trace | resource | cascade | hier_last1 | cascade / hier_last1 (split, folds) |",
              "|---|---|---|---|---|"]
    for i, trace in enumerate(traces):
        name = os.path.splitext(os.path.basename(trace))[0]
        sys.stderr.write(f"[{i + 1}/{len(traces)}] {name} ...\n")
        doc = judge_trace(args, trace, os.path.join(out_dir, f"{name}.json"))
        resource = scored_resource(doc)
        cells, ratio = [], []
        maes = {}
        for method in ("cascade", "hier_last1"):
            split, folds = row_of(doc, method, resource)
            if split is None:
                raise SystemExit(f"cascade_judge: {trace}: no {method} {resource} row in evaluate's JSON")
            sd = (split.get("sd") or {}).get("mae")
            text = fmt_mae(split["mae"])
            if method == "cascade" and args.seeds > 1 and sd is not None:
                text += f" +/- {sd:.4f}"
            fold_mean = folds["mae_mean"] if folds else None
            if folds:
                text += f" / {fmt_mae(fold_mean)} [{' '.join(fmt_mae(x) for x in folds['mae'])}]"
            cells.append(text)
            maes[method] = (split["mae"], fold_mean)
        for k in range(2):
            c, h = maes["cascade"][k], maes["hier_last1"][k]
            if c is not None and h:
                ratio.append(f"{c / h:.2f}x")
        if header:
            print("\n".join(header))
            header = None
        print(f"| {name} | {resource} | {cells[0]} | {cells[1]} | {', '.join(ratio)} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
