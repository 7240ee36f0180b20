#!/bin/sh
# Checks the compatibility header without CUDA 13: testdata/fake13/cuda.h
# wraps the installed (CUDA 11/12) cuda.h and declares the five functions
# gorgonia.org/cu calls the old way with their CUDA 13 signatures. Building
# cu against it must fail without the compatibility header and succeed with
# it. Needs cuda.h (e.g. Debian's nvidia-cuda-dev); compiles, never links.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if CGO_CFLAGS="-I$here/testdata/fake13" go build -o /dev/null gorgonia.org/cu >/dev/null 2>&1; then
	echo "compat: cu builds against the fake CUDA 13 header without help: the test double is wrong" >&2
	exit 1
fi
if ! CGO_CFLAGS="-I$here -I$here/testdata/fake13" go build -o /dev/null gorgonia.org/cu; then
	echo "compat: cu does not build against the fake CUDA 13 header with cuda/compat first" >&2
	exit 1
fi
echo "compat: ok (cu fails with CUDA 13 signatures alone, builds with cuda/compat/cuda.h)"
