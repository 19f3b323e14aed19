#!/usr/bin/env bash
# A single-node Slurm cluster in a directory, for kloop's tests: munged, slurmctld and slurmd from
# Debian (munge, slurmctld, slurmd, slurm-client), run as root with their state, sockets and logs
# in DIR, and two fake GPUs (gres gpu, backed by /dev/null and /dev/zero) so `--gres=gpu:1` pins
# each task to one and Slurm sets CUDA_VISIBLE_DEVICES to 0 or 1.
#   single_node.sh start DIR   prints `export SLURM_CONF=DIR/slurm.conf` on success; exit 77
#                              (with the reason on stderr) when Slurm or munge is missing, this
#                              is not root, or the node does not come up idle within 30 s
#   single_node.sh stop DIR    stops the daemons
set -uo pipefail
cmd=${1:?start|stop}
dir=$(mkdir -p "${2:?DIR}" && cd "$2" && pwd -P)
skip() { echo "single_node.sh: $*" >&2; exit 77; }

stop() {
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null
  done
  sleep 1
  return 0
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: single_node.sh start|stop DIR" >&2; exit 2; }
for b in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b is not installed (apt-get install munge slurmctld slurmd slurm-client)"
done
[ "$(id -u)" = 0 ] || skip "the daemons run as root here; this is uid $(id -u)"
PATH=$PATH:/usr/sbin
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool"
head -c 1024 /dev/urandom > "$dir/munge.key" && chmod 400 "$dir/munge.key"
cat > "$dir/slurm.conf" <<CONF
ClusterName=kloop-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
GresTypes=gpu
NodeName=$host CPUs=$cpus Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
printf 'NodeName=%s Name=gpu File=/dev/null\nNodeName=%s Name=gpu File=/dev/zero\n' "$host" "$host" > "$dir/gres.conf"
export SLURM_CONF=$dir/slurm.conf
munged --key-file="$dir/munge.key" --socket="$dir/munge.socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" --force || skip "munged did not start ($dir/munged.log)"
slurmctld -f "$dir/slurm.conf" || { stop; skip "slurmctld did not start ($dir/slurmctld.log)"; }
sleep 1
slurmd -f "$dir/slurm.conf" || { stop; skip "slurmd did not start ($dir/slurmd.log)"; }
for _ in $(seq 30); do
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then echo "export SLURM_CONF=$dir/slurm.conf"; exit 0; fi
  sleep 1
done
state=$(sinfo -h -o %T 2>&1)
stop
skip "the node did not come up idle within 30 s (state: $state; see $dir/slurmctld.log)"
