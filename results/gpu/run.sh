#!/bin/bash
# The GPU runs of results/gpu, on a machine with an NVIDIA GPU (here: the
# H100 lent through the device tool; see results/gpu/README.md). Run from
# the repository root:
#
#	results/gpu/run.sh STAGE...
#
# Stages, run in the order given:
#
#	tests[:SECONDS]       cuda/run-on-gpu.sh: the GPU kernels against the CPU
#	                      operator, and the H·V benchmark (logs in $OUT)
#	repro:DS:SOLVERS:MODES[:SECONDS]
#	                      gpnb reproduce --backend cuda over datasets DS
#	                      (comma-separated), solvers and modes, full size,
#	                      split 0, the paper's settings, into results/gpu;
#	                      stopped by SIGINT after SECONDS (it checkpoints;
#	                      the next call resumes)
#	train:DS:SOLVER:MODE[:SECONDS]
#	                      gpnb train --backend cuda, full size, split 0, the
#	                      paper's settings, MODE cold or warm, into
#	                      results/gpu/train/DS-SOLVER-MODE/result.json (no
#	                      evaluation: see exact); stopped by SIGINT after
#	                      SECONDS, checkpointed, resumed by the next call
#	exact                 results/gpu/eval_exact.py: exact test RMSE and LLH
#	                      (float64 Cholesky on the GPU, PyTorch) of every
#	                      finished train result, into results/gpu/exact.jsonl
#	gpytorch:DS[:SECONDS[:DTYPE]]
#	                      results/gpu/gpytorch_exact.py on DS (float64, or
#	                      DTYPE float32), appending to results/gpu/gpytorch.jsonl
#
# Binaries, built beforehand where Go is (the GPU machine has none):
#
#	go build -tags cuda -o .cuda/gpnb ./cmd/gpnb    (or -tags cuda,openblas, see below)
#	go test -c -tags cuda -o .cuda/cuda.test ./cuda
#
# Data: $GPNB_DATA (default .cuda/uci, a copy of the five UCI folders).
# Checkpoints of unfinished runs are restored from .cuda/ckpt.tar when it
# exists (a repro stage leaves the one it stopped in $OUT/ckpt.tar; a train
# stage's: tar -cf .cuda/ckpt.tar results/gpu/*/*/checkpoint), and everything
# under results/gpu but the checkpoints is packed into
# $OUT/results-gpu.tar.gz at the end.
set -u
root=$(pwd)
OUT=${OUT:-$root/gpu-logs}
mkdir -p "$OUT" results/gpu
export GPNB_DATA=${GPNB_DATA:-$root/.cuda/uci}
GPNB=${GPNB:-.cuda/gpnb}
[ -f .cuda/ckpt.tar ] && tar -xf .cuda/ckpt.tar
# A gpnb built with -tags cuda,openblas needs libopenblas.so.0, libgfortran.so.5
# and libquadmath.so.0, which the GPU machine lacks: they travel packed in
# .cuda/lib.tar.gz (OpenBLAS factorises AP's blocks and the evaluation's
# Cholesky on the host; pure-Go BLAS is several times slower there).
if [ -f .cuda/lib.tar.gz ]; then
	mkdir -p /tmp/gpnb-lib && tar -xzf .cuda/lib.tar.gz -C /tmp/gpnb-lib
	export LD_LIBRARY_PATH=/tmp/gpnb-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
status=0
for stage in "$@"; do
	IFS=: read -r what a b c d <<<"$stage"
	echo "== $stage ($(date -u +%T))"
	case $what in
	tests)
		timeout -k 10 "${a:-300}" cuda/run-on-gpu.sh .cuda/cuda.test || status=1
		;;
	repro)
		timeout -s INT -k 30 "${d:-540}" "$GPNB" reproduce --backend cuda --datasets "$a" --solvers "$b" \
			--modes "$c" --splits 0 --exact never --rules paper-text --out results/gpu 2>&1 | tee -a "$OUT/repro.log" | grep -v '^\[.*step [0-9]*[1-9]/' || true
		# The checkpoint of a job the time limit stopped (one at most:
		# the runner runs its jobs one after another) comes back in
		# $OUT/ckpt.tar; copied to .cuda/ckpt.tar, the next call resumes it.
		ck=$(ls results/gpu/jobs/*/checkpoint 2>/dev/null)
		[ -z "$ck" ] || tar -cf "$OUT/ckpt.tar" $ck
		;;
	train)
		id=$a-$b-$c
		dir=results/gpu/train/$id
		mkdir -p "$dir"
		if [ -f "$dir/result.json" ]; then
			echo "$id: done"
			continue
		fi
		warm=false
		[ "$c" = warm ] && warm=true
		args=(--backend cuda --data "$a" --split 0 --solver "$b" --warm-start="$warm" --steps 100 --eval=false
			--residuals=false --quiet --verbose --checkpoint "$dir/checkpoint" --json "$dir/result.json.tmp")
		[ -f "$dir/checkpoint" ] && args+=(--resume "$dir/checkpoint")
		timeout -s INT -k 30 "${d:-540}" "$GPNB" train "${args[@]}" >>"$dir/log" 2>&1
		rc=$?
		tail -n 3 "$dir/log"
		if [ $rc -eq 0 ] && [ -s "$dir/result.json.tmp" ]; then
			mv "$dir/result.json.tmp" "$dir/result.json"
			rm -f "$dir/checkpoint"
			echo "$id: finished"
		else
			rm -f "$dir/result.json.tmp"
			echo "$id: stopped (exit $rc); the next call resumes from its checkpoint"
		fi
		;;
	exact)
		todo=()
		for f in results/gpu/train/*/result.json; do
			[ -f "$f" ] || continue
			grep -qs "\"file\": \"$f\"" results/gpu/exact.jsonl || todo+=("$f")
		done
		[ ${#todo[@]} -eq 0 ] || PYTHONUNBUFFERED=1 timeout -k 10 "${a:-300}" python3 results/gpu/eval_exact.py \
			--out results/gpu/exact.jsonl "${todo[@]}" 2>&1 | tee -a "$OUT/exact.log" || status=1
		;;
	gpytorch)
		PYTHONUNBUFFERED=1 timeout -k 10 "${b:-540}" python3 results/gpu/gpytorch_exact.py --datasets "$a" --dtype "${c:-float64}" \
			--out results/gpu/gpytorch.jsonl 2>&1 | tee -a "$OUT/gpytorch.log" || status=1
		;;
	*)
		echo "unknown stage $stage"
		status=1
		;;
	esac
	# After every stage, so that a call cut short still brings results back.
	# Checkpoints stay behind (too large to bring back): a run must finish in
	# its call.
	tar -czf "$OUT/results-gpu.tar.gz" --exclude=checkpoint --exclude=logs results/gpu
done
exit $status
