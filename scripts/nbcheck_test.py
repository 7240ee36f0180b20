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


if __name__ == "__main__":
    unittest.main()
