#!/usr/bin/python3
"""nbcheck: checks on gpnb's GoNB notebooks (run with Debian's /usr/bin/python3).

  nbcheck.py stripped NB...   fail if a committed notebook carries outputs or
                              execution counts, or is not a gonb notebook
  nbcheck.py executed NB...   fail if an executed notebook has a failed cell: an
                              "error" output, or stderr that shows a Go compile
                              error, a panic or a non-zero exit status; or a
                              cell whose viz outputs are not the ones viz
                              logged while it ran (an output lost on its way),
                              or a notebook that carries the echarts library
                              more than once
  nbcheck.py strip NB...      remove outputs and execution counts in place
  nbcheck.py run OUTDIR TIMEOUT NB [NAME]
                              execute NB with the gonb kernel, as
                              `jupyter nbconvert --to notebook --execute` does
                              (nbclient, kernel started in NB's folder), and
                              write the executed copy to OUTDIR (as NAME, by
                              default NB's name) even when a cell fails, so its
                              Go error can be shown; then check it as
                              `executed` does. While it runs, viz logs every
                              output it creates ($GPNB_VIZ_DISPLAY_LOG); the
                              log of each cell is kept in the executed copy's
                              cell metadata ("gpnb_displays") for the check.
  nbcheck.py drawn NB...      render each executed notebook as
                              `jupyter nbconvert --to html` does and load it in
                              headless chromium: fail if a chart panel was not
                              drawn (needs chromium; skipped without it unless
                              GPNB_REQUIRE_BROWSER=1)

"run" and "drawn" need Jupyter (Debian's python3-nbclient, nbconvert); the
other checks use the standard library alone.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# stderr text that means a cell failed, even where the kernel reported no
# "error" output (a shell cell, or a Go program's own exit).
FAILED = re.compile(
    r"^panic: |^fatal error: |exit status \d+|\.go:\d+:\d+: |failed to run|^ERROR: ",
    re.MULTILINE,
)


def text(v):
    return "".join(v) if isinstance(v, list) else (v or "")


def html_text(h):
    """Returns the readable text of GoNB's HTML error display."""
    h = re.sub(r"<style>.*?</style>", "", h, flags=re.S)
    h = re.sub(r'<div class="gonb-err-context">.*?</div></div>', "\n", h, flags=re.S)
    h = re.sub(r"<[^>]+>", "", h)
    return re.sub(r"\n\s*\n+", "\n", html.unescape(h)).strip()


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def stripped(paths):
    bad = 0
    for p in paths:
        nb = load(p)
        ks = nb.get("metadata", {}).get("kernelspec", {}).get("name")
        if ks != "gonb":
            print(f"{p}: kernelspec is {ks!r}, want 'gonb'")
            bad += 1
        for i, c in enumerate(nb.get("cells", [])):
            if c.get("cell_type") != "code":
                continue
            if c.get("outputs"):
                print(f"{p}: cell {i + 1} has {len(c['outputs'])} output(s): run 'make strip-notebooks'")
                bad += 1
            if c.get("execution_count") is not None:
                print(f"{p}: cell {i + 1} has execution_count {c['execution_count']}: run 'make strip-notebooks'")
                bad += 1
            if DISPLAYS_KEY in c.get("metadata", {}):
                print(f"{p}: cell {i + 1} has the run's {DISPLAYS_KEY} metadata: run 'make strip-notebooks'")
                bad += 1
    return bad


# viz wraps every notebook output in an element with this attribute
# (viz/gonb.go), and opens the inlined echarts library with LIBRARY
# (viz/assets.go).
DISPLAY_ID = re.compile(r'data-gpnb-display="([^"]+)"')
LIBRARY = re.compile(r"echarts \S+ \(Apache-2\.0\), inlined by gpnb")
DISPLAYS_KEY = "gpnb_displays"


def html_of(o):
    return text(o.get("data", {}).get("text/html"))


def displays_problem(c):
    """Compares a cell's viz outputs with the ones viz logged while it ran
    (in the cell's metadata); returns what is wrong, or None."""
    logged = c.get("metadata", {}).get(DISPLAYS_KEY)
    if logged is None:
        return None  # not run by `nbcheck.py run`
    found = []
    for o in c.get("outputs", []):
        if o.get("output_type") in ("display_data", "execute_result"):
            found += DISPLAY_ID.findall(html_of(o))
    want = [d.get("id") for d in logged]
    if sorted(found) == sorted(want):
        return None
    lines = [f"viz created {len(want)} output(s) in this cell, but the executed notebook holds {len(found)}:"]
    for d in logged:
        if d.get("id") not in found:
            lines.append(f"  missing: {d.get('kind')} {d.get('title')!r} (id {d.get('id')}): lost on its way to the notebook")
    for f in found:
        if f not in want:
            lines.append(f"  not logged: output id {f} (was $GPNB_VIZ_DISPLAY_LOG unset for the cell?)")
    lines.append("  (viz must call gonbui.Sync after every display: GoNB drops what is still in the pipe when a cell's program exits)")
    return "\n".join(lines)


def library_problem(nb):
    """The echarts library is inlined once per kernel session: an executed
    notebook (one session) carries it at most once."""
    cells = []
    for i, c in enumerate(nb.get("cells", [])):
        for o in c.get("outputs", []):
            cells += [i + 1] * len(LIBRARY.findall(html_of(o)))
    if len(cells) <= 1:
        return None
    return (f"the echarts library is inlined {len(cells)} times (cells {', '.join(map(str, cells))}): "
            "viz sends it with the first chart of a kernel session only")


