#!/usr/bin/env bash
# Sets up, builds, writes the built-in synthetic trace and evaluates the history methods on it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build.sh
mkdir -p build/demo
build/bin/peakcast synth --jobs 20000 --seed 1 -o build/demo/synth.jsonl
build/bin/peakcast evaluate build/demo/synth.jsonl --markdown build/demo/evaluation.md --json build/demo/evaluation.json
