#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) with clang, ASan and coverage in a separate
# build dir, then runs each one briefly on a seed corpus taken from tests/ingest/golden.
# Exits non-zero when any target crashes, leaks, times out or breaks an invariant; the input that
# did it is saved under $FUZZ_BUILD_DIR/artifacts/.
#   FUZZ_SECONDS=10   seconds per target          FUZZ_BUILD_DIR=build-fuzz
#   FUZZ_TARGETS="swf_fuzz jsonl_fuzz"  (default: every *_fuzz.cpp)   JOBS=$(nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
SECONDS_PER_TARGET="${FUZZ_SECONDS:-10}"
JOBS="${JOBS:-$(nproc)}"
GOLDEN=tests/ingest/golden

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2
  exit 2
fi

# LibTorch's headers do not compile with clang 14 in C++20, and no parser needs them: the fuzz
# build leaves the code model out.
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPEAKCAST_BUILD_FUZZ=ON -DPEAKCAST_BUILD_BENCH=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" >/dev/null
fi

if [ -n "${FUZZ_TARGETS:-}" ]; then
  targets="$FUZZ_TARGETS"
  # shellcheck disable=SC2086
  cmake --build "$BUILD_DIR" -j "$JOBS" --target $targets
else
  # Every *_fuzz.cpp whose libraries this configuration builds (tests/fuzz/CMakeLists.txt says
  # which were skipped and why).
  cmake --build "$BUILD_DIR" -j "$JOBS" --target fuzz_targets
  targets=""
  for f in tests/fuzz/*_fuzz.cpp; do
    t="$(basename "$f" .cpp)"
    if [ -x "$BUILD_DIR/bin/$t" ]; then targets="$targets $t"; else echo "-- $t not built here, skipped"; fi
  done
fi

# Seeds: the golden inputs written for each reader (expected outputs excluded).
seeds_for() {
  case "$1" in
    swf_fuzz) ls "$GOLDEN"/*.swf 2>/dev/null ;;
    nextflow_fuzz) ls "$GOLDEN"/trace_*.csv "$GOLDEN"/trace_*.tsv 2>/dev/null ;;
    jsonl_fuzz) ls "$GOLDEN"/*.jsonl 2>/dev/null ;;
    sacct_fuzz) ls "$GOLDEN"/sacct_* 2>/dev/null ;;
    *) ls "$GOLDEN"/* 2>/dev/null ;;
  esac | grep -v '\.expected\.' || true
}

failed=""
mkdir -p "$BUILD_DIR/artifacts"
for t in $targets; do
  corpus="$BUILD_DIR/corpus/$t"
  mkdir -p "$corpus"
  for s in $(seeds_for "$t"); do cp -f "$s" "$corpus/"; done
  echo "== $t: ${SECONDS_PER_TARGET}s on $(ls "$corpus" | wc -l) corpus files"
  if ! ASAN_OPTIONS=detect_leaks=1 "$BUILD_DIR/bin/$t" "$corpus" \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$BUILD_DIR/artifacts/$t-" -print_final_stats=1 \
      >"$BUILD_DIR/artifacts/$t.log" 2>&1; then
    echo "!! $t failed; last lines of $BUILD_DIR/artifacts/$t.log:" >&2
    tail -n 40 "$BUILD_DIR/artifacts/$t.log" >&2
    failed="$failed $t"
  else
    grep -E '^stat::number_of_executed_units|^Done' "$BUILD_DIR/artifacts/$t.log" | tail -n 2 || true
  fi
done

if [ -n "$failed" ]; then
  echo "fuzz.sh: failures in:$failed" >&2
  exit 1
fi
echo "fuzz.sh: all targets ran ${SECONDS_PER_TARGET}s without a crash"
