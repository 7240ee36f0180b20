#!/bin/sh
# Renders results/fidelity.md from the runs of results/run-fidelity.sh: the
# paper's Table 2 for each rule set (gpnb table) and the per-step comparison
# (results/fidelity.py). Every number comes from the jobs' result.json and
# runs.json; the notes at the top are fixed text. Usage: results/render-fidelity.sh
set -eu
cd "$(dirname "$0")/.."
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb
DIR=results/fidelity
OUT=results/fidelity.md
# A job cut short (no result.json) is shown from its checkpoint: gpnb inspect
# writes its history to partial.json, which is committed beside it. The
# full-size re-runs under the authors' rules (results/full-rules, shown by
# fidelity.py --rerun in results/README.md) are read the same way.
for jd in "$DIR"/*/jobs/* results/full-rules/jobs/*; do
	[ -f "$jd/job.json" ] || continue
	if [ -f "$jd/result.json" ]; then
		rm -f "$jd/partial.json"
	elif [ -f "$jd/checkpoint" ]; then
		"$GPNB" inspect "$jd" --json "$jd/partial.json"
	fi
done
{
	cat results/fidelity-notes.md
	echo
	python3 results/fidelity.py "$DIR"
	for rules in paper joint reference; do
		[ -d "$DIR/$rules/jobs" ] || continue
		ls "$DIR/$rules"/jobs/*/result.json >/dev/null 2>&1 || continue
		echo "## Table 2 under the rule set \`$rules\` (gpnb table --in $DIR/$rules)"
		echo
		"$GPNB" table --in "$DIR/$rules" --table 2 --unit s | sed 's/^# /### /; s/^## /### /'
		echo
	done
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT"
