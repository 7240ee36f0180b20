#!/bin/sh
# The full-size runs (results/full/README.md): split 0, all training points,
# the paper's settings (AP blocks of 2000, SGD batches of 1000 at the
# paper's rates), 100 Adam steps, under the paper's-text stopping rules,
# into results/full, in stages of one solver and mode each, so that a stage
# cut short still leaves finished jobs; rerunning resumes the unfinished
# job from its last step. Then renders tables.md with gpnb table.
#
#   STAGES        solver:mode pairs for pol, elevators and bike
#                 (cg:warm ap:warm cg:cold sgd:warm ap:cold sgd:cold)
#   LARGE_STAGES  the same for protein and keggdirected (cg:warm ap:warm),
#                 whose dense float64 kernel matrix (15.4 GB for
#                 keggdirected) needs a memory budget of MEMORY_BUDGET (16GiB)
#   FLAGS         more flags for every gpnb reproduce
#   DRYRUN=1      run nothing: list each job as done, started or not started
#   RENDER_ONLY=1 only render tables.md
#   CONCURRENT=1  run beside another gpnb reproduce (see below)
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
OUT=results/full
# stage DATASETS STAGES FLAGS...: one gpnb reproduce per solver:mode pair.
stages() {
	ds=$1 st=$2
	shift 2
	for s in $st; do
		"$GPNB" reproduce --datasets "$ds" --splits 0 --solvers "${s%%:*}" --modes "${s##*:}" --steps 100 --exact never \
			--rules paper-text --out "$OUT" "$@" ${FLAGS:-} $DRY
	done
}
plan() {
	stages pol,elevators,bike "${STAGES:-cg:warm ap:warm cg:cold sgd:warm ap:cold sgd:cold}"
	stages protein,keggdirected "${LARGE_STAGES:-cg:warm ap:warm}" --memory-budget "${MEMORY_BUDGET:-16GiB}"
}
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	# The runtimes are the results: a job that shares this 2-core machine
	# with another gpnb reproduce runs each step about twice as slowly,
	# which would skew every speed-up. runs.json records each job's load.
	if [ -z "$DRY" ] && [ "${CONCURRENT:-0}" != 1 ] && others=$(pgrep -f 'gpnb reproduce' | xargs) && [ -n "$others" ]; then
		echo "full/run.sh: another gpnb reproduce is running (pid $others); full-size timings need the machine to themselves. Wait for it, or set CONCURRENT=1." >&2
		exit 1
	fi
	plan
	[ -z "$DRY" ] || exit 0
fi
{
	echo "# results/full: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/full/run.sh\` (gpnb table, gpnb reproduce --dry-run) from the jobs' files; nothing is typed by hand."
	echo
	"$GPNB" table --in "$OUT" --table 2 --unit min
	"$GPNB" table --in "$OUT" --table 1 --unit min
	"$GPNB" table --in "$OUT" --table paper
	echo "### Every planned job"
	echo
	echo "\`DRYRUN=1 sh results/full/run.sh\`: each job's state, runtime, iterations, test LLH and operator ('operator —': a result that did not record it; those runs used the default dense float64 operator), and each segment of its steps: the build that ran it, the machine's mean load, and the machine's dense H·V rate as the segment began (\`H·V N GFLOP/s\`, as \`gpnb bench\` measures it at n = 3000; segments run before the runner measured it have none). Segments on machines of different speeds do not compare in wall time."
	echo
	echo '```'
	DRY=--dry-run plan | grep -v ' jobs in '
	echo '```'
} >"$OUT/tables.md.tmp"
mv "$OUT/tables.md.tmp" "$OUT/tables.md"
