#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (packages), builds, and runs every test: unit, golden,
# property, brief fuzzing and the Slurm integration test. Tests that need ../shared/data skip
# with a message when it is absent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh all
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" -j "$(nproc)" --output-on-failure --timeout 1800
