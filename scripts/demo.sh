#!/usr/bin/env bash
# Sets up, builds, writes the built-in synthetic trace (20,000 jobs) and evaluates the history
# baselines, XGBoost, the code model and the cascade on it; prints the table and writes it to
# build/demo/evaluation.{md,json}. The study's slower neural baselines are left out here
# (add them with: build/bin/peakcast evaluate build/demo/synth.jsonl --methods all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build.sh
mkdir -p build/demo
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
build/bin/peakcast synth --jobs 20000 --seed 1 -o build/demo/synth.jsonl
build/bin/peakcast evaluate build/demo/synth.jsonl \
  --methods hier_last1,hier_median3,hier_median5,hier_ewma,global_median,history_policy,xgboost,code_only,cascade \
  --markdown build/demo/evaluation.md --json build/demo/evaluation.json
