#!/bin/sh
# Renders the tables of a gpnb reproduce run and the README that says what
# was run. Usage: results/render.sh [DIR] (default: results/run). Every
# number in the output comes from `gpnb table` reading DIR/jobs/*/result.json
# or from DIR/status.json; nothing is typed by hand.
set -eu
cd "$(dirname "$0")/.."
DIR=${1:-results/run}
OUT=$(dirname "$DIR")
GPNB=${GPNB:-bin/gpnb}
[ -x "$GPNB" ] || go build -buildvcs=auto -tags openblas -o "$GPNB" ./cmd/gpnb

"$GPNB" table --in "$DIR" --table 1 --unit min --out "$OUT/table1.md"
"$GPNB" table --in "$DIR" --table 2 --unit min --out "$OUT/table2.md"
"$GPNB" table --in "$DIR" --table paper --out "$OUT/paper.md"
"$GPNB" table --in "$DIR" --table 2 --unit s --format csv --out "$OUT/table2.csv"
"$GPNB" table --in "$DIR" --table all --unit min --format html --out "$OUT/tables.html"
# The full-size runs (results/run-full.sh), those that have finished.
FULL="$OUT/full"
if [ -d "$FULL/jobs" ] && ls "$FULL"/jobs/*/result.json >/dev/null 2>&1; then
	"$GPNB" table --in "$FULL" --table 2 --unit min --out "$OUT/full.md"
	"$GPNB" table --in "$FULL" --table paper --out "$OUT/full-paper.md"
	"$GPNB" table --in "$FULL" --table 1 --unit min --out "$OUT/full-table1.md"
else
	rm -f "$OUT/full.md" "$OUT/full-paper.md" "$OUT/full-table1.md"
fi
# Where every planned full-size job stands (gpnb reproduce --dry-run).
{ GPNB="$GPNB" DRYRUN=1 sh results/run-full.sh; GPNB="$GPNB" DRYRUN=1 sh results/run-large.sh; } | grep -v ' jobs in ' > "$OUT/full-plan.txt"

# The stopping-rule comparison (results/run-fidelity.sh, render-fidelity.sh)
# and the commands for the full-size SGD re-runs it motivates.
if [ -d "$OUT/fidelity" ]; then
	GPNB="$GPNB" sh results/render-fidelity.sh
	python3 results/fidelity.py "$OUT/fidelity" --rerun >"$OUT/.rerun.md"
	# The finished re-runs' own tables (gpnb table --in results/full-rules):
	# Table 2 (time, iterations, test LLH; a speed-up where cold and warm
	# have both finished) and the comparison with the paper.
	if ls "$OUT"/full-rules/jobs/*/result.json >/dev/null 2>&1; then
		for t in 2 paper; do
			"$GPNB" table --in "$OUT/full-rules" --table $t --unit min | sed 's/^# /#### /; s/^## /#### /; s/^### /#### /'
			echo
		done >>"$OUT/.rerun.md"
	fi
else
	rm -f "$OUT/.rerun.md"
fi

python3 - "$DIR" "$OUT" <<'PY'
import json, sys, os, glob
d, out = sys.argv[1], sys.argv[2]
st = json.load(open(os.path.join(d, "status.json")))
jobs = sorted(glob.glob(os.path.join(d, "jobs", "*", "job.json")))
def solver_settings(jj):
    """(solver, flat settings) of a job.json: the legacy layout has them as
    fields; the current one ({"config": gpnb.Config}) is flattened here."""
    if "config" not in jj:
        return jj["solver"], jj["settings"]
    c = jj["config"]
    m = c.get("solver") or {}
    name = "cholesky" if c.get("estimator") == "exact" else m.get("name", "cg")
    tol = c.get("settings") or {}
    sgd_lr = m.get("learning_rate") or (m.get("raw_learning_rate") and "raw %g" % m["raw_learning_rate"])
    return name, {"kernel": c.get("kernel"), "probes": c.get("probes"), "learning_rate": c.get("learning_rate"),
        "rel_tol_mean": tol.get("rel_tol_mean"), "rel_tol_probes": tol.get("rel_tol_probes"), "seed": c.get("seed"),
        "block_size": m.get("block_size"), "batch_size": m.get("batch_size"), "momentum": m.get("momentum"),
        "sgd_learning_rate": sgd_lr, "precond_rank": m.get("precond_rank")}
