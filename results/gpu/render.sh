#!/bin/sh
# Renders results/gpu/tables.md with gpnb table from the files the GPU runs
# left here (see README.md): the go test logs and benchmarks, the train
# results, the exact evaluations and GPyTorch's runs (JSON lines), the
# reproduce jobs, and, for GPU-against-CPU ratios, the same jobs in
# results/full. Run on the development machine, from anywhere:
#
#	sh results/gpu/render.sh
set -eu
cd "$(dirname "$0")/../.."
. scripts/results.sh # GPNB
G=results/gpu
T() { "$GPNB" table "$@"; }
# The dense and matrix-free products, the reduction, a CG iteration: the
# first time unit each benchmark reports, and the rates.
MS='ms/product|ms/iteration|ms/reduce=ms'
# quick RUN LABEL BASE: the section of one call of quick.sh in $G/RUN,
# against the CPU (results/full) and the earlier GPU runs in BASE.
quick() {
	q=$G/$1
	[ -d "$q" ] || return 0
	echo "## One call of quick.sh: $1"
	echo
	grep -h 'quick.sh on ' "$q/logs/summary.log" 2>/dev/null | sed 's/^quick.sh on /Device: /; s/$/./'
	echo
	T --table tests --in "$1=$q/logs/test.log"
	if [ -s "$q/logs/bits.log" ]; then
		echo "Bits of the kernels as compiled by nvcc 11.8's ptxas (the embedded cubin), the driver's JIT and the GPU machine's nvcc (TestModuleBits, logs/bits.log):"
		echo
		grep 'module_test.go' "$q/logs/bits.log" | sed 's/^[^:]*:[0-9]*: /- /'
		echo
	fi
	[ -f "$q/logs/bench.log" ] && T --table bench --in "$q/logs/bench.log" --title "Benchmarks (logs/bench.log; CUDA events around the launches)" \
		--columns "$MS,GB/s=GB/s of K,%bandwidth=% of memory bandwidth,Gpairs/s,ms/build,ms/start,ms/reduce,wall-ms/reduce"
	[ -f "$q/logs/blocks.log" ] && T --table bench --in "$q/logs/blocks.log" --title "The dense product by chunking target (logs/blocks.log)" \
		--columns "$MS,GB/s=GB/s of K,%bandwidth=% of memory bandwidth"
	if [ -d "$q/train" ]; then
		T --table runs --in "$1=$q/train,cpu=results/full,$2=$3" --evals "$q/exact.jsonl" \
			--title "100 Adam steps on the GPU (gpnb train --backend cuda, full size, split 0, paper settings)" \
			--columns "name=run,steps,iterations,total_s:1,solver_s:1,build_s,start_s,reduce_s,test_rmse,test_llh,test_llh@cpu=CPU test LLH,dllh_abs@cpu=|ΔLLH| to the CPU's,total_s@cpu:1=CPU total s,speedup@cpu=speed-up over the CPU,total_s@$2:1=$2 total s,speedup@$2:2=speed-up over $2,speedup@cold:2=cold / warm time,iteration_ratio@cold=cold / warm iterations"
		for d in "$q"/train/*/; do
			[ -f "$d/result.json" ] || grep -h 'interrupted after' "$d/log" 2>/dev/null | sed "s|^gpnb train|$(basename "$d"): gpnb train|; s/$/ (its log: $(basename "$d")\/log)/"
		done
		echo
	fi
	[ -f "$q/gpytorch.jsonl" ] && T --table jsonl --in "$q/gpytorch.jsonl" --title "GPyTorch on the same GPU (gpytorch_exact.py: 100 Adam steps, lr 0.1, same data, kernel and initialisation)" \
		--columns "label,settings,train_seconds:1=train s,eval_seconds:1=eval s,test_rmse:4=test RMSE,test_llh:3=test LLH,outcome"
	return 0
}
{
	echo "# results/gpu: tables"
	echo
	echo "Rendered by \`sh results/gpu/render.sh\` (gpnb table) from the files here; nothing is typed by hand. README.md says what each call ran."
	echo
	echo "## The host-vector operator (calls 2 to 8)"
	echo
	grep -h '^NVIDIA' $G/logs/call2-env.log | sed 's/^/Device (nvidia-smi): /; s/$/./'
	echo
	T --table tests --in "call 2=$G/logs/call2-test.log,call 6=$G/logs/call6-test.log" --title "cuda/run-on-gpu.sh: the GPU kernels against the CPU operator"
	T --table bench --in "n = 20000=$G/logs/call2-bench-n20000.log,n = 50000=$G/logs/call2-bench-n50000.log" --title "H·V throughput in call 2 (17 right-hand sides padded to 32; 10 products each)" \
		--columns "ms/product|ms/reduce=ms per product,GFLOP/s,%fp64peak=% of fp64 peak,GB/s,%bandwidth=% of bandwidth"
	T --table bench --in "call6=$G/logs/call6-bench-n50000.log,call2=$G/logs/call2-bench-n50000.log" --title "H·V at n = 50000 in call 6 (built from 9587bcb; 5 products each), beside call 2's kernels" \
		--columns "ms/product|ms/reduce=ms per product,ms/product|ms/reduce@call2=call 2 ms,ms/product|ms/reduce@call2:ratio=call 2 / call 6,GB/s,%bandwidth=% of bandwidth"
	T --table runs --in "gpu=$G,cpu=results/full" --title "gpnb reproduce --backend cuda (full size, split 0, paper settings; jobs/)" \
		--columns "name=job,steps,iterations,total_s:1,solver_s:1,test_rmse,test_llh,paper_llh,evaluated,total_s@cpu:1=CPU total s,speedup@cpu=CPU / GPU"
	T --table runs --in "gpu=$G/train,cpu=results/full" --evals $G/exact.jsonl --title "100 Adam steps on the GPU (gpnb train --backend cuda, full size, split 0, paper settings; train/)" \
		--columns "dataset,n_train,solver,mode,iterations,total_s:1,solver_s:1,test_rmse,test_llh,paper_llh,total_s@cpu:1=CPU total s,speedup@cpu=GPU speed-up over the CPU,paper_min=paper A100 min,speedup@cold:2=cold / warm time,solver_ratio@cold=cold / warm solver time,iteration_ratio@cold=cold / warm iterations"
	T --table jsonl --in $G/gpytorch.jsonl --title "GPyTorch's exact GP on the same GPU (gpytorch_exact.py: its defaults, 100 Adam steps, lr 0.1)" \
		--columns "dataset,settings,train_seconds:1=train s,eval_seconds:1=eval s,test_rmse:4=test RMSE,test_llh:3=test LLH,outcome"
	grep -h 'step 100/100' $G/logs/call5-gpytorch.log | tail -n 1 | sed 's/^/keggdirected in float32 (logs\/call5-gpytorch.log): /; s/$/; the prediction did not finish within the call./'
	echo
	quick quick "host vectors" "$G/train"
	quick quick56 "call 9" "$G/quick/train"
} >"$G/tables.md.tmp"
mv "$G/tables.md.tmp" "$G/tables.md"
echo "wrote $G/tables.md" >&2
