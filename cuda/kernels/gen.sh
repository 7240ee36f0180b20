#!/bin/sh
# Regenerates the GPU backend's kernels from gpnb.cu (`make ptx` runs this
# script): PTX for compute capability 9.0 and later (gpnb_sm90.ptx) and for
# 6.0 to 8.x (gpnb_sm60.ptx), which the driver's JIT compiles at start-up,
# and machine code for 9.0 (gpnb_sm90.cubin, H100 and H200), which loads
# with no JIT. All three are checked in and embedded by the cuda build.
#
# -fmad=false: nvcc then writes every float multiply and add with an
# explicit rounding (mul.rn, add.rn), which no JIT may fuse, and the
# kernels' fma() calls are fused by the source itself; so the bits of a
# result do not depend on which driver compiled the PTX, and the cubin gives
# the bits of the PTX. The cubin is assembled from the checked-in PTX with
# ptxas, so it is that PTX's machine code.
#
# Needs nvcc from CUDA 11.8 or later (Debian 12: nvidia-cuda-toolkit from
# non-free). CUDA 11.8 supports host compilers up to gcc 11: on systems whose
# default gcc is newer the script uses g++-11 when it exists; set NVCC_CCBIN
# to choose another. The PTX ISA is the one of the nvcc used (7.8 for CUDA
# 11.8); drivers accept PTX from their own CUDA version or older, so
# generating with the oldest supported nvcc keeps the PTX loadable on CUDA
# 11.8, 12.x and 13.x drivers.
#
# OUTDIR=dir writes the files there instead (results/gpu/quick.sh compiles
# the kernels with the GPU machine's nvcc this way, to check that another
# compiler gives the same bits: GPNB_CUDA_MODULE loads such a file).
set -eu
cd "$(dirname "$0")"
out=${OUTDIR:-.}
NVCC=${NVCC:-nvcc}
CCBIN=${NVCC_CCBIN:-$(command -v g++-11 || true)}
set -- -O3 -std=c++17 -fmad=false
if [ -n "$CCBIN" ]; then
	set -- "$@" -ccbin "$CCBIN"
fi
"$NVCC" -ptx "$@" -arch=compute_90 -o "$out/gpnb_sm90.ptx" gpnb.cu
"$NVCC" -ptx "$@" -arch=compute_60 -o "$out/gpnb_sm60.ptx" gpnb.cu
PTXAS=${PTXAS:-$(dirname "$(command -v "$NVCC")")/ptxas}
"$PTXAS" -O3 -arch=sm_90 -o "$out/gpnb_sm90.cubin" "$out/gpnb_sm90.ptx"
tmp=$(mktemp -d)
"$PTXAS" -O3 -arch=sm_60 -o "$tmp/sm60.cubin" "$out/gpnb_sm60.ptx" # the sm_60 PTX assembles
rm -rf "$tmp"
if [ "$out" = . ]; then
	# Record which source the kernels were made from (TestPTXUpToDate) and
	# rebuild the cudaemu emulation of it (TestEmuSource).
	sh stamp.sh
fi
echo "kernels: gpnb_sm90.ptx, gpnb_sm60.ptx and gpnb_sm90.cubin regenerated in $out ($("$NVCC" --version | tail -1))"
