# scripts/results.sh, sourced from the repository root by the scripts of
# results/: GPNB, the gpnb binary (bin/gpnb, built with OpenBLAS when it is
# missing); GPNB_DATA, the UCI files (../shared/data/uci beside the checkout
# unless set); DRY, --dry-run when DRYRUN=1.
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
DRY=""
if [ "${DRYRUN:-0}" = 1 ]; then DRY=--dry-run; fi
