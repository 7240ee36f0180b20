#!/usr/bin/env python3
"""Per-step comparison of the stopping-rule runs (results/run-fidelity.sh).

Usage: python3 results/fidelity.py results/fidelity > part.md

Reads DIR/<rules>/jobs/*/{job,result,runs}.json for every rule set found and
prints Markdown: one summary row per dataset, solver, mode and rule set
(iterations, epochs, capped steps, times, test LLH, final σ), then for SGD
and CG the σ path and the iterations per step at every tenth step, beside
the exact (Cholesky) reference's σ path. Every number is read from the
files; nothing is typed by hand.
"""
import glob
import json
import os
import sys

ORDER = ["paper", "joint", "reference"]
STEPS = [1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 100]


def load(root):
    runs = {}
    for rules in sorted((d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d, "jobs"))), key=lambda r: (ORDER.index(r) if r in ORDER else 99, r)):
        for jd in sorted(glob.glob(os.path.join(root, rules, "jobs", "*"))):
            res = os.path.join(jd, "result.json")
            job = json.load(open(os.path.join(jd, "job.json")))
            if os.path.exists(res):
                r = json.load(open(res))
            elif os.path.exists(os.path.join(jd, "partial.json")):
                r = partial(job, json.load(open(os.path.join(jd, "partial.json"))))
            else:
                continue
            loads = []
            rp = os.path.join(jd, "runs.json")
            if os.path.exists(rp):
                for seg in json.load(open(rp)):
                    if seg.get("load_mean") is not None:
                        loads.append((seg["to_step"] - seg["from_step"], seg["load_mean"]))
            solver = r["solver"]
            mode = "exact" if solver == "cholesky" else ("warm" if r["warm_start"] else "cold")
            runs[(r["dataset"], solver, mode, rules)] = (job, r, loads)
    return runs


def partial(job, ins):
    """A result-like record of a job cut short, from `gpnb inspect --json`
    of its checkpoint: its history so far, no test metrics."""
    c = job["config"]
    solver = "cholesky" if c.get("estimator") == "exact" else c.get("solver", {}).get("name", "cg")
    h = ins.get("history") or []
    return {"dataset": job["dataset"], "solver": solver, "warm_start": c.get("warm_start", False),
            "n_train": ins["n_train"], "history": h, "solver_seconds": ins["solver_seconds"],
            "total_seconds": ins["total_seconds"], "test_llh": None, "test_rmse": None,
            "final": {"noise": h[-1]["noise"] if h else float("nan")}, "steps": job["steps"]}


def per_iteration_rows(job, solver, n):
    """Rows of H one iteration touches: n for CG, the block or batch size."""
    m = job["config"].get("solver", {}) if "config" in job else job.get("settings", {})  # the legacy job.json has flat settings
    if solver == "ap":
        return min(m.get("block_size") or 2000, n)
    if solver == "sgd":
        return min(m.get("batch_size") or 1000, n)
    return n


def split(root, w):
    """Where an AP warm step's time goes (results/fidelity/split/*.json,
    written by `gpnb train --json`, whose step records split the time)."""
    for path in sorted(glob.glob(os.path.join(root, "split", "*.json"))):
        r = json.load(open(path))
        h = r["history"]
        tot = {k: sum(x.get(k, 0) for x in h) for k in
               ["step_seconds", "solver_seconds", "build_seconds", "start_seconds", "factor_seconds", "reduce_seconds",
                "solver_iterations", "block_factorisations"]}
        S = tot["step_seconds"]
        parts = [
            ("kernel build (SetKernel: the dense n² cache for the new θ)", tot["build_seconds"]),
            ("gradient reduction (Reduce: n²(d+2) over pairs)", tot["reduce_seconds"]),
            ("solver Start (the warm start's B − H·V0: one product of all columns)", tot["start_seconds"]),
            ("block updates that factorised their block (Cholesky of H_II, k³/3, plus the update)", tot["factor_seconds"]),
            ("other block updates", tot["solver_seconds"] - tot["start_seconds"] - tot["factor_seconds"]),
            ("the rest (probes, copies, Adam)", S - tot["solver_seconds"] - tot["build_seconds"] - tot["reduce_seconds"]),
        ]
        w("### Where an AP warm step's time goes: %s, n = %d, %d steps (`%s`)" % (r["dataset"], r["n_train"], len(h), os.path.relpath(path, os.path.dirname(root))))
        w("")
        w("%d block updates and %d block factorisations in all; shares of the summed step time, measured within one run "
          "(the machine was loaded, so only the shares carry over)." % (tot["solver_iterations"], tot["block_factorisations"]))
        w("")
        w("| part | seconds | share |")
        w("|---|--:|--:|")
        for name, sec in parts:
            w("| %s | %.1f | %.0f %% |" % (name, sec, 100 * sec / S))
        w("| step total | %.1f | 100 %% |" % S)
        w("")


