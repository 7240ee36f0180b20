#!/usr/bin/python3
"""Notebook 01 in the default build of its first cell against pure Go.

Usage (from the repository root, with Debian's python3, GoNB and
GPNB_DATA set as for `make test-notebooks`):

  results/speed/notebook/run.py [ROUNDS]   run, append to raw.jsonl, summarise

run.sh runs it and renders tables.md with gpnb table.

ROUNDS (default "pure,tagged,pure,tagged") are executions of
notebooks/01-quickstart.ipynb, in turn, so that both builds share the
machine's load:

  tagged  the notebook as committed: its first cell's `%goflags -tags=openblas`
          and cgo (vectorised C kernels, OpenBLAS);
  pure    the same notebook with that line replaced by `%env CGO_ENABLED=0`,
          so GoNB's `go build` makes pure Go (Go's kernel code, gonum's BLAS).

Each run is executed as scripts/nbcheck.py run executes it for
`make test-notebooks` (nbclient, the gonb kernel started in notebooks/, a
TMPDIR of its own), and checked: the first cell's build line (nb.ShowBuild)
must name the build the round asks for, and no cell may fail. nbclient
records every cell's start and end (record_timing; whole seconds with GoNB);
the training cell is the one that calls opt.Run. Each run appends one JSON
line to raw.jsonl: the build line, every code cell's seconds, the training
cell's printed lines (its two runs' iterations and in-process seconds), the
1-minute load average before and after; summary.jsonl holds each build's
mean and their ratio, computed from raw.jsonl alone.
"""
import json
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
NOTEBOOK = os.path.join(ROOT, "notebooks", "01-quickstart.ipynb")
RAW = os.path.join(HERE, "raw.jsonl")
SUMMARY = os.path.join(HERE, "summary.jsonl")
TAG_LINE = "%goflags -tags=openblas"
PURE_LINE = "%env CGO_ENABLED=0"
# What the first cell's build line must say in each build.
EXPECT = {
    "tagged": ["kernel values vectorised C", "BLAS OpenBLAS (-tags openblas)"],
    "pure": ["kernel values pure Go (built without cgo)", "BLAS gonum (pure Go)"],
}
# The training cell's lines: "CG + ws  solver iterations   734   solver time  12.34s   total  15.67s ..."
RUN_LINE = re.compile(r"^(.+?)\s+solver iterations\s+(\d+)\s+solver time\s+([0-9.]+)s\s+total\s+([0-9.]+)s", re.M)


def text(out):
    t = out.get("text", "")
    return t if isinstance(t, str) else "".join(t)


def variant(build):
    """Notebook 01 with its first code cell set for build."""
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    if TAG_LINE not in first.source.split("\n"):
        sys.exit(f"run.py: the first cell of {NOTEBOOK} has no line {TAG_LINE!r}")
    if build == "pure":
        first.source = first.source.replace(TAG_LINE, PURE_LINE)
    return nb


def execute(nb, tmp):
    """Runs nb as scripts/nbcheck.py run does (kernel in notebooks/)."""
    from nbclient import NotebookClient

    os.environ["TMPDIR"] = tmp
    client = NotebookClient(nb, timeout=600, kernel_name="gonb", record_timing=True,
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    client.execute()


def seconds(cell):
    ex = cell.metadata.get("execution", {})
    a, b = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
    if not a or not b:
        return None
    parse = lambda s: time.mktime(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + s[19:].rstrip("Z"))
    return round(parse(b) - parse(a), 3)


def run(build):
    nb = variant(build)
    load0 = os.getloadavg()[0]
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="gpnb-speed-") as tmp:
        execute(nb, tmp)
    wall = time.time() - start
    load1 = os.getloadavg()[0]
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, c in enumerate(code):
        for o in c.outputs:
            if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr" and re.search(r"^panic: |\.go:\d+:\d+: |exit status", text(o), re.M)):
                sys.exit(f"run.py: {build}: code cell {i + 1} failed:\n{text(o) or o.get('evalue')}")
    line = next((l for o in code[0].outputs for l in text(o).splitlines() if l.startswith("gpnb build: ")), "")
    for want in EXPECT[build]:
        if want not in line:
            sys.exit(f"run.py: {build}: the build line {line!r} lacks {want!r}")
    train = next(i for i, c in enumerate(code) if "opt.Run(" in c.source)
    printed = "".join(text(o) for o in code[train].outputs if o.output_type == "stream")
    runs = [{"run": m[0], "iterations": int(m[1]), "solver_s": float(m[2]), "total_s": float(m[3])} for m in RUN_LINE.findall(printed)]
    if len(runs) != 2:
        sys.exit(f"run.py: {build}: the training cell printed {len(runs)} runs:\n{printed}")
    return {"build": build, "build_line": line, "cell_seconds": [seconds(c) for c in code], "training_cell": train,
            "training_cell_s": seconds(code[train]), "runs": runs, "notebook_s": round(wall, 1),
            "load_before": round(load0, 2), "load_after": round(load1, 2), "cores": os.cpu_count(),
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
            "in_process_s": round(sum(x["total_s"] for x in runs), 2),
            "iterations": ", ".join(str(x["iterations"]) for x in runs)}


def mean(xs):
    return sum(xs) / len(xs)


def summarise(rows):
    """The means of each build's runs and their ratio, a JSON line a
    measure, written to summary.jsonl for gpnb table."""
    by = {b: [r for r in rows if r["build"] == b] for b in ("pure", "tagged")}
    if not (by["pure"] and by["tagged"]):
        return
    measures = [
        ("training cell (nbclient's timing, whole seconds: compile, link and run)", lambda r: r["training_cell_s"]),
        ("training in process (the two runs' printed totals)", lambda r: sum(x["total_s"] for x in r["runs"])),
    ]
    with open(SUMMARY, "w") as f:
        for name, get in measures:
            m = {b: mean([get(r) for r in rs]) for b, rs in by.items()}
            f.write(json.dumps({"measure": name, "pure_runs": len(by["pure"]), "tagged_runs": len(by["tagged"]),
                                "pure_s": m["pure"], "tagged_s": m["tagged"], "ratio": m["pure"] / m["tagged"]}) + "\n")


def main():
    # As scripts/run-notebooks.sh: GoNB's tools on PATH, the UCI data.
    gopath = os.popen("go env GOPATH").read().strip()
    os.environ["PATH"] = os.path.join(gopath, "bin") + os.pathsep + os.environ["PATH"]
    os.environ.setdefault("GPNB_DATA", os.path.join(ROOT, "..", "shared", "data", "uci"))
    rounds = (sys.argv[1] if len(sys.argv) > 1 else "pure,tagged,pure,tagged").split(",")
    for b in rounds:
        if b not in EXPECT:
            sys.exit(f"run.py: round {b!r}: use pure or tagged")
    for b in rounds:
        print(f"run.py: {b} ...", flush=True)
        r = run(b)
        print(json.dumps(r), flush=True)
        with open(RAW, "a") as f:
            f.write(json.dumps(r) + "\n")
    summarise([json.loads(l) for l in open(RAW) if l.strip()])


if __name__ == "__main__":
    main()
