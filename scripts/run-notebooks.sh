#!/usr/bin/env bash
# run-notebooks.sh executes GoNB notebooks headless and fails if any cell
# failed. Usage: scripts/run-notebooks.sh [NOTEBOOK.ipynb...]  (default:
# notebooks/*.ipynb).
#
# Each notebook runs with Debian's Jupyter (/usr/bin/python3, not the first
# python3 on PATH) and the gonb kernel, the way
#   jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=$NB_TIMEOUT
# runs it (scripts/nbcheck.py run: the same nbclient, but the executed copy is
# kept when a cell fails, so the Go compiler's message can be printed). A cell
# fails if execution stops on it, or if the executed notebook shows an "error"
# output or stderr with a Go compile error, a panic or a non-zero exit status.
# Executed copies and kernel logs are kept in $NB_OUT (default
# .cache/notebooks); the sources are untouched. Each notebook runs with its own
# new TMPDIR (notebooks write their files under os.TempDir()), removed when it
# passes and kept for inspection when it fails.
#
# Environment: NB_TIMEOUT (seconds per cell, default 600), NB_OUT, GPNB_DATA
# (passed on to the notebooks).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

NB_TIMEOUT=${NB_TIMEOUT:-600}
NB_OUT=${NB_OUT:-$root/.cache/notebooks}
PYTHON=/usr/bin/python3
# gonb needs goimports and gopls at run time.
export PATH="$(go env GOPATH)/bin:$PATH"
export GPNB_DATA=${GPNB_DATA:-$root/../shared/data/uci}

if [ $# -gt 0 ]; then
	nbs=("$@")
else
	shopt -s nullglob
	nbs=(notebooks/*.ipynb)
fi
if [ ${#nbs[@]} -eq 0 ]; then
	echo "run-notebooks: no notebooks found in notebooks/" >&2
	exit 1
fi
command -v gonb >/dev/null || { echo "run-notebooks: gonb not installed: run scripts/install-deps.sh tools kernel (or make notebook-deps)" >&2; exit 1; }
"$PYTHON" -c 'import nbclient, nbformat' 2>/dev/null || { echo "run-notebooks: $PYTHON lacks nbclient: install jupyter-nbconvert python3-nbclient (scripts/install-deps.sh apt)" >&2; exit 1; }

mkdir -p "$NB_OUT"
passed=0
failed=0
failures=()
for nb in "${nbs[@]}"; do
	name=$(basename "$nb")
	log="$NB_OUT/${name%.ipynb}.log"
	out="$NB_OUT/$name"
	rm -f "$out"
	printf '=== RUN   %s\n' "$nb"
	start=$(date +%s)
	ok=1
	# A fresh TMPDIR per notebook: notebooks keep their files under
	# os.TempDir(), and a run must not pick up an earlier run's results.
	# (Short paths under /tmp: GoNB puts a unix socket in it.)
	nbtmp=$(mktemp -d "${TMPDIR:-/tmp}/gpnb-nb.XXXXXX")
	# The kernel's own log (klog lines) goes to the log file; the cell report
	# to the terminal.
	TMPDIR="$nbtmp" "$PYTHON" scripts/nbcheck.py run "$NB_OUT" "$NB_TIMEOUT" "$nb" 2>"$log" || ok=0
	[ $ok = 1 ] || echo "(kernel log: $log; the notebook's files: $nbtmp)"
	[ $ok = 0 ] || rm -rf "$nbtmp"
	secs=$(($(date +%s) - start))
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
		printf -- '--- PASS: %s (%ds)\n' "$nb" "$secs"
	else
		failed=$((failed + 1))
		failures+=("$nb")
		printf -- '--- FAIL: %s (%ds)\n' "$nb" "$secs"
	fi
done
[ $failed -eq 0 ] || printf 'failed notebooks: %s\n' "${failures[*]}"
echo "notebooks: $passed passed, $failed failed"
[ $failed -eq 0 ]
