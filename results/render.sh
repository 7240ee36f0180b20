#!/bin/sh
# Renders every table of results/ with gpnb table from the files there:
# each experiment's tables.md (RENDER_ONLY=1 sh results/<experiment>[/<part>]/run.sh;
# results/gpu/render.sh) and the headline of results/README.md, the block
# between its "headline" markers. Usage: sh results/render.sh
set -eu
cd "$(dirname "$0")/.."
. scripts/results.sh # GPNB
export GPNB
for run in results/*/run.sh results/*/*/run.sh; do
	case "$run" in
	results/gpu/*) sh results/gpu/render.sh ;; # its run.sh runs on the GPU machine
	*) RENDER_ONLY=1 sh "$run" ;;
	esac
done
"$GPNB" table --in results/full,results/full-authors-rules --table headline --out results/.headline.md
awk -v table=results/.headline.md '
	/^<!-- headline/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
	/^<!-- \/headline -->/ { skip = 0 }
	!skip' results/README.md >results/.README.md
mv results/.README.md results/README.md
rm results/.headline.md
echo "rendered the tables of results/ and the headline of results/README.md" >&2
