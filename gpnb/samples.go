package gpnb

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// Posterior samples "for free": the pathwise estimator's last solve holds
// v_y = H⁻¹y and ζ_j = H⁻¹ξ_j with ξ_j = f_j(X) + σε_j, so pathwise
// conditioning (Matheron's rule) gives posterior function samples
//
//	f_j(x*|y) = f_j(x*) + k(x*, X)(v_y − ζ_j)
//
// at any test inputs with one cross-kernel product and no further solve
// (kernel.PathwisePosterior). This file keeps that apart from Evaluate's
// exact path: samplePosterior takes only the state it needs, so a
// prediction API can call it as its sample-based method.

// SampleEval is the test evaluation from the pathwise estimator's posterior
// samples, reported beside the exact one (Eval.Samples): the predictive
// mean k(x*, X)v_y and the variance estimated from the samples' spread,
// plus σ², as Lin et al. (2024) evaluate their pathwise runs.
type SampleEval struct {
	TestRMSE float64 `json:"test_rmse"`
	TestLLH  float64 `json:"test_llh"`
	// Samples is the number of posterior samples s (Config.Probes).
	Samples int `json:"samples"`
	// Theta is the θ = (ℓ_1..ℓ_d, s, σ) the samples condition on: that of
	// the last solve, one Adam step behind the θ the exact evaluation uses.
	Theta []float64 `json:"theta"`
	// Converged reports whether the last solve met its tolerances (false
	// after a budget stop: the samples then come from an inexact solve).
	Converged bool `json:"converged"`
}

// ErrNoSamples is returned (wrapped) by PosteriorSamples when there are no
// posterior samples to give: another estimator, no completed step yet, or
// a solve pending mid-step.
var ErrNoSamples = errors.New("no posterior samples")

// PosteriorSamples returns Config.Probes posterior function samples at the
// test inputs xs (m×d), with the predictive mean and variance (σ²
// included) estimated from them, from the pathwise estimator's last
// completed solve, with no further solve: see kernel.PathwisePosterior and
// SampleEval. The samples are at the θ of that solve (the one before the
// last Adam update). Without the pathwise estimator, before the first step
// or while a step is paused mid-solve it returns an error wrapping
// ErrNoSamples.
func (o *Optimiser) PosteriorSamples(xs *mat.Dense) (*kernel.Posterior, error) {
	return o.est.PosteriorSamples(xs)
}

// PosteriorSamples is Optimiser.PosteriorSamples for an estimator used on
// its own.
func (e *Estimator) PosteriorSamples(xs *mat.Dense) (*kernel.Posterior, error) {
	st := &e.st
	switch {
	case e.cfg.Estimator != Pathwise:
		return nil, fmt.Errorf("gpnb: %w: the %v estimator draws no prior samples: use Config.Estimator = Pathwise", ErrNoSamples, e.cfg.Estimator)
	case st.Pending != nil:
		return nil, fmt.Errorf("gpnb: %w: a step is paused mid-solve, and its draws may not be those of the last solution: finish the step first", ErrNoSamples)
	case st.Pathwise == nil || st.PrevV.Rows != e.n || st.SolvedTheta == nil:
		return nil, fmt.Errorf("gpnb: %w: no solve has completed yet: take a step first", ErrNoSamples)
	}
	if xs == nil || xs.IsEmpty() {
		return nil, errors.New("gpnb: PosteriorSamples: no test inputs")
	}
	if _, d := xs.Dims(); d != e.d {
		return nil, fmt.Errorf("gpnb: PosteriorSamples: test inputs have %d columns, training inputs %d: use the same features", d, e.d)
	}
	k := kernel.Kernel{Family: e.cfg.Kernel, Hyper: kernel.HyperFromVector(st.SolvedTheta)}
	op, err := e.operator(k)
	if err != nil {
		return nil, fmt.Errorf("gpnb: PosteriorSamples: building the kernel operator: %w", err)
	}
	post, err := samplePosterior(op, st.Pathwise, st.PrevV.Dense(), xs)
	if err != nil {
		return nil, fmt.Errorf("gpnb: PosteriorSamples: %w", err)
	}
	return post, operatorErr(op)
}

// samplePosterior forms the posterior samples at xs from the operator H at
// the θ of the solve, the draws behind its probes and its solution
// v = [v_y, ζ_1..ζ_s] (n×(s+1)): the prior samples f_j(x*) at that θ, then
// one kernel.PathwisePosterior.
func samplePosterior(op kernel.GramOperator, draws *kernel.PathwiseDraws, v, xs *mat.Dense) (*kernel.Posterior, error) {
	n, m := v.Dims()
	s := m - 1
	if draws == nil || draws.N != n || draws.Prior.Samples != s {
		return nil, errors.New("the draws do not belong to the solution")
	}
	ms, _ := xs.Dims()
	fStar := mat.NewDense(ms, s, nil)
	if err := draws.Prior.EvalTo(fStar, xs, op.Kernel()); err != nil {
		return nil, err
	}
	return kernel.PathwisePosterior(op, xs, fStar, v.Slice(0, n, 0, 1).(*mat.Dense), v.Slice(0, n, 1, m).(*mat.Dense))
}

// evaluateSamples is the SampleEval of the dataset's test part.
func (o *Optimiser) evaluateSamples() (*SampleEval, error) {
	ds := o.ds
	post, err := o.PosteriorSamples(ds.XTest)
	if err != nil {
		return nil, err
	}
	conv := len(o.st.History) > 0 && o.st.History[len(o.st.History)-1].SolverConverged
	return &SampleEval{
		TestRMSE:  TestRMSE(post.Mean, ds.YTest),
		TestLLH:   TestLLH(post.Mean, post.Variance, ds.YTest),
		Samples:   o.cfg.Probes,
		Theta:     clone(o.est.st.SolvedTheta),
		Converged: conv,
	}, nil
}
