#!/usr/bin/env python3
"""Renders results/gpu/tables.md from the files the GPU runs left in
results/gpu (see README.md there): the train results, the exact
evaluations, the GPyTorch baseline, the test and benchmark logs, and, for
GPU-against-CPU ratios, the matching CPU runs in results/full/jobs. Every
figure is read from those files; nothing is typed by hand.

	python3 results/gpu/render.py    (from the repository root)
"""
import json
import os
import re
import sys
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAPER_LLH = {"pol": 1.27, "elevators": -0.39, "bike": 2.15, "protein": -0.59, "keggdirected": 1.08}
# The paper's A100 runtimes (minutes) of CG with warm start, quoted by the
# issue as the targets' reference: pol 2.0, keggdirected 18.8.
PAPER_A100_MIN = {"pol": 2.0, "keggdirected": 18.8}


def jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            out = [json.loads(line) for line in f if line.strip()]
    return out


def bench_lines(path):
    """The Benchmark lines of a go test -bench log: (name, {unit: value})."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("Benchmark"):
                    name = line.split()[0].rsplit("-", 1)[0].replace("Benchmark", "")
                    out.append((name, dict((u, v) for v, u in re.findall(r"([0-9.]+) (\S+)", line))))
    return out


def ms_of(m, *units):
    """The milliseconds of a benchmark line's metrics m: the first of units it reports (None if none)."""
    for u in units or ("ms/product", "ms/reduce"):
        if m.get(u):
            return m[u]
    return None


def test_summary(call, heading):
    """The heading and run-on-gpu.sh's test counts from logs/CALL-summary.log; [] without the log."""
    path = os.path.join(HERE, "logs", f"{call}-summary.log")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        m = re.search(r"tests: exit (\d+), (\d+) passed, (\d+) skipped, (\d+) failed", f.read())
    out = [heading, ""]
    if m:
        out += [f"`cuda/run-on-gpu.sh` (logs/{call}-test.log): exit {m[1]}, {m[2]} tests passed, {m[3]} skipped, {m[4]} failed.", ""]
    return out


def fmt(v, p=3):
    return "—" if v is None else f"{v:.{p}f}"


def gpytorch_figures(g):
    """The figures of a finished GPyTorch run (a gpytorch.jsonl line) as table cells: train s, eval s, test RMSE, test LLH."""
    return f"{g['train_seconds']:.1f} | {g['eval_seconds']:.1f} | {g['test_rmse']:.4f} | {g['test_llh']:.3f}"


def gpytorch_table(gp, title, header, align, finished, failed):
    """The table of the GPyTorch runs gp (gpytorch.jsonl's lines) under title: a row a run, finished(g) for one
    that finished and failed(g) for one that stopped with an error."""
    return [title, "", header, align] + [failed(g) if "error" in g else finished(g) for g in gp]


