#!/usr/bin/env python3
"""Exact test metrics of gpnb results, computed independently on a GPU.

For each gpnb result JSON given (a `gpnb train --json` file or a
`gpnb reproduce` job's result.json), rebuild H = K + σ²I for the dataset's
training split with the result's final hyperparameters (Matérn-3/2 ARD:
K = s²(1 + √3 r) exp(−√3 r), r = |(x − x')/ℓ|; signal s and noise σ as
standard deviations, the convention of gpnb's kernel.Hyper), factorise it
by Cholesky in float64 with PyTorch, and compute the predictive mean and
variance (noise included) at the test inputs, the test RMSE and the mean
test log-likelihood on the z-scored scale. Data are read and normalised as
by gpytorch_exact.py (package data's protocol).

Used by results/gpu/run.sh where gpnb's own evaluation would be slow on
that machine (keggdirected: n = 43945; gpnb evaluates by an in-place
Cholesky on the host CPU or by CG with 4883 right-hand sides) and as a
cross-check of gpnb's Cholesky evaluation where both exist (pol).
Prints one JSON object per result and appends it to --out.
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpytorch_exact import emit, load  # noqa: E402


def matern32(a, b, ell, s2):
    r = torch.cdist(a / ell, b / ell)
    u = math.sqrt(3.0) * r
    return s2 * (1.0 + u) * torch.exp(-u)


def evaluate(res, root, dev):
    if res.get("kernel", "matern32") != "matern32":
        raise ValueError(f"kernel {res.get('kernel')}: only matern32 is implemented here")
    xtr, ytr, xte, yte = load(res["dataset"], res.get("split", 0), root)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64, device=dev)
    xtr, ytr, xte, yte = t(xtr), t(ytr), t(xte), t(yte)
    f = res["final"]
    ell, s2, noise2 = t(f["lengthscales"]), f["signal"] ** 2, f["noise"] ** 2
    n = xtr.shape[0]
    h = matern32(xtr, xtr, ell, s2)
    h.diagonal().add_(noise2)
    L = torch.linalg.cholesky(h)
    del h
    alpha = torch.cholesky_solve(ytr[:, None], L)[:, 0]
    ks = matern32(xtr, xte, ell, s2)  # n × m
    mean = ks.T @ alpha
    w = torch.linalg.solve_triangular(L, ks, upper=False)
    var = s2 - (w * w).sum(0) + noise2
    rmse = torch.sqrt(torch.mean((mean - yte) ** 2)).item()
    llh = torch.mean(-0.5 * torch.log(2 * math.pi * var) - 0.5 * (yte - mean) ** 2 / var).item()
    return {"dataset": res["dataset"], "split": res.get("split", 0), "n_train": n, "n_test": xte.shape[0],
            "solver": res.get("solver"), "warm_start": res.get("warm_start"),
            "gpnb_test_llh": (res.get("test") or {}).get("test_llh"), "gpnb_test_rmse": (res.get("test") or {}).get("test_rmse"),
            "exact_test_llh": llh, "exact_test_rmse": rmse, "method": "torch float64 Cholesky on " + torch.cuda.get_device_name(dev)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="gpnb result JSON files")
    ap.add_argument("--data", default=os.environ.get("GPNB_DATA", "data/uci"))
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    dev = torch.device("cuda:0")
    for p in a.results:
        try:
            with open(p) as fh:
                res = json.load(fh)
            r = evaluate(res, a.data, dev)
        except Exception as e:
            r = {"file": p, "error": f"{type(e).__name__}: {e}"}
        r["file"] = p
        emit(r, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
