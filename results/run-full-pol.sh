#!/bin/sh
# Full-size pol (split 0, n = 13500), CG with warm start only, the paper's
# settings: the one full-size run this 2-core machine could finish in the
# time available (see results/README.md).
set -eu
cd "$(dirname "$0")/.."
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -tags openblas -o "$GPNB" ./cmd/gpnb
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
"$GPNB" reproduce --datasets pol --splits 0 --solvers cg --modes warm --steps 100 --exact never --out results/full-pol