def executed(paths):
    bad = 0
    for p in paths:
        nb = load(p)
        lib = library_problem(nb)
        if lib:
            bad += 1
            print(f"--- {p}: {lib}")
        for i, c in enumerate(nb.get("cells", [])):
            if c.get("cell_type") != "code":
                continue
            why = []
            lost = displays_problem(c)
            if lost:
                why.append(lost)
            for o in c.get("outputs", []):
                if o.get("output_type") == "error":
                    why.append(f"error output: {o.get('ename')}: {ANSI.sub('', text(o.get('evalue')))}\n"
                               + ANSI.sub("", "\n".join(o.get("traceback", []))))
                elif o.get("output_type") == "display_data" and "gonb-err" in text(o.get("data", {}).get("text/html")):
                    why.append("Go compiler:\n" + html_text(text(o["data"]["text/html"])))
                elif o.get("output_type") == "stream" and o.get("name") == "stderr":
                    t = ANSI.sub("", text(o.get("text")))
                    if FAILED.search(t):
                        why.append("stderr:\n" + t)
            if why:
                bad += 1
                lines = text(c.get("source")).split("\n")
                if len(lines) > 40:  # a long cell: its start and end
                    lines = lines[:20] + [f"... ({len(lines) - 35} lines) ..."] + lines[-15:]
                print(f"--- {p}: cell {i + 1} failed ---")
                print("source:\n  " + "\n  ".join(lines))
                for w in why:
                    print(w.rstrip()[-4000:])
    return bad


def strip(paths):
    for p in paths:
        nb = load(p)
        for c in nb.get("cells", []):
            if c.get("cell_type") == "code":
                c["outputs"] = []
                c["execution_count"] = None
                c.get("metadata", {}).pop(DISPLAYS_KEY, None)
        with open(p, "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return 0


def run(outdir, timeout, path, name=None):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(path, as_version=4)
    # The kernel, and so every cell's program, inherits the log's path.
    logfd, log = tempfile.mkstemp(prefix="gpnb-displays-", suffix=".jsonl")
    os.close(logfd)
    os.environ["GPNB_VIZ_DISPLAY_LOG"] = log
    seen = [0]

    def record(cell, cell_index, execute_reply):
        with open(log, encoding="utf-8") as f:
            lines = f.read().splitlines()
        cell.metadata[DISPLAYS_KEY] = [json.loads(x) for x in lines[seen[0]:] if x.strip()]
        seen[0] = len(lines)

    client = NotebookClient(nb, timeout=int(timeout), kernel_name="gonb", on_cell_executed=record,
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    stopped = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as e:
        stopped = e
    finally:
        os.remove(log)
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, name or os.path.basename(path))
    nbformat.write(nb, out)
    bad = executed([out])
    if stopped is not None and not bad:
        print(f"--- {path}: execution stopped ---\n{ANSI.sub('', str(stopped))[-4000:]}")
        bad = 1
    return bad


PANEL = re.compile(r'<div class="gpnb-panel" id="([^"]+)" data-title="([^"]*)"[^>]*>')
WAIT = re.compile(r'<div class="gpnb-wait[^"]*" id="([^"]+)-wait">([^<]*)</div>')


def undrawn(dom):
    """Returns the chart panels of a DOM that echarts did not draw (it marks
    a drawn panel's element with _echarts_instance_ and draws into a canvas
    inside it), the number of panels, and the waiting messages left."""
    panels = list(PANEL.finditer(dom))
    missing = []
    for k, m in enumerate(panels):
        end = panels[k + 1].start() if k + 1 < len(panels) else len(dom)
        if "_echarts_instance_" not in m.group(0) or "<canvas" not in dom[m.end():end]:
            missing.append(html.unescape(m.group(2)))
    waits = [html.unescape(m.group(2)) for m in WAIT.finditer(dom)]
    return missing, len(panels), waits


def chromium():
    for c in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        p = shutil.which(c)
        if p:
            return p
    return None


def drawn(paths):
    from nbconvert import HTMLExporter

    browser = chromium()
    if browser is None:
        msg = "nbcheck drawn: headless chromium not found (apt-get install chromium)"
        if os.environ.get("GPNB_REQUIRE_BROWSER") == "1":
            print(msg + ", and GPNB_REQUIRE_BROWSER=1")
            return len(paths)
        print(msg + ": charts not checked")
        return 0
    bad = 0
    for p in paths:
        body, _ = HTMLExporter().from_filename(p)
        with tempfile.TemporaryDirectory() as d:
            page = os.path.join(d, "page.html")
            with open(page, "w", encoding="utf-8") as f:
                f.write(body)
            r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--disable-background-networking", "--disable-component-update", "--disable-extensions",
                                "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + os.path.join(d, "profile"),
                                "--virtual-time-budget=10000", "--window-size=1400,1000", "--dump-dom", "file://" + page],
                               capture_output=True, text=True, timeout=180)
        if r.returncode != 0:
            print(f"--- {p}: chromium failed ({r.returncode}):\n{r.stderr[-2000:]}")
            bad += 1
            continue
        missing, n, waits = undrawn(r.stdout)
        if missing or waits:
            bad += 1
            print(f"--- {p}: {len(missing)} of {n} chart panels not drawn in the nbconvert HTML page: {missing}")
            for w in waits:
                print("  message left on the page: " + w)
        else:
            print(f"{p}: all {n} chart panels drawn in the nbconvert HTML page")
    return bad


def main(argv):
    if len(argv) < 2 or argv[1] not in ("stripped", "executed", "strip", "run", "drawn"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "run":
        if len(argv) not in (5, 6):
            print(__doc__, file=sys.stderr)
            return 2
        return 1 if run(*argv[2:]) else 0
    fn = {"stripped": stripped, "executed": executed, "strip": strip, "drawn": drawn}[argv[1]]
    return 1 if fn(argv[2:]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
