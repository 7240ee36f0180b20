#!/bin/sh
# SGD and AP under gpnb's defaults (results/sgd-defaults/README.md): pol,
# elevators and bike, split 0, random subsets of 1500 and 4000 training
# points, seeds 0-4 (probes and SGD's batches), cold and warm, 30 Adam
# steps, everything else as gpnb reproduce sets it by default (the paper's
# settings, the authors' stopping rules, SGD's rate auto: the normalised one
# on these subsets), one directory per subset size (nN/). Then renders
# tables.md with gpnb table. Rerunning resumes; DRYRUN=1 lists where each
# job stands; RENDER_ONLY=1 only renders; SUBSETS="1500" runs one size.
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
OUT=results/sgd-defaults
SUBSETS=${SUBSETS:-1500 4000}
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	for n in $SUBSETS; do
		"$GPNB" reproduce --datasets pol,elevators,bike --splits 0 --subset "$n" --seeds 0-4 --solvers ap,sgd \
			--modes cold,warm --steps 30 --exact never --out "$OUT/n$n" ${FLAGS:-} $DRY
	done
	[ -z "$DRY" ] || exit 0
fi
{
	echo "# results/sgd-defaults: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/sgd-defaults/run.sh\` (gpnb table) from the jobs' files; nothing is typed by hand."
	for n in $SUBSETS; do
		echo
		"$GPNB" table --in "$OUT/n$n" --table convergence --title "How the solves ended, n = $n"
	done
} >"$OUT/tables.md.tmp"
mv "$OUT/tables.md.tmp" "$OUT/tables.md"
