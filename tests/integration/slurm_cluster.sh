#!/usr/bin/env bash
# A real single-host Slurm 22.05 cluster inside one directory, for integration tests (run as root,
# no systemd): munged, MariaDB, slurmdbd, slurmctld and slurmd, all on loopback and free ports, all
# state, sockets and logs under DIR. See docs/slurm-cluster-pitfalls.md.
#
# Usage:
#   slurm_cluster.sh start DIR   create DIR (must be empty or absent), write configs, start
#                                everything, wait until the node is idle; then `. DIR/env.sh`
#   slurm_cluster.sh stop DIR    cancel jobs, stop every daemon and kill any process left holding
#                                DIR (job steps, job processes); idempotent, DIR is kept
#   slurm_cluster.sh logs DIR    print the tail of every log
# Environment for `start`:
#   JOB_SUBMIT_LUA   hook to install next to slurm.conf (default: contrib/slurm/job_submit.lua)
#   PEAKCAST_SOCKET  socket path written into the hook's SOCKET_PATH (default: DIR/peakcastd.sock)
#   START_TIMEOUT_S  bound on each wait (default 60)
#   SLURM_CONF_EXTRA lines appended to slurm.conf, e.g. more partitions (the generated one is
#                    "debug", Default=YES, no memory limit)
#   HOOK_PART_DEF_MEM_PER_GPU  Lua table written into the hook's SLURM_CONF_PART_DEF_MEM_PER_GPU,
#                    e.g. '{ gpudef = 250 }' for a partition in SLURM_CONF_EXTRA with DefMemPerGPU=250
# Needs: scripts/install-deps.sh slurm (slurm-wlm, slurmdbd, munge, mariadb-server, lua5.1, lua-socket, lua-cjson).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
timeout_s="${START_TIMEOUT_S:-60}"

say() { echo "slurm_cluster: $*" >&2; }

