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


def quick():
    """The section of results/gpu/quick (quick.sh: the device-resident solves)."""
    q = os.path.join(HERE, "quick")
    if not os.path.isdir(q):
        return []
    lines = ["## Device-resident solves (results/gpu/quick: one call of quick.sh)", ""]
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
    tdir = os.path.join(q, "train")
    runs = []
    for id in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        p = os.path.join(tdir, id, "result.json")
        r = None
        if os.path.exists(p):
            with open(p) as f:
                r = json.load(f)
        runs.append((id, r, steps_of_log(os.path.join(tdir, id, "log"))))
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


if __name__ == "__main__":
    main()
