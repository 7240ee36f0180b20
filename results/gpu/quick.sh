#!/bin/bash
# results/gpu/quick.sh: the measurements of the device-resident solves (issues
# 35 and 56) in one call on a GPU machine (about 8 minutes at most:
# QUICK_SECONDS, default 470), everything written under results/gpu/quick56/
# (call 9's run, before issue 56's kernels, is results/gpu/quick/) and packed
# into $OUT/quick56.tar.gz. Run from the repository root, with the
# binaries that results/gpu/build.sh made on the development machine in
# .cuda/ (the GPU machine has no Go):
#
#	results/gpu/build.sh                           # development machine
#	results/gpu/quick.sh                           # GPU machine, carrying .cuda
#	tar -xzf quick56.tar.gz -C results/gpu         # development machine
#	sh results/gpu/render.sh                       # → results/gpu/tables.md
#
# Stages, in order of importance; each has its own time limit and none
# starts past the call's deadline (minus the time kept for the evaluation):
#
#	env      nvidia-smi, nvcc, the binaries' revision
#	nvcc     the machine's own nvcc compiles the sm_90 kernels (in the
#	         background, for the bits stage)
#	tests    cuda.test: every kernel and Space operation against the CPU, the
#	         solvers on the device, TestModuleBits (cubin against the JIT)
#	bench    at n = 13500 and 43945 (pol's and keggdirected's n), timed by
#	         CUDA events: the dense product's % of memory bandwidth in float64
#	         and float32 K (SpaceMul), Reduce at d = 26 (pol's), an Adam
#	         step's split (build, start, iteration, reduce: Step), and a CG
#	         iteration's wall time
#	train    gpnb train --backend cuda, 100 Adam steps, paper settings, split 0:
#	         pol CG warm and cold, keggdirected CG warm in float64 and with
#	         float32 K (a run stopped by its limit keeps its per-step log)
#	gpytorch results/gpu/gpytorch_exact.py on pol: its defaults, and CG
#	         tolerance 0.01 without preconditioner
#	float32  pol CG warm with float32 K
#	bits     TestModuleBits with the kernels the machine's nvcc compiled
#	blocks   the dense products again for several chunking targets
#	exact    eval_exact.py: exact test RMSE and LLH of every finished run
set -u
root=$(pwd)
OUT=${OUT:-$root/gpu-logs}
Qrel=results/gpu/quick56 # eval_exact.py records the files by these paths
Q=$root/$Qrel
mkdir -p "$OUT" "$Q/train" "$Q/logs"
deadline=$((SECONDS + ${QUICK_SECONDS:-470}))
keep=75  # seconds kept for the evaluation and packing
grace=15 # seconds between a stage's SIGINT and SIGKILL
sum=$Q/logs/summary.log
: >"$sum"

# budget CAP: the seconds a stage may take, at most CAP (0: none left).
budget() {
	local left=$((deadline - SECONDS - keep))
	((left > $1)) && left=$1
	((left < 15)) && left=0
	echo $left
}
. "$root/results/gpu/common.sh" # GPNB, TEST, GPNB_DATA, note, stage

