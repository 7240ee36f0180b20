#!/bin/sh
# The stopping-rule comparison (results/fidelity/README.md, DESIGN.md "gpnb
# and the authors' code"): pol, elevators and bike, split 0, a random
# subset of 4000 training points, 100 Adam steps, the paper's settings (AP
# block 2000, SGD batch 1000 and the paper's raw learning rates), every
# solver cold and warm, under one rule set per output directory:
#
#   RULES=paper      the paper's text (--rules paper-text): every probe
#                    system meets 0.1, a system that met its tolerance gets
#                    no more work, AP picks over unconverged systems, SGD's
#                    residual estimate starts at the true residual and the
#                    stop is confirmed by one product.
#   RULES=reference  the authors' code's rules (linear_solvers.py; --rules
#                    authors, gpnb's default): the mean of the probe
#                    residuals meets 0.1, every system iterates until the
#                    whole rule is met, AP picks over all systems, SGD's
#                    estimate starts at b and the stop is not confirmed.
#                    The iteration caps stay gpnb's (the code's --max-epochs
#                    1000 is left out, so that cap hits compare).
#   RULES=joint      the paper's text with --freeze joint only (the one rule
#                    with a measured effect on the gradient).
#
# STAGES lists solver:mode pairs in order (cholesky:exact is the exact
# reference); DRYRUN=1 lists each job's state. Rerunning resumes. Steps and
# datasets can be cut with STEPS and DATASETS (say so in README.md).
# A stage whose jobs fail (e.g. SGD diverging) does not stop the later ones;
# each stage's log is appended to results/fidelity/$RULES/reproduce.log.
# FLAGS adds run flags that leave a job's configuration alone, e.g.
# FLAGS="--backend cuda" (results/gpu/fidelity.sh; runs.json records each
# segment's backend). Then renders tables.md with gpnb table (RENDER_ONLY=1:
# only that).
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
RULES=${RULES:-paper}
# SGD runs at the paper's rates on these subsets (--sgd-lr paper; elevators
# diverges at it under the paper's text: README.md).
case "$RULES" in
paper) RULEFLAGS="--rules paper-text --sgd-lr paper" ;;
reference) RULEFLAGS="--rules authors --sgd-lr paper" ;;
joint) RULEFLAGS="--rules paper-text --freeze joint --sgd-lr paper" ;;
*)
	echo "fidelity/run.sh: RULES=$RULES: use paper, reference or joint" >&2
	exit 2
	;;
esac
[ "${RENDER_ONLY:-0}" = 1 ] || for stage in ${STAGES:-cholesky:exact sgd:warm sgd:cold cg:warm ap:warm cg:cold ap:cold}; do
	solver=${stage%%:*} mode=${stage##*:}
	flags="$RULEFLAGS"
	case "$solver" in
	cholesky) # the exact reference does not depend on the rules: once, in paper/
		[ "$RULES" = paper ] || continue
		flags="" mode=cold,warm ;;
	esac
	mkdir -p "results/fidelity/$RULES"
	"$GPNB" reproduce --datasets "${DATASETS:-pol,elevators,bike}" --splits 0 --subset 4000 --steps "${STEPS:-100}" \
		--solvers "$solver" --modes "$mode" --exact never $flags ${FLAGS:-} --out "results/fidelity/$RULES" $DRY \
		2>>"results/fidelity/$RULES/reproduce.log" || echo "fidelity/run.sh: stage $stage of $RULES had failures (see results/fidelity/$RULES/reproduce.log); going on" >&2
done
[ -z "$DRY" ] || exit 0

# tables.md: every figure from gpnb table reading the jobs' files (a job
# cut short from its checkpoint, or its partial.json where the checkpoint
# is not kept); the notes are README.md's.
D=results/fidelity
SETS=paper=$D/paper,joint=$D/joint,reference=$D/reference
{
	echo "# results/fidelity: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/fidelity/run.sh\` (gpnb table) from the jobs' files; nothing is typed by hand. README.md says what was run and how to read them."
	echo
	"$GPNB" table --table split --in "$D/split/pol-ap-warm.json"
	"$GPNB" table --table runs --in "$SETS" --title "Every run: work, caps, time, test log-likelihood" \
		--columns "dataset,solver,mode,set=rules,steps,iterations,epochs,capped,over_1000_epochs,solver_s,total_s,load,test_llh,test_rmse,sigma"
	echo "Epochs = iterations × rows per iteration / n (CG: iterations). Capped = steps whose solve stopped unconverged. Times are wall-clock seconds; load = runs.json's mean 1-minute load over the job's segments, by steps: compare times within a dataset and solver, at like loads. Over 1000 epochs = steps whose solve took more than the authors' code's default cap (max_epochs 1000: CG 1000 iterations, AP and SGD ⌈1000·n/rows⌉), the steps \`--max-epochs 1000\` would have capped."
	echo
	"$GPNB" table --table traces --in "$SETS"
	for rules in paper joint reference; do
		"$GPNB" table --in "$D/$rules" --table 2 --unit s --title "Table 2 under the rule set $rules" 2>/dev/null || true
	done
} >"$D/tables.md.tmp"
mv "$D/tables.md.tmp" "$D/tables.md"
