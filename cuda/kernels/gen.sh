#!/bin/sh
# Regenerates the checked-in PTX (gpnb_sm90.ptx, gpnb_sm60.ptx) from gpnb.cu
# and, when ptxas is there, assembles both for their targets as a check (no
# GPU needed). `make ptx` runs this script.
#
# Needs nvcc from CUDA 11.8 or later. CUDA 11.8 supports host compilers up
# to gcc 11: on systems whose default gcc is newer (Debian 12) the script
# uses g++-11 when it exists; set NVCC_CCBIN to choose another.
#
# The PTX ISA is the one of the nvcc used (7.8 for CUDA 11.8); drivers
# accept PTX from their own CUDA version or older, so generating with the
# oldest supported nvcc keeps the PTX loadable on CUDA 11.8, 12.x and 13.x
# drivers.
set -eu
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
CCBIN=${NVCC_CCBIN:-$(command -v g++-11 || true)}
set -- -ptx -O3 -std=c++17
if [ -n "$CCBIN" ]; then
	set -- "$@" -ccbin "$CCBIN"
fi
"$NVCC" "$@" -arch=compute_90 -o gpnb_sm90.ptx gpnb.cu
"$NVCC" "$@" -arch=compute_60 -o gpnb_sm60.ptx gpnb.cu
if command -v ptxas >/dev/null 2>&1; then
	tmp=$(mktemp -d)
	ptxas -arch=sm_90 -o "$tmp/sm90.cubin" gpnb_sm90.ptx
	ptxas -arch=sm_60 -o "$tmp/sm60.cubin" gpnb_sm60.ptx
	rm -rf "$tmp"
	echo "ptx: gpnb_sm90.ptx and gpnb_sm60.ptx regenerated and assembled"
else
	echo "ptx: gpnb_sm90.ptx and gpnb_sm60.ptx regenerated (ptxas not found: not assembled)"
fi
# Record which source the PTX was made from; TestPTXUpToDate compares.
sha256sum gpnb.cu | cut -d' ' -f1 >gpnb.cu.sha256
