#!/bin/bash
# results/gpu/fidelity.sh: issue 40's SGD runs on a GPU machine, in one
# device call (at most about 8 minutes: FIDELITY_SECONDS, default 480). The
# runner checkpoints after every step, so whatever a call leaves unfinished
# the next call (or the CPU) resumes. Run from the repository root with the
# binaries of results/gpu/build.sh in .cuda/ (the GPU machine has no Go);
# the jobs' directories travel with the working tree (an unfinished job's
# checkpoint is committed with git add -f, so that it travels too):
#
#	results/gpu/build.sh                                  # development machine
#	results/gpu/fidelity.sh                               # GPU machine, carrying .cuda
#	for f in <files_at>/*.tar.gz; do tar -xzf "$f"; done  # development machine, repository root
#	RENDER_ONLY=1 sh results/fidelity/run.sh              # → results/fidelity/tables.md
#	RENDER_ONLY=1 sh results/full-authors-rules/run.sh    # the full-size rows
#
# Stages, each under its own limit (SIGINT first, so gpnb saves its
# checkpoint):
#
#	subsets  results/fidelity/run.sh, SGD cold and warm on the 4000-point
#	         subsets of pol and bike under both rule sets (elevators diverges
#	         at the paper's rate: results/fidelity/README.md); at most 30 % of
#	         the time left each
#	full     gpnb reproduce --rules authors --out results/full-authors-rules:
#	         pol and bike SGD cold at full size (split 0, 100 steps), the rows
#	         that hit the 50 000-iteration cap under the paper's text in
#	         results/full, under the cap CAP of results/full-authors-rules/run.sh
#	         (bike cold outgrows 50 000 under these rules too); the rest of
#	         the time
#
# Each output directory's jobs come back as one archive per directory
# ($OUT/full-authors-rules.tar.gz, $OUT/fidelity-paper.tar.gz,
# $OUT/fidelity-reference.tar.gz: job.json, runs.json, result.json, and the
# checkpoint of a job not yet finished), unpacked at the repository root.
set -u
root=$(pwd)
OUT=${OUT:-$root/gpu-logs}
mkdir -p "$OUT"
deadline=$((SECONDS + ${FIDELITY_SECONDS:-480}))
keep=30  # seconds kept for packing
grace=30 # seconds between a stage's SIGINT and SIGKILL (a full-size checkpoint is written)
sum=$OUT/summary.log
: >"$sum"

# budget SHARE: the seconds a stage may take, SHARE percent of the time
# left (the last stage gets all of it; 0: none left).
budget() {
	local t=$(((deadline - SECONDS - keep) * $1 / 100))
	((t < 20)) && t=0
	echo $t
}
. "$root/results/gpu/common.sh" # GPNB, GPNB_DATA, note, stage
if [ ! -x "$GPNB" ]; then
	note "no .cuda/gpnb: run results/gpu/build.sh on the development machine and carry .cuda"
	exit 1
fi
note "fidelity.sh on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"

# The subsets first: at n = 4000 an SGD iteration is a few launches, so
# their jobs take seconds to minutes; the full-size jobs then get the rest.
for rules in paper reference; do
	stage "subsets $rules" 30 env GPNB="$GPNB" RULES=$rules DATASETS=pol,bike STAGES="sgd:cold sgd:warm" \
		FLAGS="--backend cuda" sh results/fidelity/run.sh >>"$OUT/subsets.log" 2>&1
done
tail -n 4 "$OUT/subsets.log" | tee -a "$sum"
cap=$(sed -n 's/^CAP=//p' results/full-authors-rules/run.sh) # the one place it is set
stage full 100 "$GPNB" reproduce --backend cuda --datasets pol,bike --splits 0 --solvers sgd --modes cold,warm --steps 100 \
	--exact never --rules authors --max-iterations "$cap" --out results/full-authors-rules >>"$OUT/full.log" 2>&1
tail -n 3 "$OUT/full.log" | tee -a "$sum"

for d in full-authors-rules fidelity/paper fidelity/reference; do
	tar -czf "$OUT/$(echo "$d" | tr / -).tar.gz" --exclude lock --exclude '*.tmp' results/"$d"
done
note "fidelity.sh: done in $SECONDS s"
ls -la "$OUT"
