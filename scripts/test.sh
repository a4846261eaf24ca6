#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages), builds, and runs every test: unit, golden,
# property, the real-Slurm integration test, then each libFuzzer target briefly.
# Tests that need ../shared/data skip with a message when it is absent; the Slurm test skips when
# not run as root. Environment: FUZZ_SECONDS (default 10 per target), SKIP_FUZZ=1 to leave fuzzing out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh all
scripts/build.sh
# Tests run one per core (-j nproc); OpenMP threads that spin-wait (XGBoost, LibTorch) would then
# fight for the cores, so they sleep instead (docs/evaluation.md, "Threads").
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
status=0
ctest --test-dir "${BUILD_DIR:-build}" -j "$(nproc)" --output-on-failure --timeout 1800 || status=1
if [ "${SKIP_FUZZ:-0}" != "1" ]; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-10}" scripts/fuzz.sh || status=1
fi
exit $status
