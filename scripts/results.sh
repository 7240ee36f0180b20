# scripts/results.sh, sourced from the repository root by the scripts of
# results/: GPNB, the gpnb binary (unless set: bin/gpnb, built with OpenBLAS
# from this tree every time, so that a stale binary never makes a run);
# GPNB_DATA, the UCI files (../shared/data/uci beside the checkout
# unless set); DRY, --dry-run when DRYRUN=1.
if [ -z "${GPNB:-}" ]; then
	GPNB=bin/gpnb
	go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb
fi
export GPNB_DATA=${GPNB_DATA:-$(cd .. && pwd)/shared/data/uci}
DRY=""
if [ "${DRYRUN:-0}" = 1 ]; then DRY=--dry-run; fi
