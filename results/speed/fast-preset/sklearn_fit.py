#!/usr/bin/python3
"""Fit scikit-learn's exact GP to a subset that gpnb exported (export.go) and
print one JSON line: fit seconds, test metrics on the z-scored scale, θ.

Usage: /usr/bin/python3 results/speed/fast-preset/sklearn_fit.py DIR   (DIR/train.csv, DIR/test.csv)

The model is what a Python user would run for gpnb's: ConstantKernel ×
Matern(ν = 1.5, one length scale per input) + WhiteKernel, every
hyperparameter starting at 1.0 (s² = 1, ℓ = 1, σ² = 1: gpnb's initial θ),
scikit-learn's L-BFGS-B on the exact log marginal likelihood, no restarts.
"""
import json
import os
import sys
import time
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

d = sys.argv[1]
tr = np.loadtxt(os.path.join(d, "train.csv"), delimiter=",")
te = np.loadtxt(os.path.join(d, "test.csv"), delimiter=",")
x, y = tr[:, :-1], tr[:, -1]
xt, yt = te[:, :-1], te[:, -1]
dim = x.shape[1]
kern = ConstantKernel(1.0) * Matern(length_scale=np.ones(dim), nu=1.5) + WhiteKernel(1.0)
gp = GaussianProcessRegressor(kernel=kern, n_restarts_optimizer=0, random_state=0)
evals = 0
inner = gp.log_marginal_likelihood


def counted(theta=None, eval_gradient=False, clone_kernel=True):
    global evals
    evals += 1
    return inner(theta, eval_gradient=eval_gradient, clone_kernel=clone_kernel)


gp.log_marginal_likelihood = counted
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    t0 = time.perf_counter()
    gp.fit(x, y)
    fit = time.perf_counter() - t0
mu, sd = gp.predict(xt, return_std=True)  # sd includes the WhiteKernel noise
k = gp.kernel_
out = {
    "n": len(y),
    "fit_seconds": fit,
    "mll_evaluations": evals,
    "test_rmse": float(np.sqrt(np.mean((mu - yt) ** 2))),
    "test_llh": float(np.mean(norm.logpdf(yt, mu, sd))),
    "mll": float(gp.log_marginal_likelihood_value_),
    "signal": float(np.sqrt(k.k1.k1.constant_value)),
    "lengthscales": [float(v) for v in np.atleast_1d(k.k1.k2.length_scale)],
    "noise": float(np.sqrt(k.k2.noise_level)),
    "warnings": [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)],
}
print(json.dumps(out))
