#!/usr/bin/env bash
# test-local.sh: runs scripts/slurm/reproduce.sbatch on a real Slurm, a
# one-node cluster started on this machine for the test (`make test-slurm`).
#
#  1. Installs Debian's slurmctld, slurmd, slurm-client and munge when
#     missing (scripts/install-deps.sh slurm; as root or with sudo).
#  2. Starts munged (its own key and socket), slurmctld and slurmd without
#     systemd, from a slurm.conf of its own (SLURM_CONF) whose state, spool,
#     log and pid files all lie in one temporary directory; /etc/slurm and
#     /etc/munge are never read or written. The node is `hostname -s` with
#     nproc CPUs; ProctrackType=proctrack/linuxproc, TaskPlugin=task/none
#     (no cgroups needed); ports are picked free.
#  3. Submits the array job (4 tasks) over a tiny synthetic grid (CG, AP and
#     SGD cold and warm, and the exact reference), then, as soon as a job
#     has checkpointed a step, stops one task with `scancel --signal=TERM`
#     (SIGTERM to the job step) and requeues it with `scontrol requeue`,
#     and sends another the time-limit warning the script asks for
#     (`scancel --batch --signal=USR1`), on which it stops gpnb and
#     requeues itself.
#  4. Asserts: every array task completed; the two interrupted ones
#     restarted once, their gpnb stopped by SIGTERM at a checkpoint (not
#     killed); every job finished exactly once (the tasks' logs);
#     no step ran twice (each job's runs.json segments meet end to start;
#     the interrupted jobs have two); `gpnb reproduce --status` lists the
#     stopped job as started at its step while it waits; and `gpnb table`
#     equals that of a single-process run of the same grid in every column
#     that is not a wall-clock time.
#  5. Stops what it started (by pid) and deletes its directory, also on
#     failure, after printing the daemons' logs and the tasks' output.
#
# Usage: scripts/slurm/test-local.sh    (GPNB=path/to/gpnb to skip the build)
# Needs root (it re-runs itself with sudo when it can) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		exec sudo -E env "PATH=$PATH" "$0" "$@"
	fi
	echo "test-local.sh: slurmd must run as root: run this as root or install sudo" >&2
	exit 1
fi

T0=$(date +%s)
say() { printf '==> [%3ds] %s\n' "$(($(date +%s) - T0))" "$*"; }
fail() {
	printf '\ntest-local.sh: FAILED: %s\n' "$*" >&2
	exit 1
}

say "Slurm packages"
scripts/install-deps.sh slurm

if [ -z "${GPNB:-}" ]; then
	say "building bin/gpnb"
	make --no-print-directory build >/dev/null
	GPNB=$ROOT/bin/gpnb
fi
GPNB=$(cd "$(dirname "$GPNB")" && pwd)/$(basename "$GPNB")
[ -x "$GPNB" ] || fail "$GPNB is not an executable"

T=$(mktemp -d /tmp/gpnb-slurm-test.XXXXXX)
chmod 755 "$T"
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/tasks"
chmod 700 "$T/munge"
export SLURM_CONF=$T/slurm.conf
OUT=$T/out REF=$T/ref

# --- cleanup: by pid, also on failure ---------------------------------------

