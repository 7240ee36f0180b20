#!/usr/bin/env python3
"""Issue 36's full-size comparison: pol, split 0, CG + warm start, 100 steps,
in float64, float32 and mixed precision (results/speed/<precision>/, made by the
commands in results/speed/README.md), beside the committed results/full run.

Usage: python3 results/speed.py > results/speed.md

Every number is read from the jobs' job.json, result.json and runs.json;
nothing is typed by hand. Times are wall-clock minutes on the machine and
under the load the runs.json files record.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
JOB = "pol-s0-cg-warm"


def read(d):
    jd = os.path.join(ROOT, d, "jobs", JOB)
    res = os.path.join(jd, "result.json")
    if not os.path.exists(res):
        return None
    r = json.load(open(res))
    runs_p = os.path.join(jd, "runs.json")
    runs = json.load(open(runs_p)) if os.path.exists(runs_p) else []
    job = json.load(open(os.path.join(jd, "job.json")))
    return job, r, runs, res


def precision(job):
    op = job.get("config", {}).get("operator", {}) or {}
    return op.get("precision") or "float64"


def load_of(runs):
    """Mean 1-minute load over the segments, weighted by their steps."""
    tot = sum(s["to_step"] - s["from_step"] for s in runs)
    if not runs or tot == 0:
        return None
    return sum(s.get("load_mean", 0) * (s["to_step"] - s["from_step"]) for s in runs) / tot


def builds(runs):
    """The builds that ran the segments: the commit, + where the tree had uncommitted changes."""
    out = set()
    for s in runs:
        env = s.get("environment", {})
        rev = env.get("vcs.revision")
        out.add(rev[:7] + ("+" if env.get("vcs.modified") == "true" else "") if rev else "unrecorded")
    return ", ".join(sorted(out)) or "unrecorded"


def started(runs, res):
    """The day the run started (runs.json), or else the day git first saw its result.json."""
    if runs:
        return runs[0]["started"][:10]
    day = subprocess.run(["git", "log", "--diff-filter=A", "--format=%ad", "--date=short", "--", res],
                         cwd=ROOT, capture_output=True, text=True).stdout.split()
    return (day[-1] if day else "unknown") + " (committed; no runs.json)"


def row(name, job, r, runs, res):
    h = r["history"]
    its = sum(x["solver_iterations"] for x in h)
    tot, sol = r["total_seconds"], r["solver_seconds"]
    build = [x["build_seconds"] for x in h if "build_seconds" in x]
    red = [x["reduce_seconds"] for x in h if "reduce_seconds" in x]
    ld = load_of(runs)
    return {
        "name": name, "prec": precision(job), "day": started(runs, res), "build": builds(runs),
        "load": "%.2f" % ld if ld is not None else "not recorded",
        "tot": tot / 60, "sol": sol / 60, "its": its, "per_it": sol / its,
        "share": (tot - sol) / tot,
        "build_s": sum(build) / len(build) if build else None,
        "reduce_s": sum(red) / len(red) if red else None,
        "rmse": r["test_rmse"], "llh": r["test_llh"],
    }


def fmt(v, f):
    return f % v if v is not None else "—"


def main():
    rows = []
    for name, d in [("results/speed/float64", "speed/float64"), ("results/speed/float32", "speed/float32"),
                    ("results/speed/mixed", "speed/mixed"), ("results/full", "full")]:
        got = read(d)
        if got:
            rows.append(row(name, *got))
    w = sys.stdout.write
    w("# Issue 36: full pol, CG + warm start, in float64, float32 and mixed precision\n\n")
    w("Rendered by `python3 results/speed.py > results/speed.md` from the jobs' files (commands in "
      "[speed/README.md](speed/README.md)). pol, split 0 (n = 13500, d = 26), 100 Adam steps, the paper's "
      "settings, OpenBLAS on the 2-core machine. `load` is the mean 1-minute load average over the run "
      "(runs.json): a run's own two threads make it about 2.\n\n")
    w("| run | precision | day | build | load | total min | solver min | solver iterations | solver s per iteration | "
      "non-solver share | K build s per step | reduction s per step | test RMSE | test LLH |\n")
    w("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
    for x in rows:
        w("| %s | %s | %s | %s | %s | %.1f | %.1f | %d | %.4f | %.0f %% | %s | %s | %.4f | %.3f |\n" % (
            x["name"], x["prec"], x["day"], x["build"], x["load"], x["tot"], x["sol"], x["its"], x["per_it"],
            100 * x["share"], fmt(x["build_s"], "%.2f"), fmt(x["reduce_s"], "%.2f"), x["rmse"], x["llh"]))
    by = {x["name"]: x for x in rows}
    a = by.get("results/speed/float64")
    for prec in ["float32", "mixed"]:
        b = by.get("results/speed/" + prec)
        if not (a and b):
            continue
        w("\nfloat64 / %s, from the two results/speed runs: total time %.2f×, solver time %.2f×, seconds per solver "
          "iteration %.2f×, solver iterations %.2f× (%s needs %+.0f %%); test LLH %s − float64 = %+.4f.\n" % (
              prec, a["tot"] / b["tot"], a["sol"] / b["sol"], a["per_it"] / b["per_it"], a["its"] / b["its"],
              prec, 100 * (b["its"] / a["its"] - 1), prec, b["llh"] - a["llh"]))
        w("Against the issue's targets: %s total %.1f min (target ≤ 7 for float32); test LLH within %.4f of float64's "
          "(target 0.01). Even at float64's iteration count (%d), %s's seconds per solver iteration (%.4f) give %.1f min in "
          "the solver alone on this machine.\n" % (prec, b["tot"], abs(b["llh"] - a["llh"]), a["its"], prec, b["per_it"],
                                                    a["its"] * b["per_it"] / 60))
    f = by.get("results/full")
    if a and f:
        w("\nresults/full (the issue's baseline, %.1f min) ran on %s; the float64 run above, the same configuration on "
          "%s, took %.2f× as long, at %.2f× the seconds per solver iteration.\n" % (
              f["tot"], f["day"], a["day"], a["tot"] / f["tot"], a["per_it"] / f["per_it"]))


if __name__ == "__main__":
    main()
