#!/bin/sh
# The full-size pol and bike SGD jobs under the authors' stopping rules
# (results/full-authors-rules/README.md): the cold jobs that stopped at the
# iteration cap under the paper's text in results/full, and their warm
# pairs, split 0, 100 steps, into results/full-authors-rules. Then renders
# tables.md with gpnb table, beside results/full's runs of the same jobs.
# DRYRUN=1 lists where each job stands; RENDER_ONLY=1 only renders.
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
OUT=results/full-authors-rules
# The iteration cap a step: bike cold's solves outgrow SGD's default of
# 50 000 under these rules too. results/gpu/fidelity.sh reads it here.
CAP=200000
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	"$GPNB" reproduce --datasets pol,bike --splits 0 --solvers sgd --modes cold,warm --steps 100 --exact never \
		--rules authors --max-iterations "$CAP" --out "$OUT" ${FLAGS:-} $DRY
	[ -z "$DRY" ] || exit 0
fi
{
	echo "# results/full-authors-rules: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/full-authors-rules/run.sh\` (gpnb table) from the jobs' files here and in results/full; nothing is typed by hand."
	echo
	"$GPNB" table --in "authors'=$OUT,paper's text=results/full" --jobs 'pol-s0-sgd-*,bike-s0-sgd-*' --table runs \
		--columns "dataset,mode,set=rules,steps,iterations,capped,step_h,test_llh,where" --title "Beside the runs under the paper's text"
	"$GPNB" table --in "$OUT" --table 2 --unit min
	"$GPNB" table --in "$OUT" --table paper
} >"$OUT/tables.md.tmp"
mv "$OUT/tables.md.tmp" "$OUT/tables.md"