# RERUN_CAP is the iteration cap of the full-size SGD re-runs under the
# authors' rules (results/full-rules); results/gpu/fidelity.sh reads it from
# here.
RERUN_CAP = 200000


def rerun(root, runs, w, rules="reference", flag="--rules authors"):
    """The command for the capped full-size SGD cold rows (and their warm
    pairs) under the authors' rules, and the cold rows' CPU time estimated
    from the files: the finished subset runs' ratio of SGD epochs to CG
    iterations (cold, the same rules), times
    the full-size CG cold iterations, gives the full-size SGD epochs; times
    n/batch iterations per epoch and the full-size run's seconds per SGD
    iteration (and its seconds per step outside the solver)."""
    full = os.path.join(os.path.dirname(root), "full", "jobs")
    w("### Re-running the capped full-size SGD rows with the authors' rules")
    w("")
    w("The capped cold jobs and their warm pairs (the speed-up's other half):")
    w("")
    w("```sh")
    w("bin/gpnb reproduce --datasets pol,bike --splits 0 --solvers sgd --modes cold,warm --steps 100 --exact never %s --max-iterations %d --out results/full-rules" % (flag, RERUN_CAP))
    w("```")
    w("")
    w("(`--out` must be a new directory: results/full holds these jobs under the paper's-text rules, and a job's "
      "configuration may not change under it; adding `--dry-run` lists where they stand, rerunning resumes, "
      "`gpnb table --in results/full-rules` renders them. The jobs started under SGD's default cap of 50 000 iterations a "
      "step; bike cold's solves outgrew it, so the command raises it, which a rerun may do while none of a job's steps "
      "has reached the old cap: DESIGN.md, \"State and time\".) Estimated CPU time, from the files (the ratio of SGD epochs to "
      "CG iterations measured on the 4000-point subsets under the same rules, applied to the full-size CG cold iterations, "
      "at the full-size run's seconds per SGD iteration; conditioning grows with n, so read it as an order of magnitude):")
    w("")
    w("| dataset | subset: SGD epochs / CG iterations (cold, %s) | full size: CG cold iterations | estimated SGD iterations | s per SGD iteration (full-size run) | estimated hours | the capped run's hours |" % rules)
    w("|---|--:|--:|--:|--:|--:|--:|")
    for ds in ["pol", "bike"]:
        sgd = runs.get((ds, "sgd", "cold", rules))
        cg = runs.get((ds, "cg", "cold", rules)) or runs.get((ds, "cg", "cold", "paper"))
        fs, fc = os.path.join(full, ds + "-s0-sgd-cold", "result.json"), os.path.join(full, ds + "-s0-cg-cold", "result.json")
        finished = sgd and cg and sgd[1].get("test_llh") is not None and cg[1].get("test_llh") is not None
        if not (finished and os.path.exists(fs) and os.path.exists(fc)):
            w("| %s | not measured yet | | | | | |" % ds)
            continue
        sh, ch = sgd[1]["history"], cg[1]["history"]
        n = sgd[1]["n_train"]
        ratio = sum(x["solver_iterations"] for x in sh) * per_iteration_rows(sgd[0], "sgd", n) / n / sum(x["solver_iterations"] for x in ch)
        FS, FC = json.load(open(fs)), json.load(open(fc))
        N = FS["n_train"]
        bs = per_iteration_rows(json.load(open(os.path.join(full, ds + "-s0-sgd-cold", "job.json"))), "sgd", N)
        cg_its = sum(x["solver_iterations"] for x in FC["history"])
        its = min(ratio * cg_its * N / bs, RERUN_CAP * 100)
        fs_its = sum(x["solver_iterations"] for x in FS["history"])
        per_it = FS["solver_seconds"] / fs_its
        outside = (FS["total_seconds"] - FS["solver_seconds"]) / len(FS["history"])
        hours = (its * per_it + 100 * outside) / 3600
        w("| %s | %.2f | %d | %.0f | %.4f | %.1f | %.1f |" % (ds, ratio, cg_its, its, per_it, hours, FS["total_seconds"] / 3600))
    w("")
    measured(os.path.join(os.path.dirname(root), "full-rules", "jobs"), full, w)


