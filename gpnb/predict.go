package gpnb

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// Moments are a predictive distribution's pointwise mean and variances.
type Moments struct {
	Mean []float64 `json:"mean"`
	// Var is the variance of the latent function f(x*).
	Var []float64 `json:"var"`
	// VarNoisy is the variance of a new observation y* = f(x*) + ε: Var
	// plus the noise variance σ².
	VarNoisy []float64 `json:"var_noisy"`
}

// Band returns the central interval mean ± z·sd, with the noisy variance
// (a new observation's band) or the latent one; z = 1.96 gives 95%.
func (m Moments) Band(z float64, noisy bool) (lower, upper []float64) {
	v := m.Var
	if noisy {
		v = m.VarNoisy
	}
	lower, upper = make([]float64, len(m.Mean)), make([]float64, len(m.Mean))
	for i, mu := range m.Mean {
		sd := math.Sqrt(v[i])
		lower[i], upper[i] = mu-z*sd, mu+z*sd
	}
	return lower, upper
}

// Prediction is a trained run's predictive distribution at new points, in
// the data's own units and on the z-scored scale the run trains on (the
// two agree when the dataset is not normalised).
type Prediction struct {
	Data   Moments `json:"data"`
	Scaled Moments `json:"scaled"`
	// Method says how it was computed: "cholesky" (exact), or "cg rel. tol
	// 1e-06" (batched conjugate gradients to that relative residual).
	Method string `json:"method"`
	// Samples holds, with the pathwise estimator, its posterior function
	// samples at the points in the data's units, one slice of len(points)
	// values per sample (Config.Probes of them), from the last completed
	// solve at no further solve (Optimiser.PosteriorSamples; they condition
	// on that solve's θ, one Adam step behind Data's). Nil with the other
	// estimators, before the first step, or while a step is paused.
	Samples [][]float64 `json:"samples_data_units,omitempty"`
}

// Predict returns the predictive distribution at the rows of X, given in
// the data's units (the columns of the training file, before z-scoring),
// at the current hyperparameters. It computes it exactly by Cholesky when n
// ≤ Config.MaxExactN, or when one n×n float64 matrix fits the operator's
// memory budget (Config.Operator.MemoryBudget; factorised in place on the
// host after releasing the estimator's operator; with a backend, the matrix
// must also fit half of the host's memory); otherwise by batched conjugate
// gradients to Config.EvalRelTol on the estimator's operator (the backend's,
// when there is one), the mean system warm-started at the training's last
// solution. To predict with a saved run, Resume it on its dataset first.
func (o *Optimiser) Predict(X *mat.Dense) (Prediction, error) {
	if X == nil || X.IsEmpty() {
		return Prediction{}, errors.New("gpnb: predict: no points: give one point a row, with the dataset's input columns")
	}
	if _, d := X.Dims(); d != o.st.D {
		return Prediction{}, fmt.Errorf("gpnb: predict: points have %d columns, the training inputs %d: give the same input columns", d, o.st.D)
	}
	xs := mat.DenseCopyOf(X)
	if err := o.ds.Stats.NormaliseXTo(xs, xs); err != nil {
		return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
	}
	return o.PredictScaled(xs)
}

// PredictScaled is Predict for points already on the z-scored scale (such
// as the dataset's XTest).
func (o *Optimiser) PredictScaled(xs *mat.Dense) (Prediction, error) {
	if xs == nil || xs.IsEmpty() {
		return Prediction{}, errors.New("gpnb: predict: no points")
	}
	if _, d := xs.Dims(); d != o.st.D {
		return Prediction{}, fmt.Errorf("gpnb: predict: points have %d columns, the training inputs %d: give the same input columns", d, o.st.D)
	}
	if err := checkFinite(xs, nil); err != nil {
		return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
	}
	m, _, err := o.predict(xs)
	if err != nil {
		return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
	}
	p := Prediction{Scaled: m.Moments, Method: m.Method}
	st := o.ds.Stats
	p.Data = Moments{Mean: make([]float64, len(m.Mean)), Var: make([]float64, len(m.Mean)), VarNoisy: make([]float64, len(m.Mean))}
	if err := errors.Join(st.OriginalMeanTo(p.Data.Mean, m.Mean), st.OriginalVarTo(p.Data.Var, m.Var), st.OriginalVarTo(p.Data.VarNoisy, m.VarNoisy)); err != nil {
		return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
	}
	if o.cfg.Estimator == Pathwise {
		post, err := o.PosteriorSamples(xs)
		switch {
		case errors.Is(err, ErrNoSamples):
		case err != nil:
			return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
		default:
			m, s := post.Samples.Dims()
			col := make([]float64, m)
			for j := 0; j < s; j++ {
				mat.Col(col, j, post.Samples)
				f := make([]float64, m)
				if err := st.OriginalMeanTo(f, col); err != nil {
					return Prediction{}, fmt.Errorf("gpnb: predict: %w", err)
				}
				p.Samples = append(p.Samples, f)
			}
		}
	}
	return p, nil
}

// scaledPrediction is a prediction on the z-scored scale and its method.
type scaledPrediction struct {
	Moments
	Method string
}

// predict computes the predictive moments at z-scored xs by the method the
// data's size allows (see Predict), and the exact log marginal likelihood
// when Cholesky was used.
func (o *Optimiser) predict(xs *mat.Dense) (scaledPrediction, *float64, error) {
	ds, k := o.ds, o.Kernel()
	var p scaledPrediction
	var mll *float64
	var err error
	switch {
	case o.st.N <= o.cfg.maxExactN():
		var e *Exact
		if e, err = newExact(ds.XTrain, ds.YTrain, k, o.cfg.maxExactN()); err == nil {
			p.Mean, p.Var, err = e.predictLatent(xs)
			v := e.MLL()
			mll, p.Method = &v, "cholesky"
		}
	case inPlaceFits(o.st.N, o.cfg.Operator.MemoryBudget) && (o.est.backend == nil || inPlaceFits(o.st.N, kernel.DefaultMemoryBudget())):
		// One n×n matrix, factorised in place: the estimator's operator
		// (another n×n) is released first and rebuilt by the next step.
		if err = o.est.Close(); err != nil {
			return p, nil, err
		}
		freeMemory()
		var v float64
		p.Mean, p.Var, v, err = predictInPlace(ds.XTrain, ds.YTrain, xs, k)
		freeMemory()
		mll, p.Method = &v, "cholesky"
	default:
		tol := o.cfg.evalRelTol()
		var v0 *mat.Dense
		if pv := o.est.st.PrevV; pv.Rows == o.st.N {
			v0 = mat.NewDense(pv.Rows, 1, nil)
			v0.Copy(pv.Dense().Slice(0, pv.Rows, 0, 1))
		}
		p.Mean, p.Var, err = o.est.predictIterative(xs, k, tol, v0)
		p.Method = fmt.Sprintf("cg rel. tol %g", tol)
	}
	if err != nil {
		return p, nil, err
	}
	noise2 := k.Hyper.Noise * k.Hyper.Noise
	p.VarNoisy = make([]float64, len(p.Var))
	for i, v := range p.Var {
		p.VarNoisy[i] = v + noise2
	}
	return p, mll, nil
}
