#!/usr/bin/env python3
"""GPyTorch baseline for results/gpu: exact GP training with GPyTorch's
defaults (its CG-based marginal likelihood for n > 800, preconditioned by
a rank-15 pivoted Cholesky, 10 trace probes), on the same data, kernel,
initialisation and optimiser as gpnb's runs:

- UCI split S of DATASET read from $GPNB_DATA/<name>/{data,test_mask}.csv.gz,
  the target the last column, z-scored with the training split's mean and
  population standard deviation (the protocol of package data);
- Matérn-3/2 ARD kernel with a signal scale, Gaussian likelihood, every
  constrained hyperparameter initialised to 1 (gpnb's default), softplus;
- Adam, learning rate 0.1, 100 steps, float64 (or --dtype float32), on one
  CUDA device;
- GPyTorch's own settings at their defaults, or with --cg-tolerance (its
  training CG's tolerance, default 1) and --precond-size (the pivoted-
  Cholesky preconditioner's rank, default 15; 0: none) changed, recorded in
  the output with --label.

It prints one JSON object per dataset (and writes it to --out): the wall
time of the training steps (synchronised), of the evaluation, test RMSE and
test log-likelihood of the predictive distribution with noise, and the final
hyperparameters. Run on the GPU machine by results/gpu/run.sh.
"""
import argparse
import contextlib
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import gpytorch


def load(name, split, root):
    with gzip.open(os.path.join(root, name, "data.csv.gz"), "rt") as f:
        data = np.loadtxt(f, delimiter=",", ndmin=2)
    with gzip.open(os.path.join(root, name, "test_mask.csv.gz"), "rt") as f:
        mask = np.loadtxt(f, delimiter=",", ndmin=2)[:, split] > 0.5
    x, y = data[:, :-1], data[:, -1]
    xtr, ytr, xte, yte = x[~mask], y[~mask], x[mask], y[mask]
    mx, sx = xtr.mean(0), xtr.std(0)
    sx[sx == 0] = 1.0
    my, sy = ytr.mean(), ytr.std()
    return (xtr - mx) / sx, (ytr - my) / sy, (xte - mx) / sx, (yte - my) / sy


class GP(gpytorch.models.ExactGP):
    def __init__(self, x, y, lik):
        super().__init__(x, y, lik)
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.MaternKernel(nu=1.5, ard_num_dims=x.shape[1]))

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


DT = torch.float64


def run(name, split, steps, lr, root, dev, cg_tol=None, precond=None):
    xtr, ytr, xte, yte = load(name, split, root)
    t = lambda a: torch.as_tensor(a, dtype=DT, device=dev)
    xtr, ytr, xte, yte = t(xtr), t(ytr), t(xte), t(yte)
    lik = gpytorch.likelihoods.GaussianLikelihood().to(dev, DT)
    model = GP(xtr, ytr, lik).to(dev, DT)
    model.covar_module.base_kernel.lengthscale = torch.ones(xtr.shape[1], dtype=DT, device=dev)
    model.covar_module.outputscale = 1.0
    lik.noise = 1.0
    model.train()
    lik.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(lik, model)
    settings = []
    if cg_tol is not None:
        settings.append(gpytorch.settings.cg_tolerance(cg_tol))
    if precond is not None:
        settings.append(gpytorch.settings.max_preconditioner_size(precond))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        opt.zero_grad()
        with contextlib.ExitStack() as st:
            for s in settings:
                st.enter_context(s)
            loss = -mll(model(xtr), ytr)
            loss.backward()
        opt.step()
        if (i + 1) % 10 == 0:  # progress, so that a run cut short still shows its rate
            torch.cuda.synchronize()
            print(f"{name}: step {i + 1}/{steps} {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    torch.cuda.synchronize()
    train_s = time.perf_counter() - t0
    model.eval()
    lik.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        pred = lik(model(xte))
        mean, var = pred.mean, pred.variance
        rmse = torch.sqrt(torch.mean((mean - yte) ** 2)).item()
        llh = torch.mean(-0.5 * torch.log(2 * math.pi * var) - 0.5 * (yte - mean) ** 2 / var).item()
    torch.cuda.synchronize()
    eval_s = time.perf_counter() - t0
    return {
        "dataset": name, "split": split, "n_train": xtr.shape[0], "n_test": xte.shape[0], "d": xtr.shape[1],
        "steps": steps, "lr": lr, "train_seconds": train_s, "eval_seconds": eval_s,
        "test_rmse": rmse, "test_llh": llh,
        "lengthscales": model.covar_module.base_kernel.lengthscale.detach().cpu().flatten().tolist(),
        "signal": model.covar_module.outputscale.item(), "noise": lik.noise.item(),
        "gpytorch": gpytorch.__version__, "torch": torch.__version__, "device": torch.cuda.get_device_name(dev),
        "settings": ("GPyTorch defaults" if cg_tol is None and precond is None else "GPyTorch") +
                    f": max_cholesky_size 800, max_cg_iterations 1000, cg_tolerance {1.0 if cg_tol is None else cg_tol:g}, "
                    f"num_trace_samples 10, max_preconditioner_size {15 if precond is None else precond}; " + str(DT).replace("torch.", ""),
        "cg_tolerance": 1.0 if cg_tol is None else cg_tol,
        "precond_size": 15 if precond is None else precond,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="pol")
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--data", default=os.environ.get("GPNB_DATA", "data/uci"))
    ap.add_argument("--out", default="")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--cg-tolerance", type=float, default=None, help="gpytorch.settings.cg_tolerance for training (default: GPyTorch's, 1)")
    ap.add_argument("--precond-size", type=int, default=None, help="gpytorch.settings.max_preconditioner_size (default: GPyTorch's, 15; 0: none)")
    ap.add_argument("--label", default="defaults", help="a name for these settings in the output")
    a = ap.parse_args()
    global DT
    DT = torch.float64 if a.dtype == "float64" else torch.float32
    dev = torch.device("cuda:0")
    for name in a.datasets.split(","):
        try:
            r = run(name, a.split, a.steps, a.lr, a.data, dev, a.cg_tolerance, a.precond_size)
        except Exception as e:  # report and go on (out of memory, say)
            r = {"dataset": name, "split": a.split, "error": f"{type(e).__name__}: {e}"}
        r["label"] = a.label
        emit(r, a.out)
    return 0


def emit(r, out):
    """Prints r as one JSON line, appends it to the file out (if given) and
    frees PyTorch's cached GPU memory for the next run."""
    line = json.dumps(r)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
