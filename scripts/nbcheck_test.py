#!/usr/bin/python3
"""Tests for nbcheck.py on executed GoNB notebooks recorded in testdata/.

testdata/executed-bad.ipynb was executed with the gonb kernel
(nbconvert --allow-errors): cell 1 has a Go compile error, cell 2 panics,
cell 3 calls os.Exit(3), cell 4 is a shell cell that exits 1, cell 5 only
writes a warning to stderr. testdata/executed-good.ipynb ran cleanly.
Run: /usr/bin/python3 scripts/nbcheck_test.py
"""
import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nbcheck  # noqa: E402

BAD = os.path.join(HERE, "testdata", "executed-bad.ipynb")
GOOD = os.path.join(HERE, "testdata", "executed-good.ipynb")


def read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def quiet(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        n = fn(*args)
    return n, out.getvalue()


class Executed(unittest.TestCase):
    def test_bad_cells_found(self):
        n, out = quiet(nbcheck.executed, [BAD])
        self.assertEqual(n, 4, out)
        failed = [int(m) for m in re.findall(r"cell (\d+) failed", out)]
        self.assertEqual(failed, [1, 2, 3, 4])
        self.assertIn("undefined: undefinedVar", out)  # the compiler's message, from GoNB's HTML
        self.assertIn("panic: boom", out)
        self.assertIn("exit status 3", out)
        self.assertNotIn("just a warning", out)  # harmless stderr is not a failure

    def test_good_passes(self):
        n, out = quiet(nbcheck.executed, [GOOD])
        self.assertEqual(n, 0, out)


class Stripped(unittest.TestCase):
    def test_outputs_and_counts_flagged_then_strip(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "nb.ipynb")
            shutil.copy(GOOD, p)
            code = sum(1 for c in read(p)["cells"] if c["cell_type"] == "code")
            n, out = quiet(nbcheck.stripped, [p])
            self.assertEqual(n, 2 * code, out)  # every code cell has outputs and a count
            quiet(nbcheck.strip, [p])
            n, out = quiet(nbcheck.stripped, [p])
            self.assertEqual(n, 0, out)
            nb = read(p)
            self.assertTrue(all(c["outputs"] == [] and c["execution_count"] is None
                                for c in nb["cells"] if c["cell_type"] == "code"))
            # sources survive stripping
            self.assertEqual([c["source"] for c in nb["cells"]],
                             [c["source"] for c in read(GOOD)["cells"]])

    def test_wrong_kernel_flagged(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "nb.ipynb")
            nb = read(GOOD)
            nb["metadata"]["kernelspec"]["name"] = "python3"
            with open(p, "w", encoding="utf-8") as f:
                json.dump(nb, f)
            quiet(nbcheck.strip, [p])
            n, out = quiet(nbcheck.stripped, [p])
            self.assertEqual(n, 1, out)
            self.assertIn("want 'gonb'", out)


def viz_output(i, lib=False):
    """A display_data output as viz makes it, with id gpnb-i."""
    body = "<script>/* echarts 5.6.0 (Apache-2.0), inlined by gpnb */</script>" if lib else ""
    return {"output_type": "display_data", "metadata": {},
            "data": {"text/html": f'<div class="gpnb-output" data-gpnb-display="gpnb-{i}">\n{body}<div>chart</div></div>\n'}}


def code_cell(outputs, logged):
    c = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "%%\nc.Show()", "outputs": outputs}
    if logged is not None:
        c["metadata"][nbcheck.DISPLAYS_KEY] = [{"id": f"gpnb-{i}", "kind": "chart", "title": f"chart {i}"} for i in logged]
    return c


def notebook(*cells):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "gonb"}}, "cells": list(cells)}


class Displays(unittest.TestCase):
    def check(self, nb):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "nb.ipynb")
            with open(p, "w", encoding="utf-8") as f:
                json.dump(nb, f)
            return quiet(nbcheck.executed, [p])

    def test_all_there(self):
        n, out = self.check(notebook(code_cell([viz_output(1, lib=True), viz_output(2)], [1, 2]),
                                     code_cell([viz_output(3)], [3]), code_cell([], [])))
        self.assertEqual(n, 0, out)

    def test_lost_output(self):
        # Cell 2 logged two charts; only the first reached the notebook.
        n, out = self.check(notebook(code_cell([viz_output(1)], [1]), code_cell([viz_output(2)], [2, 3])))
        self.assertEqual(n, 1, out)
        self.assertIn("cell 2 failed", out)
        self.assertIn("viz created 2 output(s) in this cell, but the executed notebook holds 1", out)
        self.assertIn("missing: chart 'chart 3' (id gpnb-3)", out)
        self.assertIn("gonbui.Sync", out)

    def test_unlogged_output(self):
        n, out = self.check(notebook(code_cell([viz_output(1)], [])))
        self.assertEqual(n, 1, out)
        self.assertIn("not logged: output id gpnb-1", out)

    def test_no_log_no_check(self):
        # A notebook executed some other way has no log to compare with.
        n, out = self.check(notebook(code_cell([viz_output(1)], None)))
        self.assertEqual(n, 0, out)

    def test_library_twice(self):
        n, out = self.check(notebook(code_cell([viz_output(1, lib=True)], [1]), code_cell([viz_output(2, lib=True)], [2])))
        self.assertEqual(n, 1, out)
        self.assertIn("the echarts library is inlined 2 times (cells 1, 2)", out)

    def test_strip_removes_the_log(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "nb.ipynb")
            with open(p, "w", encoding="utf-8") as f:
                json.dump(notebook(code_cell([viz_output(1)], [1])), f)
            n, out = quiet(nbcheck.stripped, [p])
            self.assertEqual(n, 3, out)  # outputs, count and the log
            self.assertIn("gpnb_displays", out)
            quiet(nbcheck.strip, [p])
            n, out = quiet(nbcheck.stripped, [p])
            self.assertEqual(n, 0, out)


class Drawn(unittest.TestCase):
    def test_undrawn_panels(self):
        dom = ('<div class="gpnb-panel" id="a-0" data-title="drawn" _echarts_instance_="ec_1" style="">'
               '<div><canvas></canvas></div></div>'
               '<div class="gpnb-panel" id="a-1" data-title="no canvas" _echarts_instance_="ec_2"></div>'
               '<div class="gpnb-wait gpnb-error" id="b-wait">gpnb: the echarts library is not on this page</div>'
               '<div class="gpnb-panel" id="b-0" data-title="not &amp; drawn" style=""></div>')
        missing, n, waits = nbcheck.undrawn(dom)
        self.assertEqual(n, 3)
        self.assertEqual(missing, ["no canvas", "not & drawn"])
        self.assertEqual(waits, ["gpnb: the echarts library is not on this page"])


if __name__ == "__main__":
    unittest.main()
