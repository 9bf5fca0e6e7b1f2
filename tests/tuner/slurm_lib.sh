# slurm_lib.sh: a real single-node Slurm cluster for the tuner's Slurm tests (test_slurm_*.sh).
#
# Sourced after sweep_lib.sh. slurm_start writes a private configuration under $T/slurm (this
# host as the one node, CPUs=8, partition "gpu", two generic resources named gpu standing in
# for GPUs: /dev/null and /dev/zero as their device files), starts munged, slurmctld and slurmd
# from the Debian packages (scripts/setup.sh installs them) on free ports, and waits until the
# node is idle. Every Slurm command of the test (and of the tuner it runs) reaches this cluster
# through SLURM_CONF. The daemons are stopped when the test exits, however it exits: every
# job of the cluster is cancelled first, then the daemons get SIGTERM and, if they linger,
# SIGKILL. If the cluster does not come up the test fails and prints the daemons' logs: it
# never skips. Should the test be killed with SIGKILL, a watcher started with the daemons stops
# them once the test's shell is gone.
#
# Runs as root (CI) or as an ordinary user (the daemons then run as that user).

SLURM_DIR=$T/slurm
SLURM_PIDS=()

# slurm_logs: print every daemon log of the cluster to stderr.
slurm_logs() {
    local f
    for f in "$SLURM_DIR"/*.log "$SLURM_DIR"/*.out "$SLURM_DIR"/munge/log; do
        [ -f "$f" ] || continue
        echo "----- $f" >&2
        tail -n 60 "$f" >&2
    done
}

# slurm_fail MESSAGE: fail the test with the daemons' logs.
slurm_fail() {
    slurm_logs
    fail "$*"
}

# slurm_stop: cancel every job, then stop the daemons (idempotent).
slurm_stop() {
    local p i
    [ -z "${SLURM_WATCHDOG:-}" ] || kill -KILL "$SLURM_WATCHDOG" 2>/dev/null || true
    if [ ${#SLURM_PIDS[@]} -gt 0 ] && [ -n "${SLURM_CONF:-}" ]; then
        timeout 10 scancel --user "$(id -u)" >/dev/null 2>&1 || true
        for ((i = 0; i < 50; i++)); do
            [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    for p in "${SLURM_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for ((i = 0; i < 50; i++)); do
        local alive=0
        for p in "${SLURM_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.1
    done
    for p in "${SLURM_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    SLURM_PIDS=()
}
trap 'slurm_stop; cleanup' EXIT
# A signal ends the test through its EXIT trap too.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# slurm_watchdog: should the test be killed outright (SIGKILL, where no trap runs), a watcher
# cancels the jobs and stops the daemons once the test's shell is gone.
# Only processes whose command line names this cluster's folder are signalled.
slurm_watchdog() {
    local test_pid=$$ pids="${SLURM_PIDS[*]}"
    (
        trap '' HUP INT TERM
        while kill -0 "$test_pid" 2>/dev/null; do sleep 1; done
        timeout 10 scancel --user "$(id -u)" || true
        sleep 3
        for sig in TERM KILL; do
            for p in $pids; do
                grep -qF "$SLURM_DIR" "/proc/$p/cmdline" 2>/dev/null && kill -"$sig" "$p"
            done
            sleep 2
        done
    ) </dev/null >/dev/null 2>&1 &
    SLURM_WATCHDOG=$!
}

# free_port: a TCP port nobody listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# slurm_start: bring the cluster up (see the top of this file).
slurm_start() {
    local cmd
    for cmd in munged slurmctld slurmd srun sbatch squeue scancel sinfo scontrol; do
        command -v "$cmd" >/dev/null || fail "$cmd is missing: run scripts/setup.sh (Debian packages munge slurm-wlm)"
    done
    mkdir -p "$SLURM_DIR"/state "$SLURM_DIR"/spool "$SLURM_DIR"/munge
    chmod 755 "$SLURM_DIR"/munge
    head -c 1024 /dev/urandom >"$SLURM_DIR"/munge/munge.key
    chmod 600 "$SLURM_DIR"/munge/munge.key
    local sock=$SLURM_DIR/munge/sock
    munged --force --socket="$sock" --key-file="$SLURM_DIR"/munge/munge.key \
        --pid-file="$SLURM_DIR"/munge/pid --log-file="$SLURM_DIR"/munge/log \
        --seed-file="$SLURM_DIR"/munge/seed || slurm_fail "munged did not start"
    SLURM_PIDS+=("$(cat "$SLURM_DIR"/munge/pid)")

    local node user ctld_port d_port
    node=$(hostname)
    user=$(id -un)
    ctld_port=$(free_port)
    d_port=$(free_port)
    [ "$ctld_port" != "$d_port" ] || d_port=$(free_port)
    cat >"$SLURM_DIR"/slurm.conf <<EOF
ClusterName=tunertest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=300
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    cat >"$SLURM_DIR"/gres.conf <<EOF
NodeName=$node Name=gpu File=/dev/null
NodeName=$node Name=gpu File=/dev/zero
EOF
    export SLURM_CONF=$SLURM_DIR/slurm.conf
    # A test started from inside a Slurm job must not look like a step of it.
    unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST
    slurmctld -D -c -f "$SLURM_CONF" >"$SLURM_DIR"/slurmctld.out 2>&1 &
    SLURM_PIDS+=($!)
    slurmd -D -N "$node" -f "$SLURM_CONF" >"$SLURM_DIR"/slurmd.out 2>&1 &
    SLURM_PIDS+=($!)
    local i state=""
    for ((i = 0; i < 300; i++)); do
        state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
        case "$state" in idle*) break ;; esac
        case "$state" in drain* | inval* | down*)
            [ $i -gt 50 ] && slurm_fail "the node is $state: $(scontrol show node "$node" | grep -i reason)" ;;
        esac
        for p in "${SLURM_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || slurm_fail "a Slurm daemon exited (pid $p)"; done
        sleep 0.1
    done
    case "$state" in idle*) ;; *) slurm_fail "the Slurm node did not become idle in 30 s (state: '$state')" ;; esac
    SLURM_NODE=$node
    slurm_watchdog
}

# slurm_ctld_log: the controller's log.
slurm_ctld_log() { cat "$SLURM_DIR"/slurmctld.log; }

# slurm_wait_empty SECONDS: wait until squeue lists no job (completing ones included).
slurm_wait_empty() {
    local i
    for ((i = 0; i < $1 * 5; i++)); do
        [ -z "$(squeue -h -o %i)" ] && return 0
        sleep 0.2
    done
    squeue >&2
    fail "jobs still in the queue after $1 s"
}

# slurm_wait_jobs N SECONDS: wait until squeue lists at least N jobs; their "id name state"
# lines go into $SLURM_JOBS.
slurm_wait_jobs() {
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        SLURM_JOBS=$(squeue -h -o '%i %j %T')
        [ "$(printf '%s' "$SLURM_JOBS" | grep -c .)" -ge "$1" ] && return 0
        sleep 0.2
    done
    squeue >&2
    fail "fewer than $1 jobs in the queue after $2 s"
}
