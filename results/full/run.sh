#!/bin/sh
# Full-size runs (split 0, all training points, the paper's settings: AP block
# 2000, SGD batch 1000) over pol, elevators and bike, in stages of one solver
# and one mode (cold or warm) each, so that a stage cut short by the clock
# still leaves finished jobs; rerunning resumes the unfinished job from its
# last step (see results/README.md). STAGES lists solver:mode pairs in order.
# DRYRUN=1 runs nothing and lists each job as done, started or not started;
# FLAGS adds flags to every gpnb reproduce (run-large.sh uses it).
set -eu
cd "$(dirname "$0")/.."
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
DRY=""
[ "${DRYRUN:-0}" = 1 ] && DRY=--dry-run
# The runtimes are the results: a job that shares this 2-core machine with
# another gpnb reproduce runs each step ~2× slower (measured: AP 27 → 47-54
# ms and SGD 15 → 31-38 ms per iteration), which would skew every speed-up.
# So one run at a time; CONCURRENT=1 overrides (runs.json records the load).
if [ -z "$DRY" ] && [ "${CONCURRENT:-0}" != 1 ] && others=$(pgrep -f 'gpnb reproduce' | xargs) && [ -n "$others" ]; then
	echo "run-full.sh: another gpnb reproduce is running (pid $others); full-size timings need the machine to themselves. Wait for it, or set CONCURRENT=1." >&2
	exit 1
fi
for stage in ${STAGES:-cg:warm ap:warm cg:cold sgd:warm ap:cold sgd:cold}; do
	"$GPNB" reproduce --datasets ${DATASETS:-pol,elevators,bike} --splits 0 --solvers "${stage%%:*}" --modes "${stage##*:}" --steps 100 --exact never --rules paper-text --out results/full ${FLAGS:-} $DRY
done
