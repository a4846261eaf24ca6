# Sourced by slurm_hook_test.sh with the real daemon, after its exact-script history holds alloc200
# and alloc400: the hook with LOWER_MEM_TO_RECOMMENDATION = true on slurmctld 22.05. Each job's
# recommendation is read from its own Comment (the daemon's answer); what Slurm did with the
# request is read from `scontrol show job` (MinMemoryNode / MinMemoryCPU, in Slurm's M = MiB) and,
# for the jobs that run, from sacct's ReqMem. Uses the helpers and partitions of slurm_hook_test.sh.

# The test's own copy of the installed hook, with the flag set. slurmctld reloads job_submit.lua
# when its mtime passes the one it last loaded (st_mtime, which earlier steps set ahead): so a
# newer mtime than both that and now.
# install_hook NAME FROM TO SRC OUT: OUT = SRC with its line FROM replaced by TO (checked), then
# installed as the hook slurmctld loads.
install_hook() {
  local name="$1" from="$2" to="$3" src="$4" out="$5" mtime
  sed "s/^$from\$/$to/" "$src" > "$out"
  if grep -qxF "$to" "$out"; then
    ok "$name: the test's hook copy sets '$to'"
  else
    bad "$name: no '$from' line in the hook to replace"
  fi
  mtime=$(( $(stat -c %Y "$hook_file") > $(date +%s) ? $(stat -c %Y "$hook_file") : $(date +%s) ))
  cp "$out" "$hook_file"
  touch -d "@$(( mtime + 2 ))" "$hook_file"
}
lowering_hook="$TEST_DIR/job_submit.lowering.lua"
install_hook lowering 'local LOWER_MEM_TO_RECOMMENDATION = false' 'local LOWER_MEM_TO_RECOMMENDATION = true' \
  "$TEST_DIR/job_submit.lua.orig" "$lowering_hook"

MIB=1048576
job_field() {  # job id, key -> the value scontrol shows (e.g. MinMemoryNode -> 384M)
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"
}
rec_of() {  # job id -> recommended_bytes from its Comment (empty when none)
  comment_of "$1" | tool jget predictions.mem.recommended_bytes 2>/dev/null
}
mib_up() { echo $(( ($1 + MIB - 1) / MIB )); }
# check_lowered NAME FIELD FLAG FROM WANT WHAT: the job's FIELD (MinMemoryNode / MinMemoryCPU) is
# WANT MiB (WHAT says what that is) and slurmctld.log says FLAG FROM -> WANT.
check_lowered() {
  local name="$1" field="$2" flag="$3" from="$4" want="$5" what="$6"
  check "$name: $field $(job_field "$lid" "$field") = $what ${want}M" \
    [ "$(job_field "$lid" "$field")" = "${want}M" ]
  check "$name: slurmctld.log says lowered $flag $from -> ${want}M" \
    grep -qF "peakcast: lowered $flag $from -> ${want}M (" "$SLURM_CLUSTER_DIR/log/slurmctld.log"
}
# lower_case NAME SCRIPT SBATCH_ARGS...: submits a copy of SCRIPT; sets lid (job id) and lrec
# (recommended bytes); returns 1 when sbatch refuses or there is no recommendation.
lower_case() {
  local name="$1" script="$2"; shift 2
  cp "$work/$script.sh" "$work/$name.sh"
  lid=""; lrec=""
  if ! submit "$name" "$@"; then bad "$name: sbatch $*: $sbatch_err"; return 1; fi
  lid=$job_id; jid[$name]=$job_id
  lrec=$(rec_of "$lid")
  if [ -z "$lrec" ]; then bad "$name: the daemon gave no recommended_bytes (Comment: $(comment_of "$lid"))"; return 1; fi
  echo "     $name (job $lid, sbatch $*): recommended_bytes $lrec ($(mib_up "$lrec") MiB," \
       "rule $(comment_of "$lid" | tool jget predictions.mem.recommendation_rule))"
}

