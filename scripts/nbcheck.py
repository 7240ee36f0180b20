#!/usr/bin/python3
"""nbcheck: checks on gpnb's GoNB notebooks (run with Debian's /usr/bin/python3).

  nbcheck.py stripped NB...   fail if a committed notebook carries outputs or
                              execution counts, or is not a gonb notebook
  nbcheck.py executed NB...   fail if an executed notebook has a failed cell: an
                              "error" output, or stderr that shows a Go compile
                              error, a panic or a non-zero exit status
  nbcheck.py strip NB...      remove outputs and execution counts in place
  nbcheck.py run OUTDIR TIMEOUT NB
                              execute NB with the gonb kernel, as
                              `jupyter nbconvert --to notebook --execute` does
                              (nbclient, kernel started in NB's folder), and
                              write the executed copy to OUTDIR even when a
                              cell fails, so its Go error can be shown; then
                              check it as `executed` does

Only "run" needs Jupyter (Debian's python3-nbclient); the checks use the
standard library alone.
"""
import html
import json
import re
import sys

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
    return bad


def executed(paths):
    bad = 0
    for p in paths:
        nb = load(p)
        for i, c in enumerate(nb.get("cells", [])):
            if c.get("cell_type") != "code":
                continue
            why = []
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
        with open(p, "w", encoding="utf-8") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return 0


def run(outdir, timeout, path):
    import os
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=int(timeout), kernel_name="gonb",
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    stopped = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as e:
        stopped = e
    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, os.path.basename(path))
    nbformat.write(nb, out)
    bad = executed([out])
    if stopped is not None and not bad:
        print(f"--- {path}: execution stopped ---\n{ANSI.sub('', str(stopped))[-4000:]}")
        bad = 1
    return bad


def main(argv):
    if len(argv) < 2 or argv[1] not in ("stripped", "executed", "strip", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "run":
        if len(argv) != 5:
            print(__doc__, file=sys.stderr)
            return 2
        return 1 if run(*argv[2:]) else 0
    fn = {"stripped": stripped, "executed": executed, "strip": strip}[argv[1]]
    return 1 if fn(argv[2:]) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
