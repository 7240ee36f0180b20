#!/bin/sh
# The ablation of the follow-up paper's techniques (results/ablation/README.md)
# with CG, split 0: Hutchinson and pathwise estimators, cold and with warm
# start, and pathwise + warm start under solver budgets of 10, 20 and 50
# epochs a step, in stages of gpnb reproduce (a stage cut short leaves
# finished jobs; rerunning resumes). Two grids, each in its own folder:
#
#   GRID=n4000  pol, elevators and bike on random 4000-point subsets
#               (the default), into results/ablation/n4000
#   GRID=full   pol with all its points, Hutchinson and pathwise with warm
#               start, into results/ablation/full
#
# STAGES overrides the grid's estimator:mode:budgets triples; FLAGS adds
# flags to every gpnb reproduce; DRYRUN=1 lists each job's state;
# RENDER_ONLY=1 only renders tables.md (both grids); CONCURRENT=1 runs
# beside another gpnb reproduce (runtimes are part of the results).
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
DIR=results/ablation
# grid NAME: sets OUT, DATASETS, SUBSET and STAGES of a grid. The
# comparisons first (warm Hutchinson and pathwise, then the budgets), the
# long cold runs last.
grid() {
	OUT=$DIR/$1
	case "$1" in
	n4000) DATASETS=pol,elevators,bike SUBSET=4000
		STAGES=${STAGES:-hutchinson:warm:0 pathwise:warm:0 pathwise:warm:10,20,50 pathwise:cold:20 pathwise:cold:0 hutchinson:cold:0} ;;
	full) DATASETS=pol SUBSET=0 STAGES=${STAGES:-hutchinson:warm:0 pathwise:warm:0} ;;
	*) echo "ablation/run.sh: GRID=$1: use n4000 or full" >&2; exit 2 ;;
	esac
}
# stages [--dry-run]: one gpnb reproduce per stage of the grid.
stages() {
	for stage in $STAGES; do
		est=${stage%%:*} rest=${stage#*:}
		"$GPNB" reproduce --datasets "$DATASETS" --splits 0 --subset "$SUBSET" --solvers cg --estimators "$est" \
			--modes "${rest%%:*}" --budgets "${rest#*:}" --steps 100 --exact never --rules paper-text --out "$OUT" ${FLAGS:-} "$@"
	done
}
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	grid "${GRID:-n4000}"
	if [ "${DRYRUN:-0}" = 1 ]; then
		stages --dry-run
		exit 0
	fi
	if [ "${CONCURRENT:-0}" != 1 ] && others=$(pgrep -f 'gpnb reproduce' | xargs) && [ -n "$others" ]; then
		echo "ablation/run.sh: another gpnb reproduce is running (pid $others): wait for it, or set CONCURRENT=1." >&2
		exit 1
	fi
	stages
fi
# tables.md: every figure from gpnb table reading the jobs' files, or from
# gpnb reproduce --dry-run (the load and build of each job); none typed.
{
	echo "# results/ablation: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/ablation/run.sh\` (gpnb table, gpnb reproduce --dry-run) from the jobs' files; nothing is typed by hand."
	echo
	for g in n4000 full; do
		unset STAGES
		grid $g
		echo "## $g: $DATASETS$( [ "$SUBSET" = 0 ] || echo ", $SUBSET-point subsets")"
		echo
		echo '```'
		stages --dry-run | grep -v ' jobs in '
		echo '```'
		echo
		"$GPNB" table --in "$OUT" --table ablation
		"$GPNB" table --in "$OUT" --table 2 --unit s
		"$GPNB" table --in "$OUT" --table budget 2>/dev/null || true
	done
} >"$DIR/tables.md.tmp"
mv "$DIR/tables.md.tmp" "$DIR/tables.md"
