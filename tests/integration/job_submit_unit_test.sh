#!/usr/bin/env bash
# Unit test of contrib/slurm/job_submit.lua without Slurm: lua5.1, lua-socket and lua-cjson, a stub
# `slurm` table and the stand-in daemon (tests/integration/standin_peakcastd.lua). About 2 s, no root.
# Usage: tests/integration/job_submit_unit_test.sh   (prints "N passed, M failed"; exit 1 on failure)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
d="$(mktemp -d /tmp/peakcast-lua-test.XXXXXX)"
echo ok > "$d/mode"
lua5.1 "$here/standin_peakcastd.lua" "$d/s.sock" "$d/requests.log" "$d/mode" 2>"$d/standin.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
for i in $(seq 1 50); do [ -S "$d/s.sock" ] && break; sleep 0.1; done
lua5.1 "$here/job_submit_unit_test.lua" "$here/../../contrib/slurm/job_submit.lua" "$d/s.sock" "$d/mode"