def main():
    lines = ["# GPU results (rendered by results/gpu/render.py from the files beside it)", ""]
    # Tests and benchmark.
    lines += test_summary("call2", "## GPU kernels against the CPU operator")
    env = os.path.join(HERE, "logs", "call2-env.log")
    if os.path.exists(env):
        with open(env) as f:
            for line in f:
                if line.startswith("NVIDIA"):  # nvidia-smi's CSV query line
                    lines += [f"Device (nvidia-smi): {line.strip()}", ""]
                    break
    rows = [(n, name, m) for n in ("20000", "50000") for name, m in bench_lines(os.path.join(HERE, "logs", f"call2-bench-n{n}.log"))]
    if rows:
        lines += ["## H·V throughput (17 right-hand sides padded to 32; go test -bench, 10 products each)", "",
                  "| n | benchmark | ms per product | GFLOP/s | % of fp64 peak | GB/s | % of bandwidth |",
                  "|--:|---|--:|--:|--:|--:|--:|"]
        for n, name, m in rows:
            ms = ms_of(m)
            lines.append(f"| {n} | {name} | {ms} | {m.get('GFLOP/s', '—')} | {m.get('%fp64peak', '—')} | {m.get('GB/s', '—')} | {m.get('%bandwidth', '—')} |")
        lines += ["", "Matrix-free GFLOP/s count the kernel-value flops and the products' multiply-adds, as the benchmark defines them (cuda/bench_test.go); dense mode is memory-bound and is measured against the memory bandwidth.", ""]
    # The kernels of a2fe6b9 (muldense issues four loads of K before their
    # multiply-adds), tested and measured again in call 6.
    if os.path.exists(os.path.join(HERE, "logs", "call6-summary.log")):
        lines += test_summary("call6", "## The current kernels (call 6, built from 9587bcb)")
        old = {name: mm for n, name, mm in rows if n == "50000"}
        new = bench_lines(os.path.join(HERE, "logs", "call6-bench-n50000.log"))
        if new:
            lines += ["H·V at n = 50000 (logs/call6-bench-n50000.log, 5 products each), next to call 2's kernels:", "",
                      "| benchmark | ms per product | call 2 ms | call 2 / call 6 | GB/s | % of bandwidth |", "|---|--:|--:|--:|--:|--:|"]
            for name, mm in new:
                ms = ms_of(mm)
                o = old.get(name, {})
                oms = ms_of(o)
                r = f"{float(oms) / float(ms):.2f}×" if oms else "—"
                lines.append(f"| {name} | {ms} | {oms or '—'} | {r} | {mm.get('GB/s', '—')} | {mm.get('%bandwidth', '—')} |")
            lines.append("")
    # gpnb reproduce --backend cuda (run.sh's repro stages): the jobs'
    # segments (runs.json) and, for unfinished ones, the last progress line
    # of the repro logs.
    jdir = os.path.join(HERE, "jobs")
    jobs = sorted(os.listdir(jdir)) if os.path.isdir(jdir) else []
    if jobs:
        lines += ["## gpnb reproduce --backend cuda (full size, split 0, paper settings; results/gpu/jobs)", "",
                  "| job | state | steps | solver iterations | total s | solver s | test RMSE | test LLH (paper) | evaluated on | CPU total s | CPU / GPU |",
                  "|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|"]
        unevaluated = False
        for id in jobs:
            res = os.path.join(jdir, id, "result.json")
            ds = id.split("-s")[0]
            if os.path.exists(res):
                with open(res) as f:
                    r = json.load(f)
                it = sum(h["solver_iterations"] for h in r["history"])
                with open(os.path.join(jdir, id, "runs.json")) as f:
                    last = json.load(f)[-1]["environment"]
                where = f"{last.get('backend')} backend, {last.get('numcpu')} cores, {last.get('vcs.revision', '')[:7]}"
                cpu = os.path.join(ROOT, "results", "full", "jobs", id, "result.json")
                cpu_s = ratio = None
                if os.path.exists(cpu):
                    with open(cpu) as f:
                        cpu_s = json.load(f)["total_seconds"]
                    ratio = cpu_s / r["total_seconds"]
                lines.append(f"| {id} | done | {len(r['history'])} | {it} | {r['total_seconds']:.1f} | {r['solver_seconds']:.1f} | {r['test_rmse']:.4f} | {r['test_llh']:.3f} ({PAPER_LLH.get(ds)}) | "
                             f"{r['eval_method']}: {where} | {fmt(cpu_s, 1)} | {fmt(ratio, 1)}{'×' if ratio else ''} |")
                continue
            with open(os.path.join(jdir, id, "runs.json")) as f:
                segs = json.load(f)
            def t(x):
                return datetime.fromisoformat(x.replace("Z", "+00:00")[:26] + "+00:00")
            secs = sum((t(g["updated"]) - t(g["started"])).total_seconds() for g in segs if g["to_step"] > g["from_step"])
            last = None
            for log in sorted(os.listdir(os.path.join(HERE, "logs"))):
                if log.endswith("-repro.log"):
                    with open(os.path.join(HERE, "logs", log)) as f:
                        for line in f:
                            m = re.search(rf"{id}\s+step (\d+)/(\d+)\s+solver iterations (\d+)", line)
                            if m:
                                last = m
            steps = max(g["to_step"] for g in segs)
            lines.append(f"| {id} | trained, not evaluated | {steps} | {last[3] if last else '—'} | {secs:.1f} (runs.json) | — | — | — | — | — | — |")
            unevaluated = True
        lines += ["", "Total and solver s: the sums of the steps' wall times on the GPU, as result.json defines them (data loading and the final evaluation excluded). "
                  "The evaluation is the exact in-place Cholesky on a host (its segment in runs.json says which). CPU total: the same job in results/full (2-core CPU, OpenBLAS).", ""]
        if unevaluated:
            lines += ["A job \"trained, not evaluated\" holds its checkpoint at its last step (results/gpu/jobs/ID/checkpoint, not committed): its final evaluation, an in-place Cholesky on the host that was then lapack64.Potrf on one core, outlasted the calls. 76c4a86 factorises by blocks on every core.", ""]
    # Training runs.
    exact = {e.get("file"): e for e in jsonl(os.path.join(HERE, "exact.jsonl"))}
    tdir = os.path.join(HERE, "train")
    runs = {}
    for id in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        p = os.path.join(tdir, id, "result.json")
        if os.path.exists(p):
            with open(p) as f:
                runs[id] = json.load(f)
    if runs:
        lines += ["## 100 Adam steps on the GPU (gpnb train --backend cuda, full size, split 0, paper settings)", "",
                  "| dataset | n | solver | warm start | solver iterations | total s | solver s | test RMSE | test LLH (paper) | CPU total s | GPU speed-up over CPU | paper A100 (min) |",
                  "|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for id, r in runs.items():
            it = sum(h["solver_iterations"] for h in r["history"])
            e = exact.get(f"results/gpu/train/{id}/result.json", {})
            cpu = os.path.join(ROOT, "results", "full", "jobs", f"{r['dataset']}-s0-{r['solver']}-{'warm' if r['warm_start'] else 'cold'}", "result.json")
            cpu_s = ratio = None
            if os.path.exists(cpu):
                with open(cpu) as f:
                    cpu_s = json.load(f)["total_seconds"]
                ratio = cpu_s / r["total_seconds"]
            a100 = PAPER_A100_MIN.get(r["dataset"]) if r["warm_start"] and r["solver"] == "cg" else None
            lines.append(f"| {r['dataset']} | {r['n_train']} | {r['solver']} | {'yes' if r['warm_start'] else 'no'} | {it} | {r['total_seconds']:.1f} | {r['solver_seconds']:.1f} | "
                         f"{fmt(e.get('exact_test_rmse'), 4)} | {fmt(e.get('exact_test_llh'))} ({PAPER_LLH.get(r['dataset'])}) | {fmt(cpu_s, 1)} | {fmt(ratio, 1)}{'×' if ratio else ''} | {fmt(a100, 1)} |")
        lines += ["", "Test RMSE and LLH: exact, from the final hyperparameters, by a float64 Cholesky on the GPU (eval_exact.py; the runs themselves use `--eval=false`). CPU total: the same job in results/full (2-core CPU, OpenBLAS), where it exists.", ""]
        pairs = []
        for id, r in runs.items():
            if r["warm_start"]:
                cold = runs.get(id.replace("-warm", "-cold"))
                if cold:
                    ic = sum(h["solver_iterations"] for h in cold["history"])
                    iw = sum(h["solver_iterations"] for h in r["history"])
                    pairs.append(f"| {r['dataset']} | {r['solver']} | {cold['total_seconds'] / r['total_seconds']:.2f}× | {cold['solver_seconds'] / r['solver_seconds']:.2f}× | {ic / iw:.2f}× |")
        if pairs:
            lines += ["### Warm-start speed-up on the GPU (cold / warm, same run set)", "",
                      "| dataset | solver | total time | solver time | solver iterations |", "|---|---|--:|--:|--:|"] + pairs + [""]
    # GPyTorch.
    gp = jsonl(os.path.join(HERE, "gpytorch.jsonl"))
    if gp:
        dtype = lambda g: "float32" if "float32" in g.get("settings", "") else "float64"
        lines += gpytorch_table(gp, "## GPyTorch exact GP on the same GPU (gpytorch_exact.py: its defaults, 100 Adam steps, lr 0.1)",
                                "| dataset | dtype | train s | eval s | test RMSE | test LLH | outcome |", "|---|---|--:|--:|--:|--:|---|",
                                lambda g: f"| {g['dataset']} | {dtype(g)} | {gpytorch_figures(g)} | finished |",
                                lambda g: f"| {g['dataset']} | float64 | — | — | — | — | {g['error'].split('.')[0]} |")
        prog = os.path.join(HERE, "logs", "call5-gpytorch.log")
        if os.path.exists(prog):
            with open(prog) as f:
                steps = re.findall(r"(\w+): step (\d+)/(\d+) ([0-9.]+)s", f.read())
            if steps:
                name, k, n, s = steps[-1]
                lines.append(f"| {name} | float32 | {float(s):.1f} | not finished | — | — | {k}/{n} steps trained in {float(s):.1f} s; the prediction did not finish within the call's 250 s (logs/call5-gpytorch.log) |")
        lines.append("")
    lines += quick()
    lines += quick56()
    out = os.path.join(HERE, "tables.md")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {out}", file=sys.stderr)


def steps_of_log(path):
    """The per-step lines of a gpnb train --verbose log: (step, iterations, solver s, step s)."""
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for m in re.finditer(r"step (\d+): (\d+) solver iterations \(converged \w+\) ([0-9.]+)s solver ([0-9.]+)s step", f.read()):
                out.append((int(m[1]), int(m[2]), float(m[3]), float(m[4])))
    return out


def quick_runs(q):
    """The train runs of a quick.sh run in q: (id, result.json or None, the per-step lines of its log)."""
    tdir = os.path.join(q, "train")
    runs = []
    for id in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        p = os.path.join(tdir, id, "result.json")
        r = None
        if os.path.exists(p):
            with open(p) as f:
                r = json.load(f)
        runs.append((id, r, steps_of_log(os.path.join(tdir, id, "log"))))
    return runs


def quick_header(q):
    """The lines of a quick.sh run in q that name its device and give its tests' and the bits check's outcome."""
    lines = []
    summ = os.path.join(q, "logs", "summary.log")
    if os.path.exists(summ):
        with open(summ) as f:
            s = f.read()
        m = re.search(r"quick.sh on (.*)", s)
        if m:
            lines += [f"Device: {m[1]}.", ""]
        m = re.search(r"tests: (\d+) passed, (\d+) skipped, (\d+) failed", s)
        if m:
            lines += [f"Tests (`cuda.test`, logs/test.log): {m[1]} passed, {m[2]} skipped, {m[3]} failed.", ""]
    bits = os.path.join(q, "logs", "bits.log")
    if os.path.exists(bits):
        with open(bits) as f:
            b = [l.strip() for l in f if "module_test.go" in l]
        if b:
            lines += ["Bits of the kernels as compiled by nvcc 11.8's ptxas (the embedded cubin), the driver's JIT and the GPU machine's nvcc (TestModuleBits, logs/bits.log):", ""]
            lines += [f"- {l.split(': ', 1)[-1]}" for l in b] + [""]
    return lines


def quick():
    """The section of results/gpu/quick (quick.sh: the device-resident solves)."""
    q = os.path.join(HERE, "quick")
    if not os.path.isdir(q):
        return []
    lines = ["## Device-resident solves (results/gpu/quick: one call of quick.sh)", ""]
    lines += quick_header(q)
    rows = bench_lines(os.path.join(q, "logs", "bench.log"))
    if rows:
        lines += ["### The product alone (go test -bench, 20 products; SpaceMul timed by CUDA events around the launches)", "",
                  "| benchmark | ms | GB/s of K | % of memory bandwidth | Gpairs/s |", "|---|--:|--:|--:|--:|"]
        for name, m in rows:
            ms = ms_of(m, "ms/product", "ms/iteration", "ms/reduce")
            lines.append(f"| {name} | {ms or '—'} | {m.get('GB/s', '—')} | {m.get('%bandwidth', '—')} | {m.get('Gpairs/s', '—')} |")
        lines += ["", "SpaceMul: H·V for 17 right-hand sides on device-resident blocks (the product of a CG iteration); GB/s count the bytes of K read once (n·ldk·elem). "
                  "CGIteration: one CG iteration at n = 13500 (dense, float64), wall clock, launches and synchronisations included. MulTo: the host-level product, copies included.", ""]
    rows = bench_lines(os.path.join(q, "logs", "blocks.log"))
    if rows:
        lines += ["### The dense product by chunking target (logs/blocks.log: quick.sh's blocks stage)", "",
                  "The same product as SpaceMul, cut into about `targetBlocks` blocks (cuda/product.go; quick.sh lists the default target first).", "",
                  "| n | K | target blocks | ms | GB/s of K | % of memory bandwidth |", "|--:|---|--:|--:|--:|--:|"]
        for name, m in rows:
            parts = dict(f.split("=", 1) for f in name.split("/") if "=" in f)
            prec = name.split("/")[3] if name.count("/") >= 3 else "?"
            lines.append(f"| {parts.get('n', '?')} | {prec} | {parts.get('blocks', '?')} | {ms_of(m, 'ms/product') or '—'} | {m.get('GB/s', '—')} | {m.get('%bandwidth', '—')} |")
        lines += [""]
    exact = {e.get("file"): e for e in jsonl(os.path.join(q, "exact.jsonl"))}
    runs = quick_runs(q)
    if runs:
        lines += ["### 100 Adam steps, everything on the GPU (gpnb train --backend cuda, full size, split 0, paper settings)", "",
                  "| run | steps | solver iterations | total s | solver s | test RMSE | test LLH | CPU test LLH | ΔLLH (abs) | CPU total s | speed-up over CPU | previous GPU total s (host vectors) | speed-up over it |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for id, r, steps in runs:
            base = id.replace("-float32", "")
            ds, solver, mode = base.split("-")
            cpu = os.path.join(ROOT, "results", "full", "jobs", f"{ds}-s0-{solver}-{mode}", "result.json")
            cpu_r = None
            if os.path.exists(cpu):
                with open(cpu) as f:
                    cpu_r = json.load(f)
            prev = os.path.join(HERE, "train", base, "result.json")
            prev_s = None
            if os.path.exists(prev) and not id.endswith("float32"):
                with open(prev) as f:
                    prev_s = json.load(f)["total_seconds"]
            if r is None:
                if steps:
                    it = sum(x[1] for x in steps)
                    tot = sum(x[3] for x in steps)
                    sol = sum(x[2] for x in steps)
                    lines.append(f"| {id} (stopped by its time limit) | {steps[-1][0]} | {it} | {tot:.1f} | {sol:.1f} | — | — | — | — | — | — | — | — |")
                else:
                    lines.append(f"| {id} | no result (see its log) | | | | | | | | | | | |")
                continue
            it = sum(h["solver_iterations"] for h in r["history"])
            e = exact.get(f"results/gpu/quick/train/{id}/result.json", {})
            llh = e.get("exact_test_llh")
            cllh = cpu_r.get("test_llh") if cpu_r else None
            d = abs(llh - cllh) if llh is not None and cllh is not None else None
            cpu_s = cpu_r["total_seconds"] if cpu_r else None
            sp = cpu_s / r["total_seconds"] if cpu_s else None
            ps = prev_s / r["total_seconds"] if prev_s else None
            lines.append(f"| {id} | {r['steps_done']} | {it} | {r['total_seconds']:.1f} | {r['solver_seconds']:.1f} | {fmt(e.get('exact_test_rmse'), 4)} | {fmt(llh)} | "
                         f"{fmt(cllh)} | {fmt(d, 4)} | {fmt(cpu_s, 1)} | {fmt(sp, 1)}{'×' if sp else ''} | {fmt(prev_s, 1)} | {fmt(ps, 2)}{'×' if ps else ''} |")
        lines += ["", "Total and solver s: the sums of the steps' wall times (result.json; data loading excluded). Test RMSE and LLH: exact, from the final hyperparameters, "
                  "by a float64 Cholesky on the GPU (eval_exact.py). CPU: the same job in results/full (2-core CPU, OpenBLAS). Previous GPU: results/gpu/train, "
                  "the operator on the GPU with the solvers' vectors on the host (f1f3cff).", ""]
        done = {id: r for id, r, _ in runs if r}
        w, c = done.get("pol-cg-warm"), done.get("pol-cg-cold")
        checks = []
        if w and c:
            iw = sum(h["solver_iterations"] for h in w["history"])
            ic = sum(h["solver_iterations"] for h in c["history"])
            checks.append(f"- pol CG cold / warm on the GPU: {c['total_seconds'] / w['total_seconds']:.2f}× total time, {ic / iw:.2f}× solver iterations.")
        for id, target in (("pol-cg-warm", 8), ("keggdirected-cg-warm", 60)):
            if id in done:
                t = done[id]["total_seconds"]
                checks.append(f"- {id}: {t:.1f} s for 100 steps, target ≤ {target} s: {'met' if t <= target else 'not met'}.")
        f32 = done.get("pol-cg-warm-float32")
        if f32 and w:
            a = exact.get("results/gpu/quick/train/pol-cg-warm-float32/result.json", {}).get("exact_test_llh")
            b = exact.get("results/gpu/quick/train/pol-cg-warm/result.json", {}).get("exact_test_llh")
            checks.append(f"- pol CG warm with float32 K: {f32['total_seconds']:.1f} s ({w['total_seconds'] / f32['total_seconds']:.2f}× faster than float64), test LLH {fmt(a)} against {fmt(b)}.")
        if checks:
            lines += checks + [""]
    gp = jsonl(os.path.join(q, "gpytorch.jsonl"))
    if gp:
        lines += gpytorch_table(gp, "### GPyTorch on the same GPU (gpytorch_exact.py: 100 Adam steps, lr 0.1, float64, same data, kernel, initialisation)",
                                "| settings | train s | eval s | test RMSE | test LLH |", "|---|--:|--:|--:|--:|",
                                lambda g: f"| {g.get('label', '')}: {g['settings']} | {gpytorch_figures(g)} |",
                                lambda g: f"| {g.get('label', '')} | {g['error'][:80]} | | | |") + [""]
    return lines


# Issue 56's time targets on an H100 (3.35 TB/s), seconds for 100 steps; on
# another card they scale by the memory bandwidths.
TARGETS_56 = {"pol-cg-warm": 4, "pol-cg-warm-float32": 2.5, "keggdirected-cg-warm": 40, "keggdirected-cg-warm-float32": 22}
H100_GBPS = 3352


def parts(name):
    """The fields of a sub-benchmark's name: {'n': ..., 'd': ...} from n=…/d=… and the others in order under 'rest'."""
    out = {"rest": []}
    for f in name.split("/")[1:]:
        if "=" in f:
            k, v = f.split("=", 1)
            out[k] = v
        else:
            out["rest"].append(f)
    return out


def quick56():
    """The section of results/gpu/quick56 (quick.sh with issue 56's kernels), against the targets and call 9 (results/gpu/quick)."""
    q = os.path.join(HERE, "quick56")
    if not os.path.isdir(q):
        return []
    base = os.path.join(HERE, "quick")
    lines = ["## Issue 56: the kernels at the hardware's limit (results/gpu/quick56: one call of quick.sh)", ""]
    lines += quick_header(q)
    bench = bench_lines(os.path.join(q, "logs", "bench.log"))
    old = dict(bench_lines(os.path.join(base, "logs", "bench.log")))
    bw = None
    for name, m in bench:
        if name.startswith("SpaceMul") and m.get("%bandwidth") and m.get("GB/s"):
            bw = float(m["GB/s"]) / (float(m["%bandwidth"]) / 100)
            break
    scale = H100_GBPS / bw if bw else 1.0
    if bw:
        lines += [f"The card's memory bandwidth (cuda.DeviceInfo, from its clocks): {bw:.0f} GB/s; the time targets below are the issue's H100 targets × {scale:.3f} (3352 GB/s over it).", ""]
    prod = [(n, m) for n, m in bench if n.startswith("SpaceMul/")]
    if prod:
        lines += ["### The product H·V of 17 columns on device-resident blocks (SpaceMul, CUDA events around the launches, 10 products)", "",
                  "| n | mode | K | ms | GB/s of K | % of memory bandwidth | Gpairs/s | call 9 ms | speed-up over call 9 |", "|--:|---|---|--:|--:|--:|--:|--:|--:|"]
        ms_by = {}
        for name, m in prod:
            f = parts(name)
            ms = ms_of(m, "ms/product")
            ms_by[(f.get("n"), tuple(f["rest"]))] = ms
            o = ms_of(old.get(name, {}), "ms/product")
            sp = float(o) / float(ms) if o and ms else None
            lines.append(f"| {f.get('n')} | {' '.join(f['rest'][:1])} | {' '.join(f['rest'][1:])} | {ms or '—'} | {m.get('GB/s', '—')} | {m.get('%bandwidth', '—')} | {m.get('Gpairs/s', '—')} | {o or '—'} | {fmt(sp, 2)}{'×' if sp else ''} |")
        lines += [""]
        for n in sorted({k[0] for k in ms_by}, key=lambda x: int(x or 0)):
            f64, f32 = ms_by.get((n, ("dense", "float64"))), ms_by.get((n, ("dense", "float32")))
            pct = dict((parts(name).get("n"), m.get("%bandwidth")) for name, m in prod if name.endswith("/dense/float64"))
            if f64 and pct.get(n):
                p = float(pct[n])
                lines.append(f"- n = {n}: the float64 product at {p:.1f} % of the bandwidth, target ≥ 85 %: {'met' if p >= 85 else 'not met'}.")
            if f64 and f32:
                r = float(f64) / float(f32)
                lines.append(f"- n = {n}: float32 K {r:.2f}× as fast as float64, target ≥ 1.7×: {'met' if r >= 1.7 else 'not met'}.")
        lines += [""]
    red = [(n, m) for n, m in bench if n.startswith("Reduce/")]
    if red:
        lines += ["### Reduce: the gradient's fused reduction, 17 columns (CUDA events: copies in, kernels, results out; 10 reductions)", "",
                  "| n | d | z | ms | wall ms | Gpairs/s (upper triangle) | target ms |", "|--:|--:|---|--:|--:|--:|--:|"]
        for name, m in red:
            f = parts(name)
            target = f"{3 * scale:.2f}" if f.get("n") == "13500" else "—"
            lines.append(f"| {f.get('n')} | {f.get('d')} | {' '.join(f['rest'])} | {ms_of(m, 'ms/reduce') or '—'} | {m.get('wall-ms/reduce', '—')} | {m.get('Gpairs/s', '—')} | {target} |")
        o = old.get("Reduce")
        if o:
            lines += ["", f"Call 9's Reduce (its benchmark: n = 13500, d = 8, wall clock): {ms_of(o, 'ms/reduce')} ms."]
        lines += [""]
    step = [(n, m) for n, m in bench if n.startswith("Step/")]
    if step:
        lines += ["### An Adam step's parts (Step: warm-started CG, 17 columns, d = 26, dense K; CUDA events around each part)", "",
                  "| n | K | build ms | start ms | ms per iteration | reduce ms |", "|--:|---|--:|--:|--:|--:|"]
        for name, m in step:
            f = parts(name)
            lines.append(f"| {f.get('n')} | {' '.join(f['rest'])} | {m.get('ms/build', '—')} | {m.get('ms/start', '—')} | {m.get('ms/iteration', '—')} | {m.get('ms/reduce', '—')} |")
        lines += [""]
    for name, m in bench:
        if name == "CGIteration":
            o = ms_of(old.get(name, {}), "ms/iteration")
            lines += [f"A CG iteration at n = 13500 (dense float64, 17 columns, wall clock, the one synchronisation included): {ms_of(m, 'ms/iteration')} ms; call 9: {o or '—'} ms.", ""]
    exact = {e.get("file"): e for e in jsonl(os.path.join(q, "exact.jsonl"))}
    runs = quick_runs(q)
    done = {}
    if runs:
        lines += ["### 100 Adam steps on the GPU (gpnb train --backend cuda, full size, split 0, paper settings)", "",
                  "| run | steps | solver iterations | total s | build s | start s | reduce s | test LLH | CPU test LLH | ΔLLH (abs) | target s | call 9 total s | speed-up over call 9 |",
                  "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for id, r, steps in runs:
            target = TARGETS_56.get(id)
            tcell = f"{target * scale:.1f}" if target else "—"
            if r is None:
                tot = sum(x[3] for x in steps)
                lines.append(f"| {id} (stopped by its time limit) | {steps[-1][0] if steps else 0} | {sum(x[1] for x in steps)} | {tot:.1f} | — | — | — | — | — | — | {tcell} | — | — |")
                continue
            done[id] = r
            base_id = id.replace("-float32", "")
            ds, solver, mode = base_id.split("-")
            cpu = os.path.join(ROOT, "results", "full", "jobs", f"{ds}-s0-{solver}-{mode}", "result.json")
            cllh = None
            if os.path.exists(cpu):
                with open(cpu) as f:
                    cllh = json.load(f).get("test_llh")
            llh = exact.get(f"results/gpu/quick56/train/{id}/result.json", {}).get("exact_test_llh")
            d = abs(llh - cllh) if llh is not None and cllh is not None else None
            ob = os.path.join(base, "train", id, "result.json")
            os_ = None
            if os.path.exists(ob):
                with open(ob) as f:
                    os_ = json.load(f)["total_seconds"]
            sp = os_ / r["total_seconds"] if os_ else None
            h = r["history"]
            it = sum(x["solver_iterations"] for x in h)
            part = lambda k: sum(x.get(k, 0) for x in h)
            met = f" ({'met' if r['total_seconds'] <= target * scale else 'not met'})" if target else ""
            lines.append(f"| {id} | {r['steps_done']} | {it} | {r['total_seconds']:.1f} | {part('build_seconds'):.2f} | {part('start_seconds'):.2f} | {part('reduce_seconds'):.2f} | "
                         f"{fmt(llh)} | {fmt(cllh)} | {fmt(d, 4)}{' (≤ 0.01)' if d is not None and d <= 0.01 else ''} | {tcell}{met} | {fmt(os_, 1)} | {fmt(sp, 2)}{'×' if sp else ''} |")
        ops = sorted({r.get("operator", "") for r in done.values() if r.get("operator")})
        lines += ["", "Total s: the sum of the steps' wall times (result.json; data loading excluded); build, start and reduce s: its parts outside the solver iterations "
                  "(the K build, the solver's start with the warm start's product, the gradient's reduction), summed over the steps. Test LLH: exact, from the final "
                  "hyperparameters, by a float64 Cholesky on the GPU (eval_exact.py); CPU: the same job in results/full. Call 9: results/gpu/quick (the kernels before issue 56, an H200)."]
        if ops:
            lines += ["", "Operators (result.json): " + "; ".join(f"`{o}`" for o in ops) + "."]
        lines += [""]
    gp = jsonl(os.path.join(q, "gpytorch.jsonl"))
    if gp:
        lines += gpytorch_table(gp, "### GPyTorch on the same GPU (gpytorch_exact.py: 100 Adam steps, lr 0.1, float64, same data, kernel, initialisation)",
                                "| settings | train s | eval s | test RMSE | test LLH |", "|---|--:|--:|--:|--:|",
                                lambda g: f"| {g.get('label', '')}: {g['settings']} | {gpytorch_figures(g)} |",
                                lambda g: f"| {g.get('label', '')} | {g['error'][:80]} | | | |") + [""]
        defaults = [g for g in gp if "error" not in g and g.get("label", "defaults") == "defaults"]
        w = done.get("pol-cg-warm")
        llh = exact.get("results/gpu/quick56/train/pol-cg-warm/result.json", {}).get("exact_test_llh")
        if defaults and w and llh is not None:
            g = defaults[0]
            r = g["train_seconds"] / w["total_seconds"]
            ok = r >= 2 and llh > g["test_llh"]
            lines += [f"pol CG warm against GPyTorch's defaults in the same call: {r:.2f}× faster ({w['total_seconds']:.1f} s against {g['train_seconds']:.1f} s), "
                      f"test LLH {llh:.3f} against {g['test_llh']:.3f}; target ≥ 2× at a higher test LLH: {'met' if ok else 'not met'}.", ""]
    return lines


if __name__ == "__main__":
    main()
