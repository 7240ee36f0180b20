#!/bin/sh
# Records the sha256 of gpnb.cu where the build needs it: gpnb.cu.sha256
# (TestPTXUpToDate: the checked-in PTX and cubin were made from it) and the
# GPNB_CU_SHA256 flag of ../driver_emu.go (the cudaemu build includes gpnb.cu,
# which Go's build cache does not see; the changed flag makes it rebuild).
# gen.sh runs it; without nvcc, run it after editing gpnb.cu to test the
# emulation (TestPTXUpToDate then fails until gen.sh has run).
set -eu
cd "$(dirname "$0")"
sum=$(sha256sum gpnb.cu | cut -d' ' -f1)
sed -i "s/-DGPNB_CU_SHA256=sha256_[0-9a-f]*/-DGPNB_CU_SHA256=sha256_$sum/" ../driver_emu.go
if [ "${1:-}" != --emu-only ]; then
	echo "$sum" >gpnb.cu.sha256
fi
