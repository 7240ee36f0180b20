#!/bin/sh
# The 2000-point grid (results/subset-2000/README.md): pol, elevators and
# bike, split 0, a random subset of 2000 training points, CG, AP and SGD
# cold and warm, then the exact gradient, 100 Adam steps, into
# results/subset-2000, one stage of gpnb reproduce per solver (a stage cut
# short still leaves complete cold/warm pairs for the earlier solvers;
# rerunning a stage resumes it). Then renders tables.md, table2.csv and
# tables.html with gpnb table. STAGES lists the solvers (cg ap sgd);
# EXACT=0 leaves out the exact gradient; DRYRUN=1 lists each job as done,
# started or not started; RENDER_ONLY=1 only renders.
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
OUT=results/subset-2000
# AP blocks and SGD batches keep the paper's proportions to n (2000 and
# 1000 of 13500): 300 and 150. SGD runs at its normalised rate (--sgd-lr 0,
# what auto gives on a subset) and every job under the paper's-text
# stopping rules, the default when they ran.
COMMON="--datasets pol,elevators,bike --splits 0 --subset 2000 --steps 100 --block-size 300 --batch-size 150 --sgd-lr 0 --rules paper-text --out $OUT"
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	for solver in ${STAGES:-cg ap sgd}; do
		"$GPNB" reproduce $COMMON --solvers "$solver" --exact never $DRY
	done
	[ "${EXACT:-1}" = 1 ] && "$GPNB" reproduce $COMMON --solvers cholesky $DRY
	[ -z "$DRY" ] || exit 0
fi
{
	echo "# results/subset-2000: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/subset-2000/run.sh\` (gpnb table) from the jobs' files; nothing is typed by hand."
	echo
	"$GPNB" table --in "$OUT" --table status
	"$GPNB" table --in "$OUT" --table runs --jobs '*-cholesky-exact' --columns dataset,n_train,n_test,d --title "Datasets"
	"$GPNB" table --in "$OUT" --table 1 --unit min
	"$GPNB" table --in "$OUT" --table 2 --unit min
	"$GPNB" table --in "$OUT" --table paper
} >"$OUT/tables.md.tmp"
mv "$OUT/tables.md.tmp" "$OUT/tables.md"
"$GPNB" table --in "$OUT" --table 2 --unit s --format csv --out "$OUT/table2.csv"
"$GPNB" table --in "$OUT" --table all --unit min --format html --out "$OUT/tables.html"