# ours lists the live processes of this test's cluster: the daemons and the
# jobs are started with MARK in their environment, which slurmstepd (forked
# by slurmd) and the tasks (given sbatch's environment) inherit; this shell
# does not export it, so its own children are not listed.
MARK="GPNB_SLURM_TEST=$T"
ours() {
	local e p
	for e in /proc/[0-9]*/environ; do
		p=${e#/proc/}
		p=${p%/environ}
		grep -qsaF "$MARK" "$e" 2>/dev/null && alive "$p" && echo "$p"
	done
	return 0
}
# alive: the process exists and is not a zombie (a daemon whose parent does
# not reap it stays one).
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
stop_pid() { # stop_pid PID: TERM, then KILL after 5 s
	local p=$1 i
	alive "$p" || return 0
	kill -TERM "$p" 2>/dev/null || return 0
	for i in $(seq 50); do
		alive "$p" || return 0
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null || true
}
pidof_file() { if [ -s "$1" ]; then cat "$1"; fi; }

diagnostics() {
	local f
	echo "---------- diagnostics ($T) ----------"
	for f in "$T"/log/*.log "$T"/tasks/*; do
		[ -f "$f" ] || continue
		echo "----- $f (last 60 lines)"
		tail -n 60 "$f"
	done
	if [ -n "${JOB:-}" ]; then
		echo "----- scontrol show job $JOB"
		scontrol show job "$JOB" 2>&1 | grep -E 'JobId|JobState|Restarts|ExitCode|Reason' || true
	fi
	if [ -f "$OUT/shards.json" ]; then
		echo "----- gpnb reproduce --status"
		"$GPNB" reproduce --status --out "$OUT" 2>&1
	fi
}

cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	set +e # stop everything, whatever fails on the way
	[ "$rc" -eq 0 ] || diagnostics
	if [ -n "${JOB:-}" ] && [ -n "$(pidof_file "$T/slurmctld.pid")" ]; then
		scancel "$JOB" 2>/dev/null || true
	fi
	for p in $(pidof_file "$T/slurmd.pid") $(pidof_file "$T/slurmctld.pid"); do stop_pid "$p"; done
	for p in $(ours); do stop_pid "$p"; done
	stop_pid "$(pidof_file "$T/munge/munged.pid")"
	left=$(ours)
	[ -z "$left" ] || echo "test-local.sh: processes still running: $left" >&2
	rm -rf "$T"
	say "stopped the daemons, removed $T"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the cluster ------------------------------------------------------------

say "munged"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
SOCK=$T/munge/munge.socket
# --force: munged refuses to run as root without it.
env "$MARK" munged --force --key-file="$T/munge/munge.key" --socket="$SOCK" --pid-file="$T/munge/munged.pid" \
	--log-file="$T/log/munged.log" --seed-file="$T/munge/munged.seed"
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
munge -n -S "$SOCK" | unmunge -S "$SOCK" >/dev/null || fail "munge cannot encode and decode a credential"

free_port() { # a port nothing listens on, with the next one free too
	local p i
	for i in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	fail "no free port found"
}
PORT=$(free_port)
HOST=$(hostname -s 2>/dev/null || uname -n | cut -d. -f1)
CPUS=$(nproc)
MEM=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)

cat >"$SLURM_CONF" <<EOF
# One-node test cluster of scripts/slurm/test-local.sh.
ClusterName=gpnbtest
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=10
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
# Four tasks share the CPUs: every shard runs at once.
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF

say "slurmctld and slurmd (node $HOST, $CPUS CPUs, ports $PORT-$((PORT + 1)))"
env "$MARK" slurmctld -f "$SLURM_CONF"
env "$MARK" slurmd -f "$SLURM_CONF" -N "$HOST"
for i in $(seq 100); do
	state=$(sinfo -h -N -o %T 2>/dev/null || true)
	[ "$state" = idle ] && break
	[ "$i" -lt 100 ] || fail "the node did not come up (sinfo: '$state')"
	sleep 0.2
done

# --- the grid -----------------------------------------------------------------

STEPS=20
GRID_ARGS=(--datasets synthetic-500-3-1 --splits 0 --steps "$STEPS" --probes 8 --block-size 100 --batch-size 100)
GRID="${GRID_ARGS[*]}" # reproduce.sbatch's GRID
NJOBS=7 # CG, AP, SGD cold and warm, and the exact reference

say "sbatch --array=0-3 reproduce.sbatch"
JOB=$(env "$MARK" OUT="$OUT" GRID="$GRID" GPNB="$GPNB" sbatch --parsable --array=0-3 --cpus-per-task=1 --mem=1G --time=10 \
	--output="$T/tasks/%A_%a.out" --chdir="$T" scripts/slurm/reproduce.sbatch)
JOB=${JOB%%;*}

task_state() { scontrol show job "$1" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -1 | cut -d= -f2; }
task_field() { scontrol show job "$1" -o 2>/dev/null | grep -o "$2=[^ ]*" | head -1 | cut -d= -f2; }

# The task that runs a job: its lock names it ("task": "slurm job J_K").
lock_task() { sed -n 's/.*"task": *"slurm job \([0-9_]*\)".*/\1/p' "$1/lock" 2>/dev/null; }

# stopped_job TASK: the job TASK stopped in, the one with a checkpoint whose
# lock names TASK (a finished job has neither).
stopped_job() {
	local ck d
	for ck in "$OUT"/jobs/*/checkpoint; do
		d=$(dirname "$ck")
		[ -f "$ck" ] && [ "$(lock_task "$d")" = "$1" ] && { basename "$d"; return; }
	done
	fail "task $1 stopped in no job: no checkpoint's lock names it (did it finish before the signal?)"
}

# Wait for two tasks, each in the middle of a job with a checkpoint.
say "waiting for two tasks to checkpoint a step"
TERM_TASK='' USR1_TASK='' TERM_JOB='' USR1_JOB=''
for i in $(seq 1200); do
	for ck in "$OUT"/jobs/*/checkpoint; do
		[ -f "$ck" ] || continue
		d=$(dirname "$ck")
		tk=$(lock_task "$d")
		[ -n "$tk" ] || continue
		if [ -z "$TERM_TASK" ]; then
			TERM_TASK=$tk TERM_JOB=$(basename "$d")
			scancel --signal=TERM "$TERM_TASK"
			say "scancel --signal=TERM $TERM_TASK (running $TERM_JOB)"
		elif [ -z "$USR1_TASK" ] && [ "$tk" != "$TERM_TASK" ]; then
			USR1_TASK=$tk USR1_JOB=$(basename "$d")
			scancel --batch --signal=USR1 "$USR1_TASK"
			say "scancel --batch --signal=USR1 $USR1_TASK (running $USR1_JOB)"
		fi
	done
	[ -n "$USR1_TASK" ] && break
	[ "$i" -lt 1200 ] || fail "no two tasks checkpointed a job within 60 s"
	if [ $((i % 20)) = 0 ] && [ -z "$(squeue -h -j "$JOB" -t PENDING,RUNNING,CONFIGURING 2>/dev/null)" ]; then
		fail "the array job ended before two of its tasks checkpointed a job"
	fi
	sleep 0.05
done

# The TERM'd task fails (gpnb exits 1 after checkpointing); while it waits,
# --status shows its job started at the step it reached.
for i in $(seq 300); do
	s=$(task_state "$TERM_TASK")
	case $s in FAILED | COMPLETED | CANCELLED) break ;; esac
	[ "$i" -lt 300 ] || fail "task $TERM_TASK still $s 30 s after SIGTERM"
	sleep 0.1
done
[ "$s" = FAILED ] || fail "task $TERM_TASK ended $s after SIGTERM; want FAILED (gpnb interrupted)"
TERM_JOB=$(stopped_job "$TERM_TASK")
grep -q "stopped at its last checkpoint" "$T/tasks/$TERM_TASK.out" || fail "task $TERM_TASK's gpnb did not say it stopped at a checkpoint"
[ -f "$OUT/jobs/$TERM_JOB/checkpoint" ] || fail "$TERM_JOB has no checkpoint after SIGTERM"
STATUS=$("$GPNB" reproduce --status --out "$OUT")
echo "$STATUS" | grep -E "^  $TERM_JOB +started: checkpoint at step [0-9]+/$STEPS" ||
	fail "--status does not show $TERM_JOB as started:"$'\n'"$STATUS"

say "scontrol requeue $TERM_TASK"
scontrol requeue "$TERM_TASK"
# A requeued task waits about two minutes before it is eligible; start both
# requeued tasks now.
for tk in "$TERM_TASK" "$USR1_TASK"; do
	for i in $(seq 300); do
		[ "$(task_field "$tk" Restarts)" = 1 ] && [ "$(task_state "$tk")" = PENDING ] && break
		[ "$i" -lt 300 ] || fail "task $tk was not requeued (state $(task_state "$tk"), restarts $(task_field "$tk" Restarts))"
		sleep 0.1
	done
	if [ "$tk" = "$USR1_TASK" ]; then USR1_JOB=$(stopped_job "$USR1_TASK"); fi
	scontrol update JobId="$tk" StartTime=now
done

say "waiting for the array to finish"
for i in $(seq 1200); do
	[ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ] && break
	[ "$i" -lt 1200 ] || fail "the array job did not finish within 2 minutes"
	sleep 0.1
done

# --- the checks ---------------------------------------------------------------

for k in 0 1 2 3; do
	s=$(task_state "${JOB}_$k")
	r=$(task_field "${JOB}_$k" Restarts)
	e=$(task_field "${JOB}_$k" ExitCode)
	want=0
	if [ "${JOB}_$k" = "$TERM_TASK" ] || [ "${JOB}_$k" = "$USR1_TASK" ]; then want=1; fi
	if [ "$s" != COMPLETED ] || [ "$e" != 0:0 ] || [ "$r" != "$want" ]; then
		fail "task ${JOB}_$k: state $s, exit code $e, restarts $r; want COMPLETED, 0:0, $want"
	fi
done
grep -q "requeueing task $USR1_TASK" "$T/tasks/$USR1_TASK.out" || fail "task $USR1_TASK did not requeue itself on USR1"
# Its gpnb was stopped by SIGTERM, not killed: it wrote its checkpoint and
# said so (srun, signalled instead of the step, would kill it at once).
grep -q "stopped at its last checkpoint" "$T/tasks/$USR1_TASK.out" || fail "task $USR1_TASK's gpnb did not say it stopped at a checkpoint after USR1 (killed instead?)"
say "tasks: 4 completed; $TERM_TASK (SIGTERM, scontrol requeue) and $USR1_TASK (USR1, requeued itself) restarted once"

"$GPNB" reproduce "${GRID_ARGS[@]}" --dry-run --out "$OUT" | tail -1 | grep -q "^$NJOBS jobs in $OUT: $NJOBS done, 0 started, 0 not started" ||
	fail "not every job is done: $("$GPNB" reproduce "${GRID_ARGS[@]}" --dry-run --out "$OUT")"
"$GPNB" reproduce --status --out "$OUT" | tail -1

say "single-process run of the same grid"
"$GPNB" reproduce "${GRID_ARGS[@]}" --out "$REF" >/dev/null 2>"$T/log/reference.log" || fail "reference run: $(tail "$T/log/reference.log")"
"$GPNB" table --in "$OUT" --format csv --unit s >"$T/table-slurm.csv"
"$GPNB" table --in "$REF" --format csv --unit s >"$T/table-ref.csv"

python3 - "$OUT" "$T/tasks" "$T/table-slurm.csv" "$T/table-ref.csv" "$STEPS" "$TERM_JOB" "$USR1_JOB" <<'EOF'
import csv, glob, io, json, os, sys

out, tasks, slurm_csv, ref_csv, steps, term_job, usr1_job = sys.argv[1:]
steps = int(steps)
bad = []

# Every job finished exactly once, in one of the tasks' logs.
logs = "".join(open(f).read() for f in glob.glob(os.path.join(tasks, "*.out")))
jobs = sorted(os.listdir(os.path.join(out, "jobs")))
for j in jobs:
    n = logs.count(f" {j}: done in ")
    if n != 1:
        bad.append(f"{j} finished {n} times in the tasks' logs")

# No step ran twice: the segments of runs.json meet end to start, 0 to steps.
for j in jobs:
    segs = json.load(open(os.path.join(out, "jobs", j, "runs.json")))
    spans = [(s["from_step"], s["to_step"]) for s in segs]
    ok = spans and spans[0][0] == 0 and spans[-1][1] == steps and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    if not ok:
        bad.append(f"{j}: segments {spans} do not cover 0-{steps} once")
    if j in (term_job, usr1_job) and not (len(spans) == 2 and 0 < spans[1][0] < steps):
        bad.append(f"{j} was interrupted: want two segments 0-k, k-{steps} with 0 < k < {steps}, got {spans}")
    print(f"  {j:34s} segments {spans}")

# The tables agree in every column that is not a wall-clock time.
def table(path):
    rows = []
    for part in open(path).read().strip().split("\n\n"):
        recs = list(csv.reader(io.StringIO(part)))
        keep = [i for i, h in enumerate(recs[0]) if "runtime" not in h.lower() and "speed-up" not in h.lower()]
        rows += [[r[i] for i in keep] for r in recs]
    return rows
a, b = table(slurm_csv), table(ref_csv)
if len(a) != len(b) or len(a) < 10:
    bad.append(f"tables have {len(a)} and {len(b)} rows")
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        bad.append(f"table row {i} differs:\n    slurm:  {x}\n    single: {y}")
print(f"  tables: {len(a)} rows equal in every column but wall-clock times")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF

say "PASS: the Slurm array ran the grid like one process, each job once, interrupted tasks resumed"
