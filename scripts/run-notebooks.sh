#!/usr/bin/env bash
# run-notebooks.sh executes GoNB notebooks headless and fails if any cell
# failed or lost an output. Usage: scripts/run-notebooks.sh [NOTEBOOK.ipynb...]
# (default: notebooks/*.ipynb, then notebooks/testdata/*.ipynb).
#
# Each notebook runs with Debian's Jupyter (/usr/bin/python3, not the first
# python3 on PATH) and the gonb kernel, the way
#   jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=$NB_TIMEOUT
# runs it (scripts/nbcheck.py run: the same nbclient, but the executed copy is
# kept when a cell fails, so the Go compiler's message can be printed). A cell
# fails if execution stops on it, if the executed notebook shows an "error"
# output or stderr with a Go compile error, a panic or a non-zero exit status,
# or if its viz outputs are not exactly the ones viz logged while it ran (a
# chart lost on its way to the notebook). The executed copy must carry the
# echarts library at most once, and every chart panel of it must draw in
# headless chromium once rendered as `jupyter nbconvert --to html` does
# (scripts/nbcheck.py drawn). Executed copies and kernel logs are kept in
# $NB_OUT (default .cache/notebooks), with their sizes printed; the sources are
# untouched. Each notebook runs with its own new TMPDIR (notebooks write their
# files under os.TempDir()), removed when it passes and kept for inspection
# when it fails.
#
# Notebooks under notebooks/testdata/ are the ones written as a user would,
# outside the repository: each is copied into its new TMPDIR and run there,
# NB_REPEAT times (default 5: a lost output shows up as a flaky run), with
# GPNB_CHECKOUT set to this checkout's absolute path, so that their first cell
# can be `go work use . "$GPNB_CHECKOUT"` (the README's first cell for a
# notebook anywhere on disk, with the path in a variable).
#
# Environment: NB_TIMEOUT (seconds per cell, default 600), NB_OUT, NB_REPEAT,
# GPNB_DATA (passed on to the notebooks), GPNB_REQUIRE_BROWSER=1 (fail rather
# than skip the drawing check without chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

NB_TIMEOUT=${NB_TIMEOUT:-600}
NB_OUT=${NB_OUT:-$root/.cache/notebooks}
NB_REPEAT=${NB_REPEAT:-5}
PYTHON=/usr/bin/python3
export GPNB_CHECKOUT=$root
# gonb needs goimports and gopls at run time.
export PATH="$(go env GOPATH)/bin:$PATH"
export GPNB_DATA=${GPNB_DATA:-$root/../shared/data/uci}

if [ $# -gt 0 ]; then
	nbs=("$@")
else
	shopt -s nullglob
	nbs=(notebooks/*.ipynb notebooks/testdata/*.ipynb)
fi
if [ ${#nbs[@]} -eq 0 ]; then
	echo "run-notebooks: no notebooks found in notebooks/" >&2
	exit 1
fi
command -v gonb >/dev/null || { echo "run-notebooks: gonb not installed: run scripts/install-deps.sh tools kernel (or make notebook-deps)" >&2; exit 1; }
"$PYTHON" -c 'import nbclient, nbformat' 2>/dev/null || { echo "run-notebooks: $PYTHON lacks nbclient: install jupyter-nbconvert python3-nbclient (scripts/install-deps.sh apt)" >&2; exit 1; }
# The notebooks' first cell compiles every cell with -tags=openblas.
/sbin/ldconfig -p 2>/dev/null | grep 'libopenblas\.so ' >/dev/null || { echo "run-notebooks: libopenblas.so not found (/sbin/ldconfig -p), which the notebooks' first cell (%goflags -tags=openblas) links: install libopenblas-dev (scripts/install-deps.sh apt)" >&2; exit 1; }

mkdir -p "$NB_OUT"
passed=0
failed=0
failures=()
# run_one NB NAME DIR: executes NB (kept in the folder DIR, its own TMPDIR)
# into $NB_OUT/NAME.ipynb and checks it.
run_one() {
	local nb=$1 name=$2 nbtmp=$3
	local log="$NB_OUT/$name.log" out="$NB_OUT/$name.ipynb"
	rm -f "$out"
	printf '=== RUN   %s\n' "$name"
	local start ok=1 secs
	start=$(date +%s)
	# The kernel's own log (klog lines) goes to the log file; the cell report
	# to the terminal.
	TMPDIR="$nbtmp" "$PYTHON" scripts/nbcheck.py run "$NB_OUT" "$NB_TIMEOUT" "$nb" "$name.ipynb" 2>"$log" || ok=0
	if [ -f "$out" ]; then
		"$PYTHON" scripts/nbcheck.py drawn "$out" || ok=0
		printf '%s: %s bytes\n' "$out" "$(stat -c %s "$out")"
	fi
	[ $ok = 1 ] || echo "(kernel log: $log; the notebook's files: $nbtmp)"
	[ $ok = 0 ] || rm -rf "$nbtmp"
	secs=$(($(date +%s) - start))
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		printf -- '--- PASS: %s (%ds)\n' "$name" "$secs"
	else
		failed=$((failed + 1))
		failures+=("$name")
		printf -- '--- FAIL: %s (%ds)\n' "$name" "$secs"
	fi
}

for nb in "${nbs[@]}"; do
	base=$(basename "$nb" .ipynb)
	# A fresh TMPDIR per run: notebooks keep their files under
	# os.TempDir(), and a run must not pick up an earlier run's results.
	# (Short paths under /tmp: GoNB puts a unix socket in it.)
	case "$nb" in
	*/testdata/*)
		for k in $(seq 1 "$NB_REPEAT"); do
			nbtmp=$(mktemp -d "${TMPDIR:-/tmp}/gpnb-nb.XXXXXX")
			mkdir "$nbtmp/nb"
			cp "$nb" "$nbtmp/nb/"
			run_one "$nbtmp/nb/$(basename "$nb")" "$base-run$k" "$nbtmp"
		done
		;;
	*)
		nbtmp=$(mktemp -d "${TMPDIR:-/tmp}/gpnb-nb.XXXXXX")
		run_one "$nb" "$base" "$nbtmp"
		;;
	esac
done
[ $failed -eq 0 ] || printf 'failed notebooks: %s\n' "${failures[*]}"
echo "notebooks: $passed passed, $failed failed"
[ $failed -eq 0 ]