# --mem above the recommendation, default partition (lowcap and cpucap exist, with lower limits
# that are not the job's): lowered to the recommendation, and the job runs with it.
if lower_case lower_mem alloc200 --mem=1000M -t 5; then
  want=$(mib_up "$lrec")
  check "lower_mem: setup: recommendation ${want} MiB is between the hook's floor 256 and the 1000M request" \
    [ "$want" -gt 256 -a "$want" -lt 1000 ]
  check_lowered lower_mem MinMemoryNode --mem 1000M "$want" "the recommendation"
  check "lower_mem: sbatch's stderr tells the user" grep -qF "memory request lowered to --mem=${want}M" "$work/lower_mem.sbatch.err"
  lower_mem_want=$want
fi

# A request below the recommendation (the sizing config allows one above the request): unchanged.
if lower_case lower_keep alloc200 --mem=300M -t 5 -H; then
  check "lower_keep: setup: recommendation $(mib_up "$lrec") MiB is above the 300M request" [ "$lrec" -gt $(( 300 * MIB )) ]
  check "lower_keep: MinMemoryNode $(job_field "$lid" MinMemoryNode) = 300M, never raised" \
    [ "$(job_field "$lid" MinMemoryNode)" = 300M ]
fi

# Partition lowcap, MaxMemPerNode=LOWCAP_MB below the recommendation: lowered to the limit (over it,
# Slurm 22.05 with EnforcePartLimits=NO would keep the job pending, Reason=MaxMemPerLimit).
if lower_case lower_lowcap alloc200 -p lowcap --mem=1000M -t 5; then
  check "lower_lowcap: setup: recommendation $(mib_up "$lrec") MiB is above MaxMemPerNode=$LOWCAP_MB" \
    [ "$(mib_up "$lrec")" -gt "$LOWCAP_MB" ]
  check "lower_lowcap: MinMemoryNode $(job_field "$lid" MinMemoryNode) = the partition's MaxMemPerNode ${LOWCAP_MB}M" \
    [ "$(job_field "$lid" MinMemoryNode)" = "${LOWCAP_MB}M" ]
fi

# Partition cpucap, MaxMemPerCPU=CPUCAP_MB, a --mem job on 2 CPUs: the per-CPU limit read as
# max_mem_per_cpu and applied per node (2 x CPUCAP_MB), so the job fits its own CPUs (over it,
# Slurm raises MinCPUsNode to memory / MaxMemPerCPU: 7 for 1000M, more than the node has).
if lower_case lower_cpucap alloc200 -p cpucap --mem=1000M -n 2 -t 5 -H; then
  cap=$(( 2 * CPUCAP_MB ))
  check "lower_cpucap: setup: recommendation $(mib_up "$lrec") MiB is above 2 x MaxMemPerCPU = $cap" \
    [ "$(mib_up "$lrec")" -gt "$cap" ]
  check "lower_cpucap: MinMemoryNode $(job_field "$lid" MinMemoryNode) = 2 x MaxMemPerCPU = ${cap}M" \
    [ "$(job_field "$lid" MinMemoryNode)" = "${cap}M" ]
  check "lower_cpucap: MinCPUsNode $(job_field "$lid" MinCPUsNode) <= the job's 2 CPUs (1000M would need 7)" \
    [ "$(job_field "$lid" MinCPUsNode)" -le 2 ]
fi

# --mem-per-cpu above the recommendation: lowered in its own form (recommendation / 2 CPUs), in the
# default partition and in one with MaxMemPerNode=UNLIMITED (which job_submit/lua shows as
# max_mem_per_cpu = 2^63 - 1: no limit).
for part in debug unlimited; do
  name="lower_cpu_$part"
  if lower_case "$name" alloc400 -p "$part" --mem-per-cpu=600M -n 2 -t 5 -H; then
    want=$(( (lrec + 2 * MIB - 1) / (2 * MIB) ))
    check "$name: setup: recommendation per CPU ${want} MiB is between 256 and the 600M request" \
      [ "$want" -gt 256 -a "$want" -lt 600 ]
    check_lowered "$name" MinMemoryCPU --mem-per-cpu 600M "$want" "recommendation / 2 CPUs ="
  fi
done