def segments(jd, h):
    """Where a job's steps ran, from its runs.json: "steps a–b: S s on
    BACKEND (k segments, load L)" for each run of adjacent segments on one
    backend, with the steps' summed wall time from the history; steps that
    no segment covers (run outside the runner, e.g. by gpnb train, and
    resumed from that checkpoint) are named as such, with the operator their
    step records name."""
    rp = os.path.join(jd, "runs.json")
    segs = json.load(open(rp)) if os.path.exists(rp) else []
    spans = []  # [from, to, backend, segments, load·steps]
    for g in segs:
        a, b = g["from_step"], min(g["to_step"], len(h))
        if b <= a:
            continue
        be = g.get("environment", {}).get("backend") or "cpu"  # as gpnb: a segment that names none ran on the CPU
        if spans and spans[-1][1] == a and spans[-1][2] == be:
            spans[-1][1] = b
            spans[-1][3] += 1
            spans[-1][4] += (b - a) * (g.get("load_mean") or 0)
        else:
            spans.append([a, b, be, 1, (b - a) * (g.get("load_mean") or 0)])
    covered = {i for a, b, *_ in spans for i in range(a, b)}
    free = [i for i in range(len(h)) if i not in covered]
    while free:
        a = b = free.pop(0)
        while free and free[0] == b + 1:
            b = free.pop(0)
        spans.append([a, b + 1, None, 0, 0])
    parts = []
    for a, b, be, k, ls in sorted(spans):
        sec = sum(x["step_seconds"] for x in h[a:b])
        if be is None:
            ops = sorted({x.get("operator") for x in h[a:b] if x.get("operator")})
            on = " on %s (the step records' operator)" % " and ".join(ops) if ops else ""
            parts.append("steps %d–%d: %.0f s%s, not run by the runner (no runs.json segment)" % (a, b, sec, on))
        else:
            parts.append("steps %d–%d: %.0f s on %s (%d segment%s, mean load %.1f)" % (a, b, sec, be, k, "s" if k > 1 else "", ls / (b - a)))
    return "; ".join(parts)