show_logs() {
  local f
  say "logs are in $dir/log:"
  for f in "$dir"/log/*.log; do
    [ -f "$f" ] || continue
    echo "----- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2
  done
}

die() {
  say "ERROR: $*"; show_logs
  if [ "$cmd" = start ]; then say "stopping what was started"; stop; fi
  exit 1
}

# A TCP port nothing listens on (loopback), not in $used_ports.
used_ports=""
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    case " $used_ports " in *" $p "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      used_ports="$used_ports $p"
      echo "$p"
      return 0
    fi
  done
  return 1
}

# wait_until DESC CMD...: polls CMD every 0.5 s until it succeeds or timeout_s passes.
wait_until() {
  local desc="$1"; shift
  local deadline=$(( $(date +%s) + timeout_s ))
  while ! "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then die "timed out after ${timeout_s}s waiting for $desc"; fi
    sleep 0.5
  done
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Records a started daemon: name and pid, in start order.
record() { echo "$1 $2" >> "$dir/run/pids"; }

# ----------------------------------------------------------------------------------------------
start() {
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then die "$dir exists and is not empty"; fi
  [ "$(id -u)" -eq 0 ] || { say "must run as root (the daemons run as SlurmUser=root)"; exit 1; }
  local b
  for b in munged mungekey mariadbd mariadb-install-db mariadb slurmdbd slurmctld slurmd sbatch sacct sacctmgr lua5.1; do
    command -v "$b" >/dev/null || { say "missing $b: run scripts/install-deps.sh slurm"; exit 1; }
  done
  mkdir -p "$dir"/{etc,munge,mysql,state/ctld,state/d,log,run,gpu,work}
  chmod 755 "$dir" "$dir/munge"
  : > "$dir/run/pids"
  local lua="${JOB_SUBMIT_LUA:-$repo/contrib/slurm/job_submit.lua}"
  local psock="${PEAKCAST_SOCKET:-$dir/peakcastd.sock}"
  local def_mem_per_cpu=500  # slurm.conf's global DefMemPerCPU, and the hook's copy of it
  local msock="$dir/munge/munge.socket"
  local myport dbdport ctldport dport
  myport=$(free_port) && dbdport=$(free_port) && ctldport=$(free_port) && dport=$(free_port) \
    || die "no free loopback port"
  local dbpass
  dbpass="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

  # munge
  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 || die "mungekey failed"
  chmod 600 "$dir/munge/munge.key"
  munged --force --socket="$msock" --key-file="$dir/munge/munge.key" \
    --log-file="$dir/log/munged.log" --pid-file="$dir/run/munged.pid" \
    --seed-file="$dir/munge/munged.seed" >>"$dir/log/munged.log" 2>&1 || die "munged failed to start"
  record munged "$(cat "$dir/run/munged.pid" 2>/dev/null)"
  wait_until "munge" bash -c "munge -S '$msock' -n | unmunge -S '$msock'"

  # MariaDB: datadir under DIR, TCP on 127.0.0.1 only (slurmdbd has no socket option).
  mariadb-install-db --no-defaults --user=root --datadir="$dir/mysql/data" \
    --auth-root-authentication-method=socket --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 \
    || die "mariadb-install-db failed"
  mariadbd --no-defaults --user=root --datadir="$dir/mysql/data" --socket="$dir/mysql/mysqld.sock" \
    --port="$myport" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$dir/run/mariadbd.pid" \
    --log-error="$dir/log/mariadbd.log" --innodb-buffer-pool-size=128M --innodb-log-file-size=64M \
    --innodb-lock-wait-timeout=900 --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
    --max-allowed-packet=64M </dev/null >>"$dir/log/mariadbd.log" 2>&1 &
  record mariadbd $!
  wait_until "MariaDB" mariadb-admin --no-defaults --socket="$dir/mysql/mysqld.sock" -uroot ping
  mariadb --no-defaults --socket="$dir/mysql/mysqld.sock" -uroot -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$dbpass';
     GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" || die "creating the slurm DB user failed"

  # Configs. job_submit.lua must sit next to slurm.conf.
  : > "$dir/gpu/nvidia0"; : > "$dir/gpu/nvidia1"
  cat > "$dir/etc/slurm.conf" <<EOF
ClusterName=peakcasttest
SlurmctldHost=localhost
SlurmctldPort=$ctldport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$msock
StateSaveLocation=$dir/state/ctld
SlurmdSpoolDir=$dir/state/d
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbdport
AccountingStoragePass=$msock
AccountingStoreFlags=job_script,job_comment
AccountingStorageTRES=gres/gpu
GresTypes=gpu
JobCompType=jobcomp/none
JobSubmitPlugins=lua
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$def_mem_per_cpu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
NodeName=localhost CPUs=2 RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  if [ -n "${SLURM_CONF_EXTRA:-}" ]; then printf '%s\n' "$SLURM_CONF_EXTRA" >> "$dir/etc/slurm.conf"; fi
  cat > "$dir/etc/gres.conf" <<EOF
NodeName=localhost Name=gpu File=$dir/gpu/nvidia[0-1]
EOF
  cat > "$dir/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$msock
DbdHost=localhost
DbdPort=$dbdport
SlurmUser=root
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/run/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$myport
StorageUser=slurm
StoragePass=$dbpass
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$dir/etc/slurmdbd.conf"
  [ -f "$lua" ] || die "no hook at $lua"
  sed -e "s|^local SOCKET_PATH = .*|local SOCKET_PATH = \"$psock\"|" \
      -e "s|^local SLURM_CONF_DEF_MEM_PER_CPU = .*|local SLURM_CONF_DEF_MEM_PER_CPU = $def_mem_per_cpu|" \
      -e "s|^local SLURM_CONF_PART_DEF_MEM_PER_GPU = .*|local SLURM_CONF_PART_DEF_MEM_PER_GPU = ${HOOK_PART_DEF_MEM_PER_GPU:-nil}|" \
      "$lua" > "$dir/etc/job_submit.lua"
  cat > "$dir/env.sh" <<EOF
export SLURM_CONF=$dir/etc/slurm.conf
export SLURM_CLUSTER_DIR=$dir
export PEAKCAST_SOCKET=$psock
EOF
  export SLURM_CONF="$dir/etc/slurm.conf"

  slurmdbd -D >>"$dir/log/slurmdbd.stderr.log" 2>&1 </dev/null &
  record slurmdbd $!
  wait_until "slurmdbd" sacctmgr -n list cluster
  slurmctld -D -i >>"$dir/log/slurmctld.stderr.log" 2>&1 </dev/null &
  record slurmctld $!
  wait_until "slurmctld" bash -c "scontrol ping | grep -q UP"
  slurmd -D -N localhost >>"$dir/log/slurmd.stderr.log" 2>&1 </dev/null &
  record slurmd $!
  wait_until "the node to be idle" bash -c "sinfo -h -n localhost -o %T | grep -qx idle"
  say "up in $dir (. $dir/env.sh)"
}

# ----------------------------------------------------------------------------------------------
# PIDs of processes (other than this shell, its subshell and its ancestors) whose cwd, exe, open
# files or command line name something in DIR: job steps, job processes, a daemon started on DIR.
holders() {
  local p ancestors=" $BASHPID "
  p=$$
  while [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != 1 ]; do
    ancestors="$ancestors$p "
    p=$(awk '/^PPid:/{print $2}' "/proc/$p/status" 2>/dev/null)
  done
  {
    find /proc/[0-9]*/cwd /proc/[0-9]*/exe /proc/[0-9]*/fd -maxdepth 1 -lname "$dir/*" 2>/dev/null \
      | cut -d/ -f3
    local f args
    for f in /proc/[0-9]*/cmdline; do  # builtins only: a grep would match its own command line
      mapfile -d '' -t args < "$f" 2>/dev/null || continue
      case "${args[*]}" in *"$dir/"*) f=${f#/proc/}; echo "${f%/cmdline}" ;; esac
    done
  } | sort -u | while read -r p; do
    case "$ancestors" in *" $p "*) ;; *) echo "$p" ;; esac
  done
}

stop_pid() {  # name pid: TERM, wait up to 10 s, KILL
  local name="$1" pid="$2" i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 50); do alive "$pid" || return 0; sleep 0.2; done
  say "$name ($pid) ignored TERM; killing"
  kill -KILL "$pid" 2>/dev/null
}

stop() {
  [ -d "$dir" ] || return 0
  export SLURM_CONF="$dir/etc/slurm.conf"
  local name pid
  if [ -f "$dir/run/pids" ]; then
    pid=$(awk '$1=="slurmctld"{print $2}' "$dir/run/pids")
    if alive "$pid"; then timeout 10 scancel --user=root >/dev/null 2>&1 || true; fi
    # Reverse start order: slurmd, slurmctld, slurmdbd, mariadbd, munged.
    tac "$dir/run/pids" | while read -r name pid; do stop_pid "$name" "$pid"; done
  fi
  # Anything left holding DIR: slurmstepd, job processes, a stand-in daemon...
  local left
  left=$(holders)
  if [ -n "$left" ]; then
    kill -KILL $left 2>/dev/null
    sleep 0.5
  fi
  : > "$dir/run/pids" 2>/dev/null || true
  return 0
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  logs) show_logs ;;
  *) say "unknown command $cmd"; exit 2 ;;
esac