# --exclusive --mem-per-cpu: charged on every CPU of the node, more than the one it asks for
# (AllocTRES, what the history learns); the hook sends no request (memory_known), so the daemon
# recommends nothing and nothing is lowered. Before, it sent 600M, the daemon scaled alloc400's
# utilization by it, and the hook lowered --mem-per-cpu to that.
cp "$work/alloc400.sh" "$work/lower_excl.sh"
if submit lower_excl --exclusive --mem-per-cpu=600M -n 1 -t 5 -H; then
  jid[lower_excl]=$job_id
  check "lower_excl: --exclusive --mem-per-cpu not lowered (MinMemoryCPU $(job_field "$job_id" MinMemoryCPU) = 600M)" \
    [ "$(job_field "$job_id" MinMemoryCPU)" = 600M ]
  check "lower_excl: no recommendation on a request the hook cannot size ('$(rec_of "$job_id")')" [ -z "$(rec_of "$job_id")" ]
else
  bad "lower_excl: sbatch: $sbatch_err"
fi

# A staged roll-out: with LOWER_MEM_PARTITIONS = { lowcap = true } a job in the default partition
# is advised only and one in lowcap is lowered (partition names as part_list gives them).
install_hook scope 'local LOWER_MEM_PARTITIONS = nil' 'local LOWER_MEM_PARTITIONS = { lowcap = true }' \
  "$lowering_hook" "$TEST_DIR/job_submit.scoped.lua"
if lower_case scope_out alloc200 --mem=1000M -t 5 -H; then
  check "scope_out: the default partition is not listed: MinMemoryNode $(job_field "$lid" MinMemoryNode) = 1000M, advised only" \
    [ "$(job_field "$lid" MinMemoryNode)" = 1000M ]
fi
if lower_case scope_in alloc200 -p lowcap --mem=1000M -t 5 -H; then
  check "scope_in: lowcap is listed: MinMemoryNode $(job_field "$lid" MinMemoryNode) = its MaxMemPerNode ${LOWCAP_MB}M" \
    [ "$(job_field "$lid" MinMemoryNode)" = "${LOWCAP_MB}M" ]
fi

# A sweep: one script, one name (-J sweep overrides lower_case's), two requests, each lowered by
# the hook (to the recommendation, or lowcap's limit below it). Name, user, script and submit
# second cannot tell their answers apart; the answer id the hook wrote into each job's Comment
# does (checked in slurm_hook_test.sh once slurm-sync has learned them). Submitted last: their
# runs, learned, move the script's later recommendations.
declare -A sweep_ran=()
for m in 1000 800; do
  if lower_case "sweep_$m" alloc200 -p lowcap --mem=${m}M -J sweep -t 5; then
    sweep_ran[$m]="$(job_field "$lid" MinMemoryNode)"; sweep_ran[$m]="${sweep_ran[$m]%M}"
    check "sweep_$m: setup: lowered below the ${m}M request (MinMemoryNode ${sweep_ran[$m]}M)" \
      [ "${sweep_ran[$m]:-$m}" -lt "$m" ]
    check "sweep_$m: JobName $(job_field "$lid" JobName) = sweep" [ "$(job_field "$lid" JobName)" = sweep ]
    check "sweep_$m: Comment carries an answer_id" [ -n "$(comment_of "$lid" | tool jget answer_id 2>/dev/null)" ]
  fi
done

# The two that run: they end COMPLETED and accounting keeps the lowered request (wait_accounted:
# sacct's State and ReqMem are both set).
for name in lower_mem lower_lowcap; do
  id="${jid[$name]:-}"; [ -n "$id" ] || continue
  wait_accounted "$id" 30 || true
  rows="$(sacct_rows "$id")"
  state=$(echo "$rows" | awk -F'|' -v j="$id" '$1==j{print $2}')
  reqmem=$(echo "$rows" | awk -F'|' -v j="$id" '$1==j{print $3}')
  want=$([ "$name" = lower_mem ] && echo "${lower_mem_want:-?}" || echo "$LOWCAP_MB")
  check "$name: State $state = COMPLETED with the lowered request" [ "$state" = COMPLETED ]
  check "$name: sacct ReqMem $reqmem = ${want}M" [ "$reqmem" = "${want}M" ]
done
scancel "${jid[lower_keep]:-0}" "${jid[lower_cpucap]:-0}" "${jid[lower_cpu_debug]:-0}" \
  "${jid[lower_cpu_unlimited]:-0}" "${jid[scope_out]:-0}" "${jid[scope_in]:-0}" "${jid[lower_excl]:-0}" 2>/dev/null
