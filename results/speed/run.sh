#!/bin/sh
# Full pol, CG with warm start, in float64, float32 and mixed precision
# (results/speed/README.md): split 0, 100 steps, the paper's settings, one
# job per precision into results/speed/<precision>, each run alone on the
# machine; then renders tables.md with gpnb table, beside results/full's
# float64 run of the same job. PRECISIONS lists the precisions (float64
# float32 mixed); DRYRUN=1 lists each job's state; RENDER_ONLY=1 only
# renders.
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB, GPNB_DATA, DRY
D=results/speed
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	for p in ${PRECISIONS:-float64 float32 mixed}; do
		"$GPNB" reproduce --datasets pol --splits 0 --solvers cg --modes warm --steps 100 --exact never --precision "$p" \
			--rules paper-text --out "$D/$p" $DRY
	done
	[ -z "$DRY" ] || exit 0
fi
R=float64
{
	echo "# results/speed: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh results/speed/run.sh\` (gpnb table) from the jobs' files; nothing is typed by hand. The ratios compare each run with the float64 run of results/speed, the same job (a value above 1: the run is faster, or needs fewer iterations)."
	echo
	"$GPNB" table --table runs --in "$R=$D/float64,float32=$D/float32,mixed=$D/mixed,results/full=results/full" --jobs pol-s0-cg-warm \
		--title "pol CG + warm start by precision" --columns "set=run,precision,day,build,load:2,total_min,solver_min,iterations,s_per_iteration,non_solver_share,build_s_per_step,reduce_s_per_step,test_rmse,test_llh,speedup@$R:2=total time $R / this,solver_ratio@$R=solver time $R / this,s_per_iteration_ratio@$R=s per iteration $R / this,iteration_ratio@$R=iterations $R / this,dllh@$R=test LLH − $R,solver_min_at_iterations@$R=solver min at the $R run's iterations"
} >"$D/tables.md.tmp"
mv "$D/tables.md.tmp" "$D/tables.md"
