#!/bin/sh
# The commands that produced results/run (see results/README.md). Stages run
# one solver at a time over all datasets, so that a stage cut short by the
# clock still leaves complete cold/warm pairs for the earlier solvers; every
# stage writes into the same --out directory (job configurations are
# per solver, so the stages do not conflict), and rerunning a stage resumes it.
#
# Subset: 2000 training points of split 0 per dataset (2 CPU cores). AP block
# size and SGD batch size keep the paper's proportions to n (2000/13500 and
# 1000/13500 of the training set): 300 and 150.
set -eu
cd "$(dirname "$0")/.."
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
OUT=results/run
# SGD ran at the normalised learning rate (--sgd-lr 0, which the default,
# auto, also gives on a subset), and every job under the paper's-text
# stopping rules, the default when they ran.
COMMON="--datasets pol,elevators,bike --splits 0 --subset 2000 --steps 100 --block-size 300 --batch-size 150 --sgd-lr 0 --rules paper-text --out $OUT"
for solver in ${STAGES:-cg ap sgd}; do
	"$GPNB" reproduce $COMMON --solvers "$solver" --exact never
done
# The exact Cholesky reference (gradient by Cholesky, no probes).
[ "${EXACT:-1}" = 1 ] && "$GPNB" reproduce $COMMON --solvers cholesky