{
	echo "== date"; date -u
	echo "== nvidia-smi"; nvidia-smi 2>&1
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
	echo "== nvcc"; nvcc --version 2>&1 | tail -2
	echo "== binaries"; ls -la "$GPNB" "$TEST"
	echo "== data"; ls -la "$GPNB_DATA"/*
} >"$Q/logs/env.log" 2>&1
if [ ! -x "$GPNB" ] || [ ! -x "$TEST" ]; then
	note "no binaries in .cuda: run results/gpu/build.sh on the development machine and carry .cuda"
	exit 1
fi
note "quick.sh on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

# The machine's nvcc (CUDA 13 there) compiles the sm_90 kernels while the
# tests run; CUDA 13 no longer targets sm_60, so gen.sh's full set is not
# made here.
k13=/tmp/gpnb-k13
mkdir -p $k13
(timeout 300 nvcc -ptx -O3 -std=c++17 -fmad=false -arch=compute_90 -o $k13/gpnb_sm90.ptx cuda/kernels/gpnb.cu &&
	timeout 120 ptxas -O3 -arch=sm_90 -o $k13/gpnb_sm90.cubin $k13/gpnb_sm90.ptx) >"$Q/logs/nvcc.log" 2>&1 &
nvcc_pid=$!

(cd cuda && stage tests 150 "$TEST" -test.v -test.count=1 -test.timeout 300s) >"$Q/logs/test.log" 2>&1
tail -n 3 "$Q/logs/test.log" | tee -a "$sum"
note "tests: $(grep -c -- '--- PASS' "$Q/logs/test.log") passed, $(grep -c -- '--- SKIP' "$Q/logs/test.log") skipped, $(grep -c -- '--- FAIL' "$Q/logs/test.log") failed"

(cd cuda && GPNB_CUDA_BENCH_N=13500,43945 stage bench 150 "$TEST" -test.run '^$' -test.bench 'SpaceMul|Reduce|Step|CGIteration' \
	-test.benchtime 10x -test.timeout 300s) >"$Q/logs/bench.log" 2>&1
grep -E '^Benchmark' "$Q/logs/bench.log" | tee -a "$sum"

# train ID DATASET SOLVER WARM CAP [FLAGS...]
train() {
	local id=$1 ds=$2 solver=$3 warm=$4 cap=$5
	shift 5
	local dir=$Q/train/$id
	mkdir -p "$dir"
	stage "train $id" "$cap" "$GPNB" train --backend cuda --data "$ds" --split 0 --solver "$solver" --warm-start="$warm" \
		--steps 100 --eval=false --residuals=false --quiet --verbose --json "$dir/result.json" "$@" >"$dir/log" 2>&1
	tail -n 2 "$dir/log" | tee -a "$sum"
}
prec=(--float32)
"$GPNB" train -h 2>&1 | grep -q -- '-precision' && prec=(--precision float32)
train pol-cg-warm pol cg true 60
train pol-cg-cold pol cg false 90
train keggdirected-cg-warm keggdirected cg true 120
train keggdirected-cg-warm-float32 keggdirected cg true 90 "${prec[@]}"

stage "gpytorch defaults" 90 env PYTHONUNBUFFERED=1 python3 results/gpu/gpytorch_exact.py --datasets pol --data "$GPNB_DATA" \
	--out "$Q/gpytorch.jsonl" >>"$Q/logs/gpytorch.log" 2>&1
stage "gpytorch tol 0.01, no preconditioner" 120 env PYTHONUNBUFFERED=1 python3 results/gpu/gpytorch_exact.py --datasets pol \
	--data "$GPNB_DATA" --cg-tolerance 0.01 --precond-size 0 --label cg-tol-0.01-no-precond --out "$Q/gpytorch.jsonl" >>"$Q/logs/gpytorch.log" 2>&1
tail -n 2 "$Q/gpytorch.jsonl" 2>/dev/null | cut -c1-300 | tee -a "$sum"

train pol-cg-warm-float32 pol cg true 45 "${prec[@]}"

while kill -0 $nvcc_pid 2>/dev/null && (($(budget 60) > 0)); do
	sleep 5
done
if kill -0 $nvcc_pid 2>/dev/null; then
	kill $nvcc_pid
	note "bits: skipped (the machine's nvcc had not finished)"
elif [ -s $k13/gpnb_sm90.cubin ]; then
	(cd cuda && GPNB_CUDA_BITS_MODULES=$k13/gpnb_sm90.cubin,$k13/gpnb_sm90.ptx stage bits 60 "$TEST" -test.v -test.count=1 \
		-test.run TestModuleBits) >"$Q/logs/bits.log" 2>&1
	grep -E 'module_test|--- ' "$Q/logs/bits.log" | tee -a "$sum"
else
	note "bits: the machine's nvcc made no cubin (see logs/nvcc.log)"
fi

# The dense product against the number of blocks it is cut into (the
# chunking target, cuda/product.go's targetBlocks; the default first): the
# launch bounds allow 4 blocks of mulk per multiprocessor up to 24 columns.
(cd cuda && GPNB_CUDA_BENCH_N=13500,43945 GPNB_CUDA_BENCH_BLOCKS=384,528,792,1056 stage blocks 45 "$TEST" -test.run '^$' \
	-test.bench 'SpaceMul/.*/dense/' -test.benchtime 10x -test.timeout 300s) >"$Q/logs/blocks.log" 2>&1
grep -E '^Benchmark' "$Q/logs/blocks.log" | tee -a "$sum"

keep=10
todo=()
for f in "$Qrel"/train/*/result.json; do
	[ -f "$f" ] && todo+=("$f")
done
if [ ${#todo[@]} -gt 0 ]; then
	stage exact 120 env PYTHONUNBUFFERED=1 python3 results/gpu/eval_exact.py --data "$GPNB_DATA" --out "$Q/exact.jsonl" "${todo[@]}" \
		>"$Q/logs/exact.log" 2>&1
	cut -c1-240 "$Q/exact.jsonl" | tee -a "$sum"
fi

note "quick.sh: done in $SECONDS s"
cp "$sum" "$OUT/summary.log"
tar -czf "$OUT/quick56.tar.gz" -C results/gpu quick56
ls -la "$OUT"
