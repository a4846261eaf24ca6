#!/usr/bin/env bash
# Integration test of the Slurm side of peakcast on a real single-host cluster (run as root):
#  - contrib/slurm/job_submit.lua puts the daemon's /v1/predict answer into each job's Comment;
#  - the request it sends, built from slurmctld's real job_desc, carries the right memory, CPUs,
#    GPUs, time and script (checked against the stand-in daemon, which logs what it receives; this
#    phase runs first whichever daemon the rest of the test uses);
#  - with the daemon down, slow, dribbling its answer, or answering garbage or 500, submissions
#    still succeed, unchanged (fail open); an internal error in the hook (injected into the
#    installed copy, which slurmctld reloads) also leaves the job accepted and logs why;
#  - afterwards sacct -P shows MaxRSS near the memory each job allocated, the Comment, and the
#    stored batch script (AccountingStoreFlags=job_script).
#  - with the real daemon (PEAKCASTD_BIN): after slurm-sync the resubmitted scripts are answered from
#    exact-script history, and with LOWER_MEM_TO_RECOMMENDATION on (the test installs its own copy
#    of the hook with the flag set) slurmctld's job records show --mem / --mem-per-cpu lowered to
#    recommended_bytes, a request below it unchanged, and the partition's MaxMemPerNode,
#    MaxMemPerCPU and UNLIMITED read as job_submit/lua 22.05 gives them (extra partitions lowcap,
#    cpucap and unlimited in slurm.conf); a job lowered before the daemon is killed (kill -9) and
#    completed after its restart is learned at its user's request; GPU jobs that ask for no
#    memory in gpudef (DefMemPerGPU) are learned at the memory they ran under and the hook sent
#    (sacct AllocTRES mem=), not at ReqMem's per-CPU default.
#
# Usage: tests/integration/slurm_hook_test.sh
# Environment:
#   PEAKCASTD_CMD  command that starts the daemon in the foreground, run with `bash -c "exec ..."`;
#                  it may use $PEAKCAST_SOCKET (where it must listen) and $TEST_DIR (a scratch
#                  folder). Default: the Lua stand-in tests/integration/standin_peakcastd.lua.
#                  Example: PEAKCASTD_CMD='build/apps/peakcastd/peakcastd --model models/m
#                           --db "$TEST_DIR/history.db" --socket "$PEAKCAST_SOCKET"'
#   PEAKCASTD_BIN  path to the real peakcastd: the test then writes a model directory (kind
#                  "history") and runs it with its own slurm-sync (--sync-interval 1), and also
#                  checks that after the jobs end the history holds their measured peaks and that
#                  a resubmission of the same script is answered from exact-script history
#                  (route bypass) with a value near the measured peak.
#   KEEP_DIR=1     keep the cluster folder even when everything passed (it is kept on failure)
# Prints "N passed, M failed" last; exits 1 when anything failed, 77 (skipped) when not root or
# when Slurm is not installed.
set -uo pipefail

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (the Slurm daemons run as SlurmUser=root)"; exit 77; fi
for b in slurmctld slurmd slurmdbd sbatch sacct munged mariadbd lua5.1; do
  command -v "$b" >/dev/null || { echo "SKIP: $b not installed (scripts/install-deps.sh slurm)"; exit 77; }
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cluster="$here/slurm_cluster.sh"
tool() { lua5.1 "$here/pc_tool.lua" "$@"; }

TEST_DIR="$(mktemp -d /tmp/peakcast-slurm-test.XXXXXX)"
PEAKCAST_SOCKET="$TEST_DIR/peakcastd.sock"
export TEST_DIR PEAKCAST_SOCKET
standin=0
real=0
if [ -z "${PEAKCASTD_CMD:-}" ] && [ -n "${PEAKCASTD_BIN:-}" ]; then
  real=1
  mkdir -p "$TEST_DIR/model"
  echo '{"format_version": 1, "kind": "history", "trained_on": "slurm_hook_test"}' > "$TEST_DIR/model/manifest.json"
  # Recommendations: upper bound x 1.1 + 128 MiB, rounded up to 32 MiB, at least 320 MiB (above
  # the hook's LOWER_MEM_MIN_MB and lowcap's limit), allowed above the request (so the hook's
  # "never raise" is what keeps a small request).
  cat > "$TEST_DIR/sizing.json" <<'EOF'
{"default": {"margin_fraction": 0.1, "margin_bytes": 134217728, "granularity_bytes": 33554432,
             "floor_bytes": 335544320, "allow_above_request": true}}
EOF
  PEAKCASTD_CMD="'$PEAKCASTD_BIN' --model \"\$TEST_DIR/model\" --db \"\$TEST_DIR/history.db\" --socket \"\$PEAKCAST_SOCKET\" --sizing-config \"\$TEST_DIR/sizing.json\" --sync-interval 1 --sync-lookback 3600 --sacct sacct -v"
fi
STANDIN_CMD="lua5.1 '$here/standin_peakcastd.lua' \"\$PEAKCAST_SOCKET\" \"\$TEST_DIR/requests.log\" \"\$TEST_DIR/mode\""
if [ -z "${PEAKCASTD_CMD:-}" ]; then
  standin=1
  PEAKCASTD_CMD="$STANDIN_CMD"
fi

passed=0
failed=0
ok()   { passed=$((passed + 1)); echo "PASS $*"; }
bad()  { failed=$((failed + 1)); echo "FAIL $*"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

daemon_pid=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; fi
  "$cluster" stop "$TEST_DIR/cluster"
  if [ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] && [ "${KEEP_DIR:-0}" != 1 ]; then
    rm -rf "$TEST_DIR"
  else
    echo "kept $TEST_DIR (cluster logs in $TEST_DIR/cluster/log, daemon log $TEST_DIR/daemon.log)"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && exit 0
  exit 1
}

