#!/bin/sh
# Full-size runs (split 0, all training points, the paper's settings: AP block
# 2000, SGD batch 1000), warm start only, in stages one solver at a time over
# pol, elevators and bike, so that a stage cut short by the clock still leaves
# finished jobs; rerunning resumes (see results/README.md). Cold full-size runs
# take several times longer and were not run on this 2-core machine.
set -eu
cd "$(dirname "$0")/.."
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -tags openblas -o "$GPNB" ./cmd/gpnb
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
for solver in ${STAGES:-cg ap}; do
	"$GPNB" reproduce --datasets ${DATASETS:-pol,elevators,bike} --splits 0 --solvers "$solver" --modes warm --steps 100 --exact never --out results/full
done