sizes = {}
for j in jobs:
    jj = json.load(open(j))
    r = os.path.join(os.path.dirname(j), "result.json")
    if os.path.exists(r):
        rr = json.load(open(r))
        sizes[jj["dataset"]] = (rr["n_train"], rr["n_test"], rr["d"], jj.get("subset", 0))
env = st.get("environment", {})
settings = {}
for j in jobs:
    solver, flat = solver_settings(json.load(open(j)))
    settings.setdefault(solver, flat)
def setting(solver, key, default="default"):
    v = settings.get(solver, {}).get(key)
    return default if v in (None, 0) else v
lines = ["# Reproduction results", "",
 "Measured with `gpnb reproduce` and rendered with `gpnb table` by `results/render.sh`; no figure here is typed by hand.", "",
 "## What was run", "",
 "The grid was run by [run.sh](run.sh) (stages of `gpnb reproduce` into one directory):", "", "```sh",
 open("results/run.sh").read().strip() if os.path.exists("results/run.sh") else "", "```", "",
 "The last `gpnb reproduce` invocation recorded in status.json: `%s`." % " ".join(st.get("command", [])), "",
 "- Jobs finished (with result.json): %d of %d started; the last invocation ended %s." % (sum(os.path.exists(os.path.join(os.path.dirname(j), "result.json")) for j in jobs), len(jobs), st["state"]),
 "- Machine: %s, %s cores (GOMAXPROCS %s), %s/%s; Go %s; BLAS %s; build tags `%s`." % (env.get("cpu", "?"), env.get("numcpu", "?"), env.get("gomaxprocs", "?"), env.get("goos", "?"), env.get("goarch", "?"), env.get("go", "?"), env.get("blas", "?"), env.get("-tags", "")),
 "- Last run started %s, last update %s (UTC)." % (st["started"], st["updated"]),
 "", "| dataset | n train | n test | d | subset |", "|---|--:|--:|--:|--:|"]
for k, (n, nt, dd, sub) in sorted(sizes.items()):
    lines.append("| %s | %d | %d | %d | %s |" % (k, n, nt, dd, sub if sub else "all"))
any_s = next(iter(settings.values()), {})
lines += ["", "Settings (from the jobs' job.json): kernel %s, %s probes, Adam learning rate %s, tolerances %s (mean) and %s (probes), seed %s; AP block size %s; SGD batch size %s, momentum %s, learning rate %s (in the solvers package's normalised units; 'default' = its documented default); CG preconditioner rank %s." % (
    any_s.get("kernel"), settings.get("cg", any_s).get("probes"), any_s.get("learning_rate"), settings.get("cg", any_s).get("rel_tol_mean"),
    settings.get("cg", any_s).get("rel_tol_probes"), any_s.get("seed"), setting("ap", "block_size"), setting("sgd", "batch_size"),
    setting("sgd", "momentum"), setting("sgd", "sgd_learning_rate"), setting("cg", "precond_rank", "0 (none, as in the paper)")),
  "", "## Differences from the paper's set-up", "",
  "- The paper ran on an A100 GPU in double precision on the full training splits, 10 splits each. We ran on the CPU above, on the splits and training-set sizes in the table; where the subset column is not 'all', each split's training part was cut to a random subset (the test part is whole). Runtimes, and so speed-ups, depend on the machine and on n; the solver-iteration ratio does not depend on the machine.",
  "- With a subset, the AP block size and SGD batch size given above are the ones used; see the command. The paper used block 2000 and batch 1000 at n ≈ 13500–44000.",
  "- SGD's learning rate in this subset run is the solvers package's normalised default (`--sgd-lr 0`: a step scaled per mini-batch by its curvature, see solvers.SGD). The full-size runs below use the paper's per-dataset rates in the paper's units (pol 90, elevators 20, bike 100, protein 20, keggdirected 30, solvers.SGD.RawLearningRate: what `--sgd-lr auto`, gpnb reproduce's default, gives on all of a split).",
  "- Test log-likelihood and RMSE are computed on the z-scored scale by Cholesky (n ≤ Config.MaxExactN, default gpnb.DefaultMaxExactN), as in the paper."]