start_daemon() {  # [command]: default $PEAKCASTD_CMD
  bash -c "exec ${1:-$PEAKCASTD_CMD}" >>"$TEST_DIR/daemon.log" 2>&1 </dev/null &
  daemon_pid=$!
  local i
  for i in $(seq 1 100); do
    if tool http "$PEAKCAST_SOCKET" GET /healthz 2>/dev/null | head -1 | grep -qx 200; then return 0; fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
stop_daemon() {
  [ -n "$daemon_pid" ] || return 0
  kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null
  daemon_pid=""
}
set_mode() { echo "$1" > "$TEST_DIR/mode"; }

# --- cluster and daemon ------------------------------------------------------------------------
t0=$(date +%s)
# Partitions for the lowering checks: a per-node and a per-CPU memory limit below the
# recommendations, and an explicit UNLIMITED (Slurm stores it as INFINITE64). deftime gives a job
# that asks for no time its DefaultTime, and one that asks for no memory its DefMemPerCPU (the
# request the hook sends must say so, as sacct will).
LOWCAP_MB=300
CPUCAP_MB=150
export SLURM_CONF_EXTRA="PartitionName=lowcap Nodes=ALL MaxMemPerNode=$LOWCAP_MB State=UP
PartitionName=cpucap Nodes=ALL MaxMemPerCPU=$CPUCAP_MB State=UP
PartitionName=unlimited Nodes=ALL MaxMemPerNode=UNLIMITED State=UP
PartitionName=deftime Nodes=ALL DefaultTime=30 MaxTime=120 DefMemPerCPU=300 State=UP
PartitionName=gpudef Nodes=ALL DefMemPerCPU=300 DefMemPerGPU=250 State=UP"
# gpudef's own DefMemPerGPU, which job_submit/lua does not show: the hook's copy of it.
export HOOK_PART_DEF_MEM_PER_GPU='{ gpudef = 250 }'
if ! PEAKCAST_SOCKET="$PEAKCAST_SOCKET" "$cluster" start "$TEST_DIR/cluster"; then
  bad "cluster starts"; finish
fi
ok "cluster starts ($(( $(date +%s) - t0 )) s)"
. "$TEST_DIR/cluster/env.sh"
work="$TEST_DIR/work"; mkdir -p "$work"
declare -A jid=()

# A job script that allocates and touches MIB mebibytes in one block, holds it 3 s, and prints it.
alloc_script() {  # name MIB
  cat > "$work/$1.sh" <<EOF
#!/bin/bash
perl -e 'my \$x = ""; vec(\$x, $2 * 1048576 - 1, 8) = 1; sleep 3; print length(\$x), "\n";'
EOF
}
# submit NAME SBATCH_ARGS... : sets job_id and sbatch_err; returns sbatch's status
submit() {
  local name="$1"; shift
  local out
  out=$(sbatch --parsable --chdir="$work" -o "$work/$name.out" -J "$name" "$@" "$work/$name.sh" 2>"$work/$name.sbatch.err")
  local rc=$?
  job_id="${out%%;*}"
  sbatch_err="$(cat "$work/$name.sbatch.err")"
  return $rc
}
comment_of() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *Comment=//p'; }
is_prediction() {  # JSON text: an object with predictions.mem
  [ -n "$1" ] && printf '%s' "$1" | tool jget predictions.mem >/dev/null
}
request_field() {  # job name, key: from the stand-in's request log
  grep -F "\"job_name\":\"$1\"" "$TEST_DIR/requests.log" | tail -1 | sed 's|^/v1/predict ||' | tool jget "$2"
}

# --- fail open ---------------------------------------------------------------------------------
cat > "$work/tiny.sh" <<'EOF'
#!/bin/bash
true
EOF
failopen_case() {  # label, text expected in the slurmctld.log line
  local name="tiny_$1" t1 t2
  cp "$work/tiny.sh" "$work/$name.sh"
  t1=$(date +%s%N)
  if submit "$name" --mem=100M; then
    t2=$(date +%s%N)
    ok "$1: submission accepted (job $job_id, sbatch took $(( (t2 - t1) / 1000000 )) ms)"
    check "$1: Comment left empty" [ -z "$(comment_of "$job_id")" ]
    check "$1: slurmctld.log says why ($2)" grep -qF "peakcast: no prediction ($2" "$SLURM_CLUSTER_DIR/log/slurmctld.log"
    jid[$name]=$job_id
  else
    bad "$1: submission refused: $sbatch_err"
  fi
}
# --- Slurm's real job_desc against the stand-in (always) ---------------------------------------
set_mode ok
if start_daemon "$STANDIN_CMD"; then ok "stand-in daemon answers /healthz"; else bad "stand-in answers /healthz (see $TEST_DIR/daemon.log)"; finish; fi
cp "$work/tiny.sh" "$work/map200.sh"
printf '#!/bin/bash\n# map400\ntrue\n' > "$work/map400.sh"
if submit map200 --mem=600M -t 5 --gres=gpu:1; then ok "sbatch map200 (job $job_id)"; jid[map200]=$job_id
else bad "sbatch map200: $sbatch_err"; fi
check "map200: Comment carries the stand-in's prediction" is_prediction "$(comment_of "${jid[map200]:-0}")"
if submit map400 --mem-per-cpu=400M -n 2 --gpus=2; then ok "sbatch map400 (job $job_id)"; jid[map400]=$job_id
else bad "sbatch map400: $sbatch_err"; fi
printf '#!/bin/bash\n# mapgpu\ntrue\n' > "$work/mapgpu.sh"
if submit mapgpu --mem-per-gpu=300M --gpus=2 -t 5; then ok "sbatch mapgpu (job $job_id)"
else bad "sbatch mapgpu: $sbatch_err"; fi
check "mapgpu: request req_mem_bytes = 2 x 300 MiB (--mem-per-gpu, as sacct's ReqMem)" \
  [ "$(request_field mapgpu req_mem_bytes)" = 629145600 ]
printf '#!/bin/bash\n# mapdeft\ntrue\n' > "$work/mapdeft.sh"
if submit mapdeft -p deftime --mem=100M; then ok "sbatch mapdeft (job $job_id)"
else bad "sbatch mapdeft: $sbatch_err"; fi
check "mapdeft: no -t: request req_time_s = the partition's DefaultTime (1800)" \
  [ "$(request_field mapdeft req_time_s)" = 1800 ]
printf '#!/bin/bash\n# mapdefm\ntrue\n' > "$work/mapdefm.sh"
if submit mapdefm -p deftime -n 2 -t 5; then ok "sbatch mapdefm (job $job_id)"
else bad "sbatch mapdefm: $sbatch_err"; fi
check "mapdefm: no --mem: request req_mem_bytes = DefMemPerCPU x 2 CPUs (600 MiB)" \
  [ "$(request_field mapdefm req_mem_bytes)" = 629145600 ]
# debug sets no default memory: slurmctld gives the job slurm.conf's global DefMemPerCPU=500,
# which the hook knows only as its SLURM_CONF_DEF_MEM_PER_CPU (slurm_cluster.sh sets both).
printf '#!/bin/bash\n# mapglob\ntrue\n' > "$work/mapglob.sh"
if submit mapglob -n 2 -t 5; then ok "sbatch mapglob (job $job_id)"; jid[mapglob]=$job_id
else bad "sbatch mapglob: $sbatch_err"; fi
check "mapglob: no --mem in debug: request req_mem_bytes = global DefMemPerCPU x 2 CPUs (1000 MiB)" \
  [ "$(request_field mapglob req_mem_bytes)" = 1048576000 ]
check "mapglob: slurmctld gave it the global default (MinMemoryCPU=500M)" \
  bash -c "scontrol show job '${jid[mapglob]:-0}' | grep -q 'MinMemoryCPU=500M'"
# A GPU job that asks for no memory in gpudef: slurmctld allocates it the partition's DefMemPerGPU
# x its GPUs, not its DefMemPerCPU x CPUs (600 MiB); the hook knows the partition's value only
# from its SLURM_CONF_PART_DEF_MEM_PER_GPU. While the job is pending scontrol's TRES (and later
# sacct's ReqTRES/ReqMem) still shows the DefMemPerCPU default it was given at submission; the
# allocation (TRES once started, sacct AllocTRES) shows 500M.
printf '#!/bin/bash\n# mapgdef\ntrue\n' > "$work/mapgdef.sh"
if submit mapgdef -p gpudef --gpus=2 -n 2 -t 5; then ok "sbatch mapgdef (job $job_id)"; jid[mapgdef]=$job_id
else bad "sbatch mapgdef: $sbatch_err"; fi
check "mapgdef: no --mem, 2 GPUs in gpudef: request req_mem_bytes = DefMemPerGPU 250 x 2 (500 MiB)" \
  [ "$(request_field mapgdef req_mem_bytes)" = 524288000 ]
for i in $(seq 1 120); do
  scontrol show job "${jid[mapgdef]:-0}" 2>/dev/null | grep -q 'JobState=PENDING' || break; sleep 0.5
done
check "mapgdef: slurmctld allocated it the same (scontrol TRES mem=500M once started)" \
  bash -c "scontrol show job '${jid[mapgdef]:-0}' | grep -Eq 'TRES=.*mem=500M'"
# Memory the request does not size (the hook's memory_known): --exclusive gets both CPUs of the
# node and is charged --mem-per-cpu on each; --mem=0 gets the node's whole memory (RealMemory).
# Their sacct AllocTRES, the request the history learns, is checked once they end. The hook sent
# 100M and the global DefMemPerCPU 500M for them: the daemon scaled utilizations learned on 200M
# and 2000M by those. Now it sends none.
printf '#!/bin/bash\n# mapexcl\ntrue\n' > "$work/mapexcl.sh"
if submit mapexcl --exclusive -n 1 --mem-per-cpu=100M -t 5; then ok "sbatch mapexcl (job $job_id)"; jid[mapexcl]=$job_id
else bad "sbatch mapexcl: $sbatch_err"; fi
check "mapexcl: --exclusive --mem-per-cpu: request sent (req_cpus $(request_field mapexcl req_cpus)) without req_mem_bytes" \
  [ "$(request_field mapexcl req_cpus)" = 1 -a -z "$(request_field mapexcl req_mem_bytes 2>/dev/null)" ]
# GPUs: --exclusive gives the job every GPU of its node too (AllocTRES gres/gpu=2 here, for
# --exclusive --gpus=1 and for --exclusive with no GPUs asked for), which job_submit/lua does not
# show. The hook sends the GPUs the request states (1, none), the count sacct's ReqTRES keeps and
# slurm-sync learns (checked once the jobs end): the VRAM capacity the history learns a share of
# is the one the daemon is asked about. (Until 2026-12-06 the reader took AllocTRES first: 2.)
printf '#!/bin/bash\n# mapxgpu\ntrue\n' > "$work/mapxgpu.sh"
if submit mapxgpu --exclusive --gpus=1 -n 1 -t 5; then ok "sbatch mapxgpu (job $job_id)"; jid[mapxgpu]=$job_id
else bad "sbatch mapxgpu: $sbatch_err"; fi
check "mapxgpu: --exclusive --gpus=1: request req_gpus = 1, the GPUs the request states" \
  [ "$(request_field mapxgpu req_gpus)" = 1 ]
check "mapexcl: --exclusive with no GPUs asked for: request sent without req_gpus" \
  [ -z "$(request_field mapexcl req_gpus 2>/dev/null)" ]
# --gpus-per-socket=1 needs --sockets-per-node (sbatch refuses it alone); ReqTRES counts it x the
# sockets per node x nodes (gres/gpu=2 here, on the node's 2 sockets: CPUs=2), though -n 1 runs on
# one socket's core and is allocated 1 (AllocTRES gres/gpu=1), its --mem-per-gpu charged on that
# one: the hook sends no memory. Until 2026-12-06 the hook sent 1 GPU (one socket a node). With
# -N 1 the same request stays pending (Resources) on this node. -B 1 with one CPU is on one socket:
# 1 GPU in ReqTRES and AllocTRES, and its --mem-per-gpu, which the hook sends.
printf '#!/bin/bash\n# mapsockgpu\ntrue\n' > "$work/mapsockgpu.sh"
if submit mapsockgpu --gpus-per-socket=1 --sockets-per-node=2 -n 1 --mem-per-gpu=100M -t 5; then
  ok "sbatch mapsockgpu (job $job_id)"; jid[mapsockgpu]=$job_id
else bad "sbatch mapsockgpu: $sbatch_err"; fi
check "mapsockgpu: --gpus-per-socket=1 --sockets-per-node=2: request req_gpus = 2, as ReqTRES counts it" \
  [ "$(request_field mapsockgpu req_gpus)" = 2 ]
check "mapsockgpu: --mem-per-gpu on GPUs the request does not fix: request sent without req_mem_bytes" \
  [ -z "$(request_field mapsockgpu req_mem_bytes 2>/dev/null)" ]
printf '#!/bin/bash\n# mapsock1\ntrue\n' > "$work/mapsock1.sh"
if submit mapsock1 --gpus-per-socket=1 --sockets-per-node=1 -n 1 --mem-per-gpu=100M -t 5; then
  ok "sbatch mapsock1 (job $job_id)"; jid[mapsock1]=$job_id
else bad "sbatch mapsock1: $sbatch_err"; fi
check "mapsock1: --gpus-per-socket=1 -B 1 -n 1 --mem-per-gpu=100M: request req_gpus = 1, req_mem_bytes = 100 MiB" \
  [ "$(request_field mapsock1 req_gpus)" = 1 -a "$(request_field mapsock1 req_mem_bytes)" = 104857600 ]
printf '#!/bin/bash\n# mapmem0\ntrue\n' > "$work/mapmem0.sh"
if submit mapmem0 --mem=0 -t 5; then ok "sbatch mapmem0 (job $job_id)"; jid[mapmem0]=$job_id
else bad "sbatch mapmem0: $sbatch_err"; fi
check "mapmem0: --mem=0: request sent without req_mem_bytes (not the 500M default)" \
  [ "$(request_field mapmem0 req_cpus)" = 1 -a -z "$(request_field mapmem0 req_mem_bytes 2>/dev/null)" ]
# --cpus-per-gpu=1 with 2 GPUs and no -n: 2 CPUs allocated (ReqCPUS 1), --mem-per-cpu charged on
# both; the hook counted 1 CPU and sent 100M.
printf '#!/bin/bash\n# mapcpg\ntrue\n' > "$work/mapcpg.sh"
if submit mapcpg --gpus=2 --cpus-per-gpu=1 --mem-per-cpu=100M -t 5; then ok "sbatch mapcpg (job $job_id)"; jid[mapcpg]=$job_id
else bad "sbatch mapcpg: $sbatch_err"; fi
check "mapcpg: --cpus-per-gpu --mem-per-cpu: request sent (req_cpus $(request_field mapcpg req_cpus)) without req_mem_bytes" \
  [ "$(request_field mapcpg req_cpus)" = 1 -a -z "$(request_field mapcpg req_mem_bytes 2>/dev/null)" ]
check "map200: request req_mem_bytes = 600 MiB" [ "$(request_field map200 req_mem_bytes)" = 629145600 ]
check "map200: request req_gpus = 1 (--gres=gpu:1)" [ "$(request_field map200 req_gpus)" = 1 ]
check "map200: request req_time_s = 300" [ "$(request_field map200 req_time_s)" = 300 ]
check "map200: request carries the script" bash -c "[ \"\$(grep -F '\"job_name\":\"map200\"' '$TEST_DIR/requests.log' | sed 's|^/v1/predict ||' | lua5.1 '$here/pc_tool.lua' jget script)\" = \"\$(cat '$work/map200.sh')\" ]"
check "map400: request req_mem_bytes = 2 x 400 MiB (--mem-per-cpu)" [ "$(request_field map400 req_mem_bytes)" = 838860800 ]
check "map400: request req_cpus = 2" [ "$(request_field map400 req_cpus)" = 2 ]
check "map400: request req_gpus = 2 (--gpus=2)" [ "$(request_field map400 req_gpus)" = 2 ]
check "map400: request user = $(id -un)" [ "$(request_field map400 user)" = "$(id -un)" ]
check "log_user shows the recommendation on sbatch stderr" grep -q "peakcast: predicted peak memory" "$work/map200.sbatch.err"
# The stand-in answers one request at a time, so the slow modes go last.
set_mode garbage; failopen_case garbage_answer "bad answer"
set_mode 500;     failopen_case http_500 "HTTP 500"
set_mode slow;    failopen_case slow_daemon "timeout"
sleep 1.2
set_mode drip;    failopen_case dripping_daemon "timeout"
sleep 1.3
set_mode ok
# An internal error in the hook: slurmctld reloads the changed job_submit.lua at the next
# submission; the catch-all accepts the job unchanged and logs the error.
hook_file="$SLURM_CLUSTER_DIR/etc/job_submit.lua"
cp "$hook_file" "$TEST_DIR/job_submit.lua.orig"
sed -i 's/^local function predict(d, submit_uid, part_list)$/&\n  error("peakcast test: injected failure")/' "$hook_file"
touch -d '+2 seconds' "$hook_file"
cp "$work/tiny.sh" "$work/tiny_injected.sh"
if submit tiny_injected --mem=100M; then
  ok "injected hook error: submission accepted (job $job_id)"
  jid[tiny_injected]=$job_id
  check "injected hook error: Comment left empty" [ -z "$(comment_of "$job_id")" ]
  check "injected hook error: slurmctld.log says why" grep -qF "peakcast: hook error (" "$SLURM_CLUSTER_DIR/log/slurmctld.log"
  check "injected hook error: the message names it" grep -qF "injected failure" "$SLURM_CLUSTER_DIR/log/slurmctld.log"
else
  bad "injected hook error: submission refused: $sbatch_err"
fi
cp "$TEST_DIR/job_submit.lua.orig" "$hook_file"
touch -d '+4 seconds' "$hook_file"
stop_daemon

# --- the daemon under test ---------------------------------------------------------------------
: > "$TEST_DIR/requests.log"
if start_daemon; then ok "daemon answers /healthz"; else bad "daemon answers /healthz (see $TEST_DIR/daemon.log)"; finish; fi

# --- predictions land in the comment -----------------------------------------------------------
declare -A mib=([alloc200]=200 [alloc400]=400)
declare -A reqmem_want=([alloc200]=600M [alloc400]=800M)
alloc_script alloc200 200
alloc_script alloc400 400
if submit alloc200 --mem=600M -t 5 --gres=gpu:1; then
  jid[alloc200]=$job_id; ok "sbatch alloc200 (job $job_id)"
else bad "sbatch alloc200: $sbatch_err"; fi
if submit alloc400 --mem-per-cpu=400M -n 2 --gpus=2; then
  jid[alloc400]=$job_id; ok "sbatch alloc400 (job $job_id)"
else bad "sbatch alloc400: $sbatch_err"; fi
# GPU jobs that ask for no memory in gpudef, as mapgdef above: they run with DefMemPerGPU 250 x 2
# GPUs = 500M (sacct's AllocTRES mem=), what the hook sends, while their ReqMem keeps DefMemPerCPU
# 300 x CPUs: 600M with -n 2, 300M with -n 1, below what was sent. slurm-sync learns AllocTRES.
declare -A gdef_reqmem=([mapgdef]=600M [gdef1]=300M [gdef2]=600M)
for n in gdef1 gdef2; do
  printf '#!/bin/bash\n# %s\ntrue\n' "$n" > "$work/$n.sh"
  if submit "$n" -p gpudef --gpus=2 -n "${n#gdef}" -t 5; then jid[$n]=$job_id; ok "sbatch $n (job $job_id)"
  else bad "sbatch $n: $sbatch_err"; fi
done
# A job named with '|', sacct -P's default delimiter: slurm-sync asks sacct for the unit
# separator and learns it like any other (its row could not be read before, and it was skipped).
if out=$(sbatch --parsable --chdir="$work" -o "$work/pipe_name.out" -J 'pipe|name' --mem=100M -t 5 "$work/tiny.sh" 2>"$work/pipe_name.sbatch.err"); then
  jid[tiny_pipe]="${out%%;*}"
else bad "sbatch -J 'pipe|name': $(cat "$work/pipe_name.sbatch.err")"; fi
# A job name holding a newline: sacct prints it as it is, splitting the job's row over two lines;
# the reader rejoins it (before, both pieces were skipped and the job never learned).
if out=$(sbatch --parsable --chdir="$work" -o "$work/nl_name.out" -J $'nl\nname' --mem=110M -t 5 "$work/tiny.sh" 2>"$work/nl_name.sbatch.err"); then
  jid[tiny_nl]="${out%%;*}"
else bad "sbatch -J \$'nl\\nname': $(cat "$work/nl_name.sbatch.err")"; fi
for n in alloc200 alloc400; do
  [ -n "${jid[$n]:-}" ] || continue
  c="$(comment_of "${jid[$n]}")"
  check "$n: Comment carries the prediction" is_prediction "$c"
  echo "     Comment=$c"
done

stop_daemon
failopen_case daemon_down "connect"
# The circuit breaker keeps its state in slurmctld's Lua state between submissions: the 3rd
# failure in a row says it stops asking, the 4th submission does not try (no line at all).
nolines() { grep -c "peakcast: no prediction" "$SLURM_CLUSTER_DIR/log/slurmctld.log"; }
before=$(nolines)
for k in 2 3 4; do
  cp "$work/tiny.sh" "$work/tiny_down$k.sh"
  if submit "tiny_down$k" --mem=100M; then jid[tiny_down$k]=$job_id; else bad "tiny_down$k refused: $sbatch_err"; fi
done
check "breaker: the 3rd failure in a row opens it" grep -qF "3 failures in a row: not asking the daemon" "$SLURM_CLUSTER_DIR/log/slurmctld.log"
check "breaker: the 4th submission does not ask the daemon ($(( $(nolines) - before )) lines for 3 submissions)" \
  [ $(( $(nolines) - before )) -eq 2 ]
touch -d '+6 seconds' "$hook_file"  # slurmctld reloads the hook: a closed breaker for what follows

# --- accounting after the jobs end -------------------------------------------------------------
deadline=$(( $(date +%s) + 90 ))
while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 1; done
check "all jobs ended within 90 s" [ -z "$(squeue -h -o %i)" ]
sacct_rows() {  # job id -> sacct -P rows: JobID|State|ReqMem|MaxRSS|Comment (bytes)
  sacct -P -n --noconvert -j "$1" --format=JobID,State,ReqMem,MaxRSS,Comment 2>/dev/null
}
# slurmctld sends the end record to slurmdbd asynchronously, and slurmdbd takes a job's records
# one by one: a row can read COMPLETED while its ReqMem is still unset (sacct prints NO_VAL64,
# 18446744073709551616.00M). wait_accounted ID SECONDS: until the job's row has both, or SECONDS.
wait_accounted() {
  local i
  for i in $(seq 1 $(( $2 * 2 ))); do
    sacct_rows "$1" | awk -F'|' -v j="$1" \
      '$1==j && $2=="COMPLETED" && $3!="" && $3!~/^18446744073709551/{f=1} END{exit !f}' && return 0
    sleep 0.5
  done
  return 1
}
for n in "${!jid[@]}"; do wait_accounted "${jid[$n]}" 20 || true; done
for n in alloc200 alloc400; do
  id="${jid[$n]:-}"; [ -n "$id" ] || continue
  rows="$(sacct_rows "$id")"
  echo "$rows" | sed 's/^/     /'
  state=$(echo "$rows" | awk -F'|' -v j="$id" '$1==j{print $2}')
  peak=$(echo "$rows" | awk -F'|' '$4 ~ /^[0-9]+$/ && $4+0 > m {m = $4+0} END{printf "%d", m}')
  want=$(( ${mib[$n]} * 1048576 ))
  reqmem=$(echo "$rows" | awk -F'|' -v j="$id" '$1==j{print $3}')
  check "$n: State COMPLETED" [ "$state" = COMPLETED ]
  check "$n: request unchanged by the hook (ReqMem $reqmem = ${reqmem_want[$n]})" [ "$reqmem" = "${reqmem_want[$n]}" ]
  check "$n: MaxRSS $peak within [0.9, 1.0 + 64 MiB] of $want" \
    [ "$peak" -ge $(( want * 9 / 10 )) -a "$peak" -le $(( want + 64 * 1048576 )) ]
  acct_comment=$(echo "$rows" | awk -F'|' -v j="$id" '$1==j{sub(/^[^|]*\|[^|]*\|[^|]*\|[^|]*\|/, ""); print}')
  check "$n: sacct Comment carries the prediction" is_prediction "$acct_comment"
  check "$n: sacct -B returns the stored script" bash -c "sacct -B -j $id | grep -qF 'vec(\$x, ${mib[$n]} * 1048576'"
done
gdef_row_is() {  # job id, ReqMem: its job row is COMPLETED, that ReqMem, AllocTRES mem=500M
  local row
  row=$(sacct -P -n -X --noconvert -j "$1" --format=State,ReqMem,AllocTRES 2>/dev/null)
  echo "     $row"
  [[ "$row" == "COMPLETED|$2|"*"mem=500M"* ]]
}
for n in mapgdef gdef1 gdef2; do
  id="${jid[$n]:-}"; [ -n "$id" ] || continue
  check "$n: ran with DefMemPerGPU x 2 GPUs (AllocTRES mem=500M), ReqMem the per-CPU default ${gdef_reqmem[$n]}" \
    gdef_row_is "$id" "${gdef_reqmem[$n]}"
done
alloc_row_is() {  # job id, text: its job row is COMPLETED and its AllocTRES holds the text
  local row
  row=$(sacct -P -n -X --noconvert -j "$1" --format=State,AllocTRES 2>/dev/null)
  echo "     $row"
  [[ "$row" == "COMPLETED|"*"$2"* ]]
}
check "mapexcl: --exclusive -n 1 --mem-per-cpu=100M is charged on both CPUs (AllocTRES cpu=2,...,mem=200M)" \
  alloc_row_is "${jid[mapexcl]:-0}" "cpu=2,gres/gpu=2,mem=200M"
tres_gpus() { printf '%s' "$1" | tr ',' '\n' | sed -n 's|^gres/gpu=||p'; }  # TRES -> gres/gpu count
gpus_row_is() {  # job id, ReqTRES GPUs, AllocTRES GPUs ("" = none): its COMPLETED job row says so
  local row state req alloc
  row=$(sacct -P -n -X --noconvert -j "$1" --format=State,ReqTRES,AllocTRES 2>/dev/null)
  echo "     $row"
  IFS='|' read -r state req alloc <<< "$row"
  [ "$state" = COMPLETED ] && [ "$(tres_gpus "$req")" = "$2" ] && [ "$(tres_gpus "$alloc")" = "$3" ]
}
check "mapxgpu: --exclusive --gpus=1 is allocated both GPUs of the node (ReqTRES gres/gpu=1, AllocTRES gres/gpu=2)" \
  gpus_row_is "${jid[mapxgpu]:-0}" 1 2
check "mapexcl: --exclusive with no GPUs asked for is allocated both (ReqTRES none, AllocTRES gres/gpu=2)" \
  gpus_row_is "${jid[mapexcl]:-0}" "" 2
check "mapsockgpu: --gpus-per-socket=1 --sockets-per-node=2 -n 1: ReqTRES gres/gpu=2, AllocTRES gres/gpu=1" \
  gpus_row_is "${jid[mapsockgpu]:-0}" 2 1
check "mapsockgpu: --mem-per-gpu=100M is charged on the 1 GPU allocated (AllocTRES gres/gpu=1,mem=100M)" \
  alloc_row_is "${jid[mapsockgpu]:-0}" "gres/gpu=1,mem=100M"
check "mapsock1: --gpus-per-socket=1 -B 1 -n 1: ReqTRES gres/gpu=1, AllocTRES gres/gpu=1" \
  gpus_row_is "${jid[mapsock1]:-0}" 1 1
check "mapsock1: --mem-per-gpu=100M on its 1 GPU (AllocTRES gres/gpu=1,mem=100M), what the hook sent" \
  alloc_row_is "${jid[mapsock1]:-0}" "gres/gpu=1,mem=100M"
check "mapmem0: --mem=0 gets the node's whole memory (AllocTRES mem=2000M)" alloc_row_is "${jid[mapmem0]:-0}" "mem=2000M"
check "mapcpg: --gpus=2 --cpus-per-gpu=1 --mem-per-cpu=100M is charged on 2 CPUs (AllocTRES cpu=2,...,mem=200M)" \
  alloc_row_is "${jid[mapcpg]:-0}" "cpu=2,gres/gpu=2,mem=200M"
for n in "${!jid[@]}"; do
  case "$n" in tiny_*) ;; *) continue ;; esac
  state=$(sacct_rows "${jid[$n]}" | awk -F'|' -v j="${jid[$n]}" '$1==j{print $2}')
  check "$n: State COMPLETED" [ "$state" = COMPLETED ]
