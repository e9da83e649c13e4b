#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for trying the SLURM profiles for real.
#
#   sudo scripts/slurm-localhost.sh          # start (idempotent: a running cluster is kept)
#   sudo scripts/slurm-localhost.sh status   # sinfo
#   sudo scripts/slurm-localhost.sh stop     # stop the daemons this script started (by PID), remove its config
#
# Needs root and Debian's slurm-wlm and munge (scripts/install-services.sh installs them).
# Exit status 2 means "cannot run here" (not root, packages missing); the message says why.
#
# What it builds (no accounting, like many small clusters):
#   * munge with the package's key (one is created if missing);
#   * /etc/slurm/slurm.conf: one node (this host, 127.0.0.1) with all its CPUs and ~90 % of
#     its memory; partitions `cpu` (default) and `gpu`; AccountingStorageType=none, so
#     `sacct` does not work and the executor must poll with `squeue`
#     (profiles/*/config.yaml: slurm-status-command: squeue) -- which is only reliable when
#     finished jobs stay visible, hence MinJobAge=600 (the plugin falls back to sacct when
#     MinJobAge is below ~120 s);
#   * GRES gpu declared on the node *without real GPUs*: SLURM 22.05 counts a gpu GRES only
#     through device files (gres.conf `Count=` alone registers 0 and drains the node), so
#     FAKE_GPUS character devices aliasing /dev/null (major 1, minor 3) are made under
#     $SLURM_LOCAL_DIR/fakegpu* and listed as `File=`.  SLURM then accepts and schedules
#     `--gpus=N`/`--gres=gpu:N` jobs in the gpu partition (CUDA_VISIBLE_DEVICES is set to
#     an index, but there is no GPU behind it): enough to test routing and submission, not
#     to run vLLM.  Where mknod is not allowed the node gets no GPUs (FAKE_GPUS=0 forces it).
#   * slurmctld and slurmd run as root with proctrack/linuxproc and task/none (no cgroups,
#     which containers often lack); state, logs and PID files under $SLURM_LOCAL_DIR
#     (default /var/lib/slurm-localhost).
set -uo pipefail

DIR=${SLURM_LOCAL_DIR:-/var/lib/slurm-localhost}
CONF_DIR=/etc/slurm
FAKE_GPUS=${FAKE_GPUS:-2}
cmd=${1:-start}

die_cannot() { echo "slurm-localhost: cannot run: $*" >&2; exit 2; }
die() { echo "slurm-localhost: $*" >&2; exit 1; }

MARK="# Written by judgelab scripts/slurm-localhost.sh"
# a config file this script wrote (older versions wrote gres.conf without the mark)
ours() { [ -f "$1" ] && grep -q -e "^$MARK" -e "File=$DIR/fakegpu" "$1"; }
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
    for f in "$DIR/slurmd.pid" "$DIR/slurmctld.pid"; do
        if pid_alive "$f"; then
            pid=$(cat "$f")
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        fi
        rm -f "$f"
    done
    if pid_alive "$DIR/munged.pid"; then
        kill "$(cat "$DIR/munged.pid")"
    fi
    rm -f "$DIR/munged.pid"
    # Our config goes too: with a slurm.conf naming a controller that is gone, every SLURM
    # client call waits ~10 s for it -- and snakemake's SLURM plugin runs `scontrol show
    # config` at every snakemake start, even a local one.  Without a config it fails at once.
    for f in "$CONF_DIR/slurm.conf" "$CONF_DIR/gres.conf"; do
        ours "$f" && rm -f "$f"
    done
    echo "slurm-localhost: stopped"
}

case "$cmd" in
    stop) stop; exit 0 ;;
    status) exec sinfo ;;
    start) ;;
    *) die "usage: $0 [start|stop|status]" ;;
esac

[ "$(id -u)" -eq 0 ] || die_cannot "needs root (slurmd and munged are system daemons)"
for b in slurmctld slurmd munged sbatch squeue scontrol; do
    command -v "$b" >/dev/null 2>&1 || die_cannot "$b not found (apt-get install slurm-wlm munge, or scripts/install-services.sh)"
done

mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$CONF_DIR"
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)

if [ "$FAKE_GPUS" -gt 0 ]; then
    for i in $(seq 0 $((FAKE_GPUS - 1))); do
        dev="$DIR/fakegpu$i"
        [ -c "$dev" ] || { rm -f "$dev"; mknod "$dev" c 1 3 2>/dev/null; } || {
            echo "slurm-localhost: mknod not allowed here; the node gets no GPUs" >&2; FAKE_GPUS=0; break; }
    done
fi
conf=$(cat <<EOF
$MARK: a one-node cluster without accounting.
ClusterName=judgelab-localhost
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=600
SlurmdTimeout=300
InactiveLimit=0
KillWait=5
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem_mb} $( [ "$FAKE_GPUS" -gt 0 ] && echo "Gres=gpu:${FAKE_GPUS}" ) State=UNKNOWN
PartitionName=cpu Nodes=${host} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=${host} MaxTime=INFINITE State=UP
EOF
)
gres="$MARK
NodeName=${host} Name=gpu File=$DIR/fakegpu[0-$((FAKE_GPUS - 1))]"

if pid_alive "$DIR/slurmctld.pid" && pid_alive "$DIR/slurmd.pid" && [ "$(cat "$CONF_DIR/slurm.conf" 2>/dev/null)" = "$conf" ]; then
    echo "slurm-localhost: already running"
    sinfo
    exit 0
fi
for f in "$CONF_DIR/slurm.conf" "$CONF_DIR/gres.conf"; do  # never overwrite a real cluster's config
    [ -s "$f" ] && ! ours "$f" && die_cannot "$f exists and was not written by this script"
done
stop >/dev/null

printf '%s\n' "$conf" >"$CONF_DIR/slurm.conf"
if [ "$FAKE_GPUS" -gt 0 ]; then printf '%s\n' "$gres" >"$CONF_DIR/gres.conf"; else rm -f "$CONF_DIR/gres.conf"; fi

# munge: the package's key, or a new one; the daemon runs as the munge user.
if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- munged --pid-file="$DIR/munged.pid.tmp" 2>&1 || die "munged failed to start"
    cp "$DIR/munged.pid.tmp" "$DIR/munged.pid" 2>/dev/null || pgrep -n -u munge munged >"$DIR/munged.pid"
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null 2>&1 || die "munge does not work (see /var/log/munge/munged.log)"

slurmctld -i || die "slurmctld failed (see $DIR/log/slurmctld.log)"
slurmd || die "slurmd failed (see $DIR/log/slurmd.log)"

for _ in $(seq 100); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
    case "$state" in idle*|mix*|alloc*) break ;; esac
    sleep 0.3
done
if ! sinfo -h -N -o %t 2>/dev/null | grep -qE "idle|mix|alloc"; then
    scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1
    sleep 1
fi
sinfo -h -N -o %t | grep -qE "idle|mix|alloc" || { tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" >&2; die "the node did not come up"; }
echo "slurm-localhost: up (config $CONF_DIR/slurm.conf, logs $DIR/log)"
sinfo
