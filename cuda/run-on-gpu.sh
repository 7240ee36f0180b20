#!/bin/bash
# Runs the CUDA backend's tests and benchmarks on a GPU machine and writes
# the logs to $OUT (default ./gpu-logs).
#
# Usage, from the repository root:
#
#	cuda/run-on-gpu.sh [TEST_BINARY]
#
# TEST_BINARY defaults to bin/cuda.test, built beforehand on a machine with
# cuda.h and libcuda.so (the binary links libcuda.so.1 dynamically and needs
# glibc ≥ 2.34):
#
#	go test -c -tags cuda -o bin/cuda.test ./cuda
#
# When the binary is missing and this machine has Go and cuda.h, it is built
# here (CUDA 13 headers: the compatibility header in cuda/compat is put on
# the include path automatically).
#
# Environment: GPNB_CUDA_DEVICE selects the GPU (default 0);
# GPNB_CUDA_BENCH_N the benchmark size (default: 20000 and 50000);
# BENCHTIME the go benchmark -benchtime (default 10x).
set -u
root=$(pwd)
OUT=${OUT:-$root/gpu-logs}
mkdir -p "$OUT"
: >"$OUT/summary.log"
bin=${1:-bin/cuda.test}
status=0

{
	echo "== date"; date -u
	echo "== uname"; uname -a
	echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "nvidia-smi not found"
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
	echo "== ldconfig libcuda"; ldconfig -p 2>/dev/null | grep libcuda || echo "libcuda.so.1 not in the linker cache"
} >"$OUT/env.log" 2>&1

if [ ! -x "$bin" ]; then
	if command -v go >/dev/null 2>&1; then
		flags=""
		if grep -qs "define CUDA_VERSION 13" /usr/local/cuda/include/cuda.h /usr/include/cuda.h; then
			flags="-I$root/cuda/compat"
		fi
		echo "== building $bin (CGO_CFLAGS=$flags)" | tee -a "$OUT/env.log"
		mkdir -p "$(dirname "$bin")"
		CGO_CFLAGS="$flags ${CGO_CFLAGS:-}" go test -c -tags cuda -o "$bin" ./cuda >>"$OUT/env.log" 2>&1 || {
			echo "build failed: see $OUT/env.log"
			exit 1
		}
	else
		echo "no test binary at $bin and no Go toolchain to build one" | tee -a "$OUT/env.log"
		exit 1
	fi
fi
echo "== ldd $bin" >>"$OUT/env.log"
ldd "$bin" >>"$OUT/env.log" 2>&1

# Tests: every kernel against the CPU operator (float64 < 1e-10 relative),
# finite differences, determinism, errors, the runnable example.
(cd "$root/cuda" && "$root/$bin" -test.v -test.count=1 -test.timeout 10m) >"$OUT/test.log" 2>&1
rc=$?
echo "tests: exit $rc, $(grep -c -- "--- PASS" "$OUT/test.log") passed, $(grep -c -- "--- SKIP" "$OUT/test.log") skipped, $(grep -c -- "--- FAIL" "$OUT/test.log") failed" >>"$OUT/summary.log"
grep -E "^(--- FAIL|--- SKIP|FAIL|PASS|ok)" "$OUT/test.log" | head -50 >>"$OUT/summary.log"
[ $rc -eq 0 ] || status=1

# Benchmarks: H·V throughput against bandwidth and the fp64 peak.
for n in ${GPNB_CUDA_BENCH_N:-20000 50000}; do
	(cd "$root/cuda" && GPNB_CUDA_BENCH_N=$n "$root/$bin" -test.run '^$' -test.bench . \
		-test.benchtime "${BENCHTIME:-10x}" -test.timeout 10m) >"$OUT/bench-n$n.log" 2>&1
	rc=$?
	echo "bench n=$n: exit $rc" >>"$OUT/summary.log"
	grep -E "^Benchmark" "$OUT/bench-n$n.log" >>"$OUT/summary.log"
	[ $rc -eq 0 ] || status=1
done
cat "$OUT/summary.log"
exit $status
