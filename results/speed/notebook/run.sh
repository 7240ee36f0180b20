#!/bin/sh
# Notebook 01 in its default build against pure Go
# (results/speed/notebook/README.md): run.py executes the notebook in turn
# in both builds (ROUNDS, default pure,tagged,pure,tagged), appending a line
# a run to raw.jsonl and the means to summary.jsonl; then tables.md is
# rendered with gpnb table from those files. RENDER_ONLY=1 only renders.
set -eu
cd "$(dirname "$0")/../../.."
. scripts/results.sh # GPNB, GPNB_DATA
D=results/speed/notebook
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	/usr/bin/python3 "$D/run.py" ${ROUNDS:-}
fi
{
	echo "# results/speed/notebook: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh $D/run.sh\` (gpnb table) from [raw.jsonl](raw.jsonl) and [summary.jsonl](summary.jsonl); nothing is typed by hand. See [README.md](README.md)."
	echo
	"$GPNB" table --table jsonl --in "$D/raw.jsonl" --title "Notebook 01, run by run (in turn)" \
		--columns "build,build_line=build line (first cell),training_cell_s:0=training cell s,in_process_s:1=in-process s (cold + warm),iterations=solver iterations (cold · warm),notebook_s:0=notebook s,load_before:2=load before,load_after:2=load after"
	"$GPNB" table --table jsonl --in "$D/summary.jsonl" --title "Means of each build's runs" \
		--columns "measure,pure_runs=pure-Go runs,tagged_runs=default runs,pure_s:1=pure Go s,tagged_s:1=default first cell s,ratio:2=pure / default"
} >"$D/tables.md.tmp"
mv "$D/tables.md.tmp" "$D/tables.md"