done

# --- the real daemon: history from slurm-sync, exact-script answers -----------------------------
if [ "$real" = 1 ]; then
  in_range() { [ -n "$1" ] && [ "$1" -gt 0 ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
  if start_daemon; then ok "daemon restarts on its database"; else bad "daemon restarts (see $TEST_DIR/daemon.log)"; fi
  history_field() {  # job id, field -> the field of the daemon's history record of it (empty if none)
    local body i id
    body="$(tool http "$PEAKCAST_SOCKET" GET "/v1/history?user=$(id -un)" | tail -n +2)"
    for i in $(seq 1 50); do
      id=$(printf '%s' "$body" | tool jget "jobs.$i.job_id") || break
      if [ "$id" = "$1" ]; then printf '%s' "$body" | tool jget "jobs.$i.$2" 2>/dev/null; return; fi
    done
  }
  history_peak() { history_field "$1" peak_mem_bytes; }  # job id -> its peak in the history
  for n in alloc200 alloc400; do
    id="${jid[$n]:-}"; [ -n "$id" ] || continue
    got=""
    for i in $(seq 1 60); do got="$(history_peak "$id")"; [ -n "$got" ] && break; sleep 0.5; done
    want=$(( ${mib[$n]} * 1048576 ))
    check "$n: after slurm-sync the history holds its peak ($got B, allocated $want B)" \
      in_range "$got" $(( want * 9 / 10 )) $(( want + 64 * 1048576 ))
    eval "peak_$n=\${got:-0}"
  done
  id="${jid[tiny_pipe]:-}"
  if [ -n "$id" ]; then
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    check "a job named 'pipe|name' is learned by slurm-sync (req_mem_bytes $got = 100M)" [ "$got" = $(( 100 * 1048576 )) ]
  fi
  id="${jid[tiny_nl]:-}"
  if [ -n "$id" ]; then
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    check "a job named with a newline is learned by slurm-sync (req_mem_bytes $got = 110M)" [ "$got" = $(( 110 * 1048576 )) ]
  fi
  # The gpudef jobs are learned at the memory they ran under, the 500M the hook sends (mapgdef's
  # request above), not at ReqMem: gdef1's 300M, below the request the daemon answered, was taken
  # for a job whose request the hook had lowered (stored at 500M, "ran at" 300M), gdef2 and
  # mapgdef were stored at 600M.
  for n in mapgdef gdef1 gdef2; do
    id="${jid[$n]:-}"; [ -n "$id" ] || continue
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    ran="$(history_field "$id" ran_mem_bytes)"
    check "$n: learned at the 500M it ran under and the hook sent ($got B), not as lowered (ran_mem_bytes '${ran}')" \
      [ "$got" = $(( 500 * 1048576 )) -a -z "$ran" ]
  done
  # The GPU count slurm-sync learns is the one the hook sent for the same submission (the requests
  # checked above): the request's, not the node's every GPU --exclusive allocated (AllocTRES
  # gres/gpu=2), so the VRAM capacity a share is learned of is the one the daemon is asked about.
  declare -A gpus_sent=([mapxgpu]=1 [mapexcl]="" [map200]=1 [mapsockgpu]=2 [mapsock1]=1)
  for n in mapxgpu mapexcl map200 mapsockgpu mapsock1; do
    id="${jid[$n]:-}"; [ -n "$id" ] || continue
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" state)"; [ -n "$got" ] && break; sleep 0.5; done
    gpus="$(history_field "$id" req_gpus)"
    check "$n: learned with the GPUs the hook sent (req_gpus '${gpus}' = '${gpus_sent[$n]}')" \
      [ -n "$got" -a "$gpus" = "${gpus_sent[$n]}" ]
  done
  got="$(history_field "${jid[mapsock1]:-0}" req_mem_bytes)"
  check "mapsock1: learned at the 100M it ran under and the hook sent (req_mem_bytes '${got}')" [ "$got" = 104857600 ]
  cp "$work/alloc200.sh" "$work/alloc200_again.sh"
  if submit alloc200_again --mem=600M -t 5; then
    c="$(comment_of "$job_id")"
    echo "     Comment=$c"
    route=$(printf '%s' "$c" | tool jget predictions.mem.route)
    level=$(printf '%s' "$c" | tool jget predictions.mem.history_level)
    bytes=$(printf '%s' "$c" | tool jget predictions.mem.bytes)
    check "resubmission answered from exact-script history (route $route, level $level)" \
      [ "$route" = bypass -a "$level" = exact_script ]
    check "resubmission's prediction $bytes B is within 5% of the measured peak $peak_alloc200 B" \
      in_range "$bytes" $(( peak_alloc200 * 95 / 100 )) $(( peak_alloc200 * 105 / 100 ))
  else
    bad "sbatch alloc200_again: $sbatch_err"
  fi
  # --exclusive --mem-per-cpu=300M -n 1: charged on both CPUs, learned at AllocTRES mem=600M. Its
  # resubmission was sent 300M and answered that utilization x 300M, about half the peak the job
  # had used; now it is sent no request, so the answer has no bytes to be wrong by.
  alloc_script xexcl 250
  if submit xexcl --exclusive -n 1 --mem-per-cpu=300M -t 5; then ok "sbatch xexcl (job $job_id)"; jid[xexcl]=$job_id
  else bad "sbatch xexcl: $sbatch_err"; fi
  wait_accounted "${jid[xexcl]:-0}" 30 || true
  got=""; learned=""
  for i in $(seq 1 60); do got="$(history_peak "${jid[xexcl]:-0}")"; [ -n "$got" ] && break; sleep 0.5; done
  learned="$(history_field "${jid[xexcl]:-0}" req_mem_bytes)"
  check "xexcl: learned at the 600M it was charged (req_mem_bytes $learned), peak $got B" \
    [ "$learned" = $(( 600 * 1048576 )) -a -n "$got" ]
  cp "$work/xexcl.sh" "$work/xexcl_again.sh"
  if submit xexcl_again --exclusive -n 1 --mem-per-cpu=300M -t 5 -H; then
    jid[xexcl_again]=$job_id
    c="$(comment_of "$job_id")"
    echo "     Comment=$c"
    bytes=$(printf '%s' "$c" | tool jget predictions.mem.bytes 2>/dev/null)
    level=$(printf '%s' "$c" | tool jget predictions.mem.history_level 2>/dev/null)
    check "xexcl_again: no predicted bytes below the measured peak ${got:-?} B (bytes '${bytes}', level $level)" \
      [ -z "$bytes" -o "${bytes:-0}" -ge "${got:-0}" ]
    scancel "$job_id" 2>/dev/null
  else
    bad "sbatch xexcl_again: $sbatch_err"
  fi
  m="$(tool http "$PEAKCAST_SOCKET" GET /metrics | tail -n +2)"
  check "/metrics counts a bypass prediction" bash -c "printf '%s' \"\$1\" | grep -q '^peakcast_predictions_total{resource=\"mem\",route=\"bypass\"} [1-9]'" _ "$m"
  . "$here/slurm_hook_lowering.sh"
  # The jobs the hook asked about complete; slurm-sync learns them from sacct, and the daemon
  # judges each by the bound it answered at the submission (matched by user, script and submit
  # time: the hook's clock against slurmctld's Submit; docs/bounds.md).
  judged=""
  for i in $(seq 1 60); do
    judged="$(tool http "$PEAKCAST_SOCKET" GET /healthz | tail -n +2 | tool jget sizing.learned_from.issued 2>/dev/null)"
    [ "${judged:-0}" -ge 3 ] 2>/dev/null && break
    sleep 0.5
  done
  check "slurm-sync's completions are judged by the hook's answers (sizing.learned_from.issued $judged)" \
    [ "${judged:-0}" -ge 3 ]
  # The job run at its lowered --mem is learned at its user's request (1000M), with the limit it
  # ran under beside it: its utilization is a share of what its user asks for.
  id="${jid[lower_mem]:-}"
  if [ -n "$id" ] && [ -n "${lower_mem_want:-}" ]; then
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    ran="$(history_field "$id" ran_mem_bytes)"
    check "lower_mem: the daemon learned it at the request it answered ($got B = 1000M), ran at ${ran} B = ${lower_mem_want}M" \
      [ "$got" = $(( 1000 * 1048576 )) -a "$ran" = $(( lower_mem_want * 1048576 )) ]
  fi
  # lower_lowcap ran at lowcap's limit, below its recommendation; lower_keep, of the same script
  # and user, was submitted in the same second (sacct's Submit has whole seconds) and asked for
  # that limit itself. The answers are told apart by the job's name: lower_lowcap is learned at
  # its user's 1000M. (Matched by time and recommendation alone it took lower_keep's answer, was
  # learned at 300M, and the script's next recommendation rose above 1000M.)
  id="${jid[lower_lowcap]:-}"
  if [ -n "$id" ]; then
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    ran="$(history_field "$id" ran_mem_bytes)"
    check "lower_lowcap: learned at its user's request ($got B = 1000M), ran at ${ran} B = ${LOWCAP_MB}M" \
      [ "$got" = $(( 1000 * 1048576 )) -a "$ran" = $(( LOWCAP_MB * 1048576 )) ]
  fi
  # The sweep (slurm_hook_lowering.sh): each job learned at its own request, matched to its own
  # answer by the id in its Comment (sacct's Comment column, read by slurm-sync).
  for m in 1000 800; do
    id="${jid[sweep_$m]:-}"; [ -n "$id" ] || continue
    got=""
    for i in $(seq 1 60); do got="$(history_field "$id" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    ran="$(history_field "$id" ran_mem_bytes)"
    check "sweep_$m: learned at its user's request ($got B = ${m}M), ran at ${ran} B = ${sweep_ran[$m]:-?}M" \
      [ "$got" = $(( m * 1048576 )) -a "$ran" = $(( ${sweep_ran[$m]:-0} * 1048576 )) ]
    aid="$(comment_of "$id" | tool jget answer_id 2>/dev/null)"
    [ -n "$aid" ] || aid="$(sacct -n -P -X -j "$id" --format=Comment 2>/dev/null | tool jget answer_id 2>/dev/null)"
    got="$(history_field "$id" answer_id)"
    check "sweep_$m: stored with its Comment's answer_id ($got = $aid)" [ -n "$aid" -a "$got" = "$aid" ]
  done
  # A job the hook lowered before the daemon was killed, run and completed after its restart: still
  # learned at its user's request (the daemon keeps its answers in the database). The hook is the
  # staged one now (lowcap listed).
  # Its script's runs so far (lower_mem and lower_lowcap learned above, at 1000M) put the
  # recommendation below the request. Were it not, the hook would not lower it and it could not run
  # in lowcap: a failure, and the job is cancelled.
  if lower_case restart_low alloc200 -p lowcap --mem=1000M -t 5 -H && [ "$lrec" -ge $(( 1000 * MIB )) ]; then
    bad "restart_low: setup: recommendation $(mib_up "$lrec") MiB is not below the 1000M request: not lowered"
    scancel "$lid" 2>/dev/null
  elif [ -n "$lrec" ]; then
    check "restart_low: setup: MinMemoryNode $(job_field "$lid" MinMemoryNode) = ${LOWCAP_MB}M" \
      [ "$(job_field "$lid" MinMemoryNode)" = "${LOWCAP_MB}M" ]
    kill -9 "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; daemon_pid=""
    if start_daemon; then ok "restart_low: the daemon starts again after kill -9"; else bad "restart_low: no restart (see $TEST_DIR/daemon.log)"; fi
    scontrol release "$lid"
    wait_accounted "$lid" 60 || true
    got=""
    for i in $(seq 1 60); do got="$(history_field "$lid" req_mem_bytes)"; [ -n "$got" ] && break; sleep 0.5; done
    ran="$(history_field "$lid" ran_mem_bytes)"
    check "restart_low: lowered to ${LOWCAP_MB}M before the daemon was killed, learned after its restart at 1000M ($got B, ran at $ran B)" \
      [ "$got" = $(( 1000 * 1048576 )) -a "$ran" = $(( LOWCAP_MB * 1048576 )) ]
  fi
  stop_daemon
fi
echo "elapsed $(( $(date +%s) - t0 )) s"
finish
