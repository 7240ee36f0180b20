package gpnb

import (
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// evalBatch is the number of test points whose variance solves share one
// batched CG run in the iterative evaluation.
const evalBatch = 256

// Eval holds test metrics at the current hyperparameters, on the dataset's
// (normalised) scale.
type Eval struct {
	TestRMSE float64 `json:"test_rmse"`
	// TestLLH is the mean Gaussian log density of the test targets under
	// the predictive distribution, whose variance includes the noise σ².
	TestLLH float64 `json:"test_llh"`
	NTest   int     `json:"n_test"`
	// Method says how the predictions were computed: "cholesky" (exact),
	// or "cg rel. tol 1e-06" (iterative, to that relative residual).
	Method string `json:"method"`
	// MLL is the exact log marginal likelihood (eq. 3) when Method is
	// "cholesky", nil otherwise.
	MLL *float64 `json:"mll,omitempty"`
	// Samples is the evaluation from the pathwise estimator's posterior
	// samples, at no further solve (see SampleEval); nil for the other
	// estimators.
	Samples *SampleEval `json:"samples,omitempty"`
}

// Evaluate computes test RMSE and test log-likelihood at the current
// hyperparameters exactly by Cholesky when n ≤ Config.MaxExactN (with Exact), or
// when one n×n float64 matrix fits the operator's memory budget
// (Config.Operator.MemoryBudget, default half of physical memory; factorised
// in place on the host, after releasing the estimator's operator). With a
// Backend (a GPU, say) the host matrix must also fit half of the host's
// physical memory, since the budget may describe the device. Otherwise it
// uses batched conjugate gradients to relative tolerance Config.EvalRelTol, on the
// Backend's operator when there is one. Eval.Method says which. With the
// pathwise estimator, Eval.Samples holds the same metrics from its
// posterior samples. It fails when the dataset has no test part.
func (o *Optimiser) Evaluate() (Eval, error) {
	ev, err := o.evaluate()
	if err != nil || o.cfg.Estimator != Pathwise {
		return ev, err
	}
	if ev.Samples, err = o.evaluateSamples(); err != nil {
		return ev, fmt.Errorf("gpnb: evaluate: %w", err)
	}
	return ev, nil
}

// evaluate is Evaluate without the posterior samples.
func (o *Optimiser) evaluate() (Eval, error) {
	ds := o.ds
	if ds.NTest() == 0 || ds.XTest == nil || ds.XTest.IsEmpty() {
		return Eval{}, errors.New("gpnb: evaluate: the dataset has no test part: load a UCI split, give data.TestFile, or use data.TestSize")
	}
	k := o.Kernel()
	if o.st.N <= o.cfg.maxExactN() {
		e, err := newExact(ds.XTrain, ds.YTrain, k, o.cfg.maxExactN())
		if err != nil {
			return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
		}
		mean, variance, err := e.Predict(ds.XTest)
		if err != nil {
			return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
		}
		mll := e.MLL()
		return Eval{TestRMSE: TestRMSE(mean, ds.YTest), TestLLH: TestLLH(mean, variance, ds.YTest), NTest: ds.NTest(), Method: "cholesky", MLL: &mll}, nil
	}
	if inPlaceFits(o.st.N, o.cfg.Operator.MemoryBudget) && (o.est.backend == nil || inPlaceFits(o.st.N, kernel.DefaultMemoryBudget())) {
		// One n×n matrix, factorised in place: the estimator's operator
		// (another n×n) is released first and rebuilt by the next step.
		if err := o.est.Close(); err != nil {
			return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
		}
		freeMemory()
		mean, variance, mll, err := predictInPlace(ds.XTrain, ds.YTrain, ds.XTest, k)
		freeMemory()
		if err != nil {
			return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
		}
		return Eval{TestRMSE: TestRMSE(mean, ds.YTest), TestLLH: TestLLH(mean, variance, ds.YTest), NTest: ds.NTest(), Method: "cholesky", MLL: &mll}, nil
	}
	tol := o.cfg.evalRelTol()
	mean, variance, err := o.est.predictIterative(ds.XTest, k, tol)
	if err != nil {
		return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
	}
	return Eval{TestRMSE: TestRMSE(mean, ds.YTest), TestLLH: TestLLH(mean, variance, ds.YTest), NTest: ds.NTest(), Method: fmt.Sprintf("cg rel. tol %g", tol)}, nil
}

// predictIterative computes the predictive mean and variance (with noise)
// at xs by solving H[α, W] = [y, K(X,xs)] with batched CG.
func (e *Estimator) predictIterative(xs *mat.Dense, k kernel.Kernel, tol float64) (mean, variance []float64, err error) {
	x, y := e.x, e.y.RawMatrix().Data
	op, err := e.newOperator(x, k)
	if err != nil {
		return nil, nil, err
	}
	if c, ok := op.(io.Closer); ok {
		defer c.Close()
	}
	n, _ := x.Dims()
	m, _ := xs.Dims()
	set := solvers.Settings{RelTolMean: tol, RelTolProbes: tol, MaxIterations: 20 * n}
	sv, err := solvers.CG{}.Start(op, mat.NewDense(n, 1, y), nil, set)
	if err != nil {
		return nil, nil, err
	}
	for !sv.Done() {
		if err := sv.Iterate(); err != nil {
			return nil, nil, err
		}
	}
	mean = make([]float64, m)
	op.CrossMulTo(mat.NewDense(m, 1, mean), xs, sv.Solution())
	if err := operatorErr(op); err != nil {
		return nil, nil, err
	}
	variance = make([]float64, m)
	s2 := k.Hyper.Signal * k.Hyper.Signal
	noise2 := k.Hyper.Noise * k.Hyper.Noise
	for lo := 0; lo < m; lo += evalBatch {
		hi := min(lo+evalBatch, m)
		c := hi - lo
		kx := mat.NewDense(n, c, nil)
		for i := 0; i < n; i++ {
			row := kx.RawRowView(i)
			for j := range row {
				row[j] = k.At(x.RawRowView(i), xs.RawRowView(lo+j))
			}
		}
		sv, err := solvers.CG{}.Start(op, kx, nil, set)
		if err != nil {
			return nil, nil, err
		}
		for !sv.Done() {
			if err := sv.Iterate(); err != nil {
				return nil, nil, err
			}
		}
		w := sv.Solution()
		for j := 0; j < c; j++ {
			var q float64
			for i := 0; i < n; i++ {
				q += kx.At(i, j) * w.At(i, j)
			}
			variance[lo+j] = math.Max(s2-q, 0) + noise2
		}
	}
	return mean, variance, nil
}