def measured(jobs, full, w):
    """The re-runs themselves, where they exist (results/full-rules), beside
    the run of results/full under the paper's-text rules: work, cap hits, time
    and test LLH. The cold rows always (they are the capped ones); a warm
    row where results/full-rules holds a warm job."""
    if not os.path.isdir(jobs):
        return
    ids = [j for j in os.listdir(jobs) if os.path.exists(os.path.join(jobs, j, "job.json"))]
    if ids and all(os.path.exists(os.path.join(jobs, j, "result.json")) for j in ids):
        where = ", every job finished (results/full-rules)"
    else:
        where = " so far (results/full-rules; a job cut short is read from its checkpoint by `gpnb inspect`, partial.json)"
    w("Measured" + where + ", beside the run under the paper's-text rules (results/full):")
    w("")
    w("| dataset | mode | rules | steps | solver iterations | capped steps | step time | test LLH | where the steps ran |")
    w("|---|---|---|--:|--:|--:|--:|--:|---|")
    for ds in ["pol", "bike"]:
        for mode in ["cold", "warm"]:
            if mode == "warm" and not os.path.exists(os.path.join(jobs, ds + "-s0-sgd-warm", "job.json")):
                continue
            for rules, d in [("authors' (full-rules)", jobs), ("paper's text (full)", full)]:
                jd = os.path.join(d, ds + "-s0-sgd-" + mode)
                if os.path.exists(os.path.join(jd, "result.json")):
                    r = json.load(open(os.path.join(jd, "result.json")))
                elif os.path.exists(os.path.join(jd, "partial.json")):
                    r = partial(json.load(open(os.path.join(jd, "job.json"))), json.load(open(os.path.join(jd, "partial.json"))))
                else:
                    w("| %s | %s | %s | not started | | | | | |" % (ds, mode, rules))
                    continue
                h = r["history"]
                llh = "—" if r.get("test_llh") is None else "%.3f" % r["test_llh"]
                steps = json.load(open(os.path.join(jd, "job.json")))["steps"]
                w("| %s | %s | %s | %d of %d | %d | %d | %.2f h | %s | %s |" % (
                    ds, mode, rules, len(h), steps, sum(x["solver_iterations"] for x in h),
                    sum(1 for x in h if not x["solver_converged"]), sum(x["step_seconds"] for x in h) / 3600, llh,
                    segments(jd, h)))
    w("")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "results/fidelity"
    runs = load(root)
    if len(sys.argv) > 2 and sys.argv[2] == "--rerun":
        out = []
        rerun(root, runs, out.append)
        print("\n".join(out))
        return
    out = []
    w = out.append
    split(root, w)
    w("### Every run: work, caps, time, test log-likelihood")
    w("")
    w("Epochs = iterations × rows per iteration / n (CG: iterations). Capped = steps whose solve stopped at the iteration cap "
      "before its tolerances (gpnb.History.UnconvergedSteps). Times are wall-clock seconds on the loaded 2-core machine "
      "(load = runs.json's mean 1-minute load over the job's segments): compare them within a dataset and solver only.")
    w("")
    w("Over 1000 epochs = steps whose solve took more than the authors' code's default cap (max_epochs 1000: CG 1000 iterations, "
      "AP and SGD ⌈1000·n/rows⌉), i.e. the steps that `--max-epochs 1000` would have capped.")
    w("")
    w("| dataset | solver | mode | rules | iterations | epochs | capped | over 1000 epochs | solver s | total s | load | test LLH | test RMSE | final σ |")
    w("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for key in sorted(runs, key=lambda k: (k[0], ["cg", "ap", "sgd", "cholesky"].index(k[1]), k[2], ORDER.index(k[3]) if k[3] in ORDER else 9)):
        ds, solver, mode, rules = key
        job, r, loads = runs[key]
        h = r["history"]
        its = sum(x["solver_iterations"] for x in h)
        n = r["n_train"]
        ep = its * per_iteration_rows(job, solver, n) / n
        capped = sum(1 for x in h if not x["solver_converged"])
        rows = per_iteration_rows(job, solver, n)
        over = sum(1 for x in h if x["solver_iterations"] > -(-1000 * n // rows)) if solver != "cholesky" else 0
        steps = sum(s for s, _ in loads)
        mean_load = sum(s * l for s, l in loads) / steps if steps else float("nan")
        cut = "" if r.get("test_llh") is not None else " (cut: %d of %d steps)" % (len(h), r["steps"])
        llh = "—" if r.get("test_llh") is None else "%.3f" % r["test_llh"]
        rmse = "—" if r.get("test_rmse") is None else "%.4f" % r["test_rmse"]
        w("| %s | %s | %s | %s%s | %d | %.0f | %d of %d | %d | %.0f | %.0f | %.1f | %s | %s | %.4f |" % (
            ds, solver, mode, rules if solver != "cholesky" else "—", cut, its, ep, capped, len(h), over,
            r["solver_seconds"], r["total_seconds"], mean_load, llh, rmse, r["final"]["noise"]))
    w("")
    for solver in ["sgd", "cg", "ap"]:
        for ds in sorted({k[0] for k in runs}):
            for mode in ["cold", "warm"]:
                have = [k for k in runs if k[0] == ds and k[1] == solver and k[2] == mode]
                if not have:
                    continue
                have.sort(key=lambda k: ORDER.index(k[3]) if k[3] in ORDER else 9)
                exact = runs.get((ds, "cholesky", "exact", "paper"))
                w("### %s %s %s: σ and solver iterations by step" % (ds, solver.upper(), mode))
                w("")
                w("| step | " + " | ".join("σ %s" % k[3] for k in have) + (" | σ exact" if exact else "") + " | " +
                  " | ".join("iterations %s" % k[3] for k in have) + " |")
                w("|--:|" + "--:|" * (2 * len(have) + (1 if exact else 0)))
                for s in STEPS:
                    cells = []
                    for k in have:
                        h = runs[k][1]["history"]
                        cells.append("%.4f" % h[s - 1]["noise"] if s <= len(h) else "")
                    if exact:
                        h = exact[1]["history"]
                        cells.append("%.4f" % h[s - 1]["noise"] if s <= len(h) else "")
                    for k in have:
                        h = runs[k][1]["history"]
                        if s <= len(h):
                            x = h[s - 1]
                            cells.append("%d%s" % (x["solver_iterations"], "" if x["solver_converged"] else " (cap)"))
                        else:
                            cells.append("")
                    w("| %d | %s |" % (s, " | ".join(cells)))
                w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