lines += ["", "## Tables", "",
 "- [table1.md](table1.md): the paper's Table 1 (test LLH, total runtime, average warm-start speed-up)",
 "- [table2.md](table2.md): the paper's Table 2 (RMSE, LLH, runtimes, speed-up, iteration ratio) — [table2.csv](table2.csv) in seconds",
 "- [paper.md](paper.md): our values next to the paper's", "- [tables.html](tables.html): both tables, styled", ""]
for f in ("table1.md", "paper.md"):
    lines += [open(os.path.join(out, f)).read()]
full = os.path.join(out, "full.md")
plan = [l.rstrip() for l in open(os.path.join(out, "full-plan.txt")) if l.strip()]
if os.path.exists(full):
    ndone = sum(" done: " in l for l in plan)
    lines += ["## Full-size runs", "",
      "Split 0 with all training points and the paper's settings (AP block 2000; SGD batch 1000 and the paper's learning rates), by [run-full.sh](run-full.sh) (pol, elevators, bike: CG, AP and SGD, cold and warm) and [run-large.sh](run-large.sh) (protein and keggdirected: CG and AP with warm start) into `full/`. Long jobs run in stages over several sessions and resume from their step checkpoints (an unfinished job's checkpoint is committed with `git add -f`, since a new session's checkout holds only what git does; a cold job's is a few kB); a job's runtime is the sum of its steps' wall times, whatever session ran them. %d of the %d planned jobs have finished; where a dataset and solver lack the cold or the warm run, the speed-up is shown as —." % (ndone, len(plan)), "",
      open(full).read(), open(os.path.join(out, "full-table1.md")).read(), open(os.path.join(out, "full-paper.md")).read(),
      "### State of every planned full-size job", "",
      "From `DRYRUN=1 sh results/run-full.sh; DRYRUN=1 sh results/run-large.sh` ([full-plan.txt](full-plan.txt)); 'operator —' marks results written before result.json recorded the operator (those runs used the default dense float64 cache). Each segment of steps says which build ran it, the machine's mean load, and the machine's dense H·V rate measured as it began (`H·V N GFLOP/s`, as `gpnb bench` measures it at n = 3000; segments run before the runner recorded it have none): segments on machines of different speeds are not comparable in wall time.", "", "```"] + plan + ["```", ""]
if os.path.exists(os.path.join(out, "ablation.md")):
    lines += ["## Beyond the paper: pathwise estimator and solver budgets", "",
      "The ablation of the follow-up paper's techniques (Lin et al., NeurIPS 2024) with CG — Hutchinson and pathwise estimators, cold and warm, and solver budgets of 10, 20 and 50 epochs a step — on pol, elevators and bike subsets: [ablation.md](ablation.md) (run by [run-ablation.sh](run-ablation.sh) into `ablation/`, tables by `gpnb table`)" + (
      "; the full-size pol pair (Hutchinson and pathwise with warm start, all 13500 training points): [ablation-full.md](ablation-full.md)" if os.path.exists(os.path.join(out, "ablation-full.md")) else "") + ".", ""]
if os.path.exists(os.path.join(out, "gpu", "tables.md")):
    lines += ["## GPU runs", "",
      "100-step runs with the GPU backend on an NVIDIA H100 and, with the solves on the device, an H200 (pol and keggdirected CG, pol AP; quick/), the kernels' tests and benchmarks on them, GPyTorch on the same GPUs, and the full-size SGD re-runs of issue 40 (fidelity.sh): [gpu/README.md](gpu/README.md), tables in [gpu/tables.md](gpu/tables.md) (rendered by `python3 results/gpu/render.py`).", ""]
rerun = os.path.join(out, ".rerun.md")
if os.path.exists(rerun):
    lines += ["## Stopping rules: the paper's text and the authors' code", "",
      "The authors' code stops its solvers by other rules than the paper's text (DESIGN.md, \"gpnb and the authors' code\"); [fidelity.md](fidelity.md) compares both rule sets on 4000-point subsets of pol, elevators and bike, every solver cold and warm ([run-fidelity.sh](run-fidelity.sh), rendered by [render-fidelity.sh](render-fidelity.sh)). The capped SGD rows above were run under the paper's-text rules.", "",
      open(rerun).read()]
    os.remove(rerun)
open(os.path.join(out, "README.md"), "w").write("\n".join(lines) + "\n")
PY
echo "wrote $OUT/README.md, table1.md, table2.md, paper.md, table2.csv, tables.html"
