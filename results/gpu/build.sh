#!/bin/bash
# Builds, on the development machine (the GPU machine has no Go), what
# results/gpu/quick.sh and results/gpu/fidelity.sh run on the GPU machine,
# into .cuda/ (git-ignored),
# which the device call carries:
#
#	.cuda/gpnb.gz     go build -tags cuda ./cmd/gpnb   (pure-Go BLAS: the solves run on the GPU)
#	.cuda/cuda.test.gz go test -c -tags cuda ./cuda
#	.cuda/uci/        pol, keggdirected, bike and elevators from $GPNB_DATA (about 3 MB)
#
# Needs cuda.h and libcuda.so (Debian 12: nvidia-cuda-dev from non-free, or
# the CUDA toolkit; with CUDA 13 headers the compatibility header in
# cuda/compat is put first on the include path automatically). Run from the
# repository root. The binaries record the revision (go version -m).
set -eu
root=$(pwd)
data=${GPNB_DATA:-/work/shared/data/uci}
flags=""
if grep -qs "define CUDA_VERSION 13" /usr/local/cuda/include/cuda.h /usr/include/cuda.h; then
	flags="-I$root/cuda/compat"
fi
mkdir -p .cuda/uci
export CGO_CFLAGS="$flags ${CGO_CFLAGS:-}"
go build -tags cuda -ldflags "-s -w" -o .cuda/gpnb ./cmd/gpnb
go test -c -tags cuda -ldflags "-s -w" -o .cuda/cuda.test ./cuda
for d in pol keggdirected bike elevators; do
	mkdir -p ".cuda/uci/$d"
	cp "$data/$d/data.csv.gz" "$data/$d/test_mask.csv.gz" ".cuda/uci/$d/"
done
# Packed: a device call carries the tracked files (committed checkpoints
# included) and .cuda within 64 MiB; results/gpu/common.sh unpacks them there.
gzip -9 -f .cuda/gpnb .cuda/cuda.test
du -sh .cuda
echo "built .cuda/gpnb and .cuda/cuda.test from $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with uncommitted changes)')"
