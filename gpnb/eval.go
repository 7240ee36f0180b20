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

// Eval holds test metrics at the current hyperparameters on the z-scored
// scale the run trains on (the paper's tables use this scale), and the same
// in the data's units.
type Eval struct {
	TestRMSE float64 `json:"test_rmse"`
	// TestLLH is the mean Gaussian log density of the test targets under
	// the predictive distribution, whose variance includes the noise σ².
	TestLLH float64 `json:"test_llh"`
	// DataRMSE and DataLLH are TestRMSE and TestLLH in the data's units:
	// RMSE·YStd and LLH − log YStd (equal for data that are not normalised).
	DataRMSE float64 `json:"test_rmse_data_units"`
	DataLLH  float64 `json:"test_llh_data_units"`
	NTest    int     `json:"n_test"`
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
// hyperparameters, on the z-scored scale the run trains on: prediction
// (PredictScaled) at the dataset's test inputs. Eval.Method says how the
// predictions were computed. With the pathwise estimator, Eval.Samples
// holds the same metrics from its posterior samples (not on the exact
// path, which solves nothing iteratively). It fails when the
// dataset has no test part.
func (o *Optimiser) Evaluate() (Eval, error) {
	ev, err := o.evaluate()
	if err != nil || o.cfg.Estimator != Pathwise || o.st.Path == PathExact {
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
	p, mll, err := o.predict(ds.XTest)
	if err != nil {
		return Eval{}, fmt.Errorf("gpnb: evaluate: %w", err)
	}
	ev := Eval{TestRMSE: TestRMSE(p.Mean, ds.YTest), TestLLH: TestLLH(p.Mean, p.VarNoisy, ds.YTest), NTest: ds.NTest(), Method: p.Method, MLL: mll}
	ev.DataRMSE, ev.DataLLH = ev.TestRMSE, ev.TestLLH
	if st := ds.Stats; st.Normalised {
		ev.DataRMSE, ev.DataLLH = ev.TestRMSE*st.YStd, ev.TestLLH-math.Log(st.YStd)
	}
	return ev, nil
}

// predictIterative computes the predictive mean and latent variance at xs
// by solving H[α, W] = [y, K(X,xs)] with batched CG; the mean system starts
// at v0 (the training's last solution H⁻¹y, or nil).
func (e *Estimator) predictIterative(xs *mat.Dense, k kernel.Kernel, tol float64, v0 *mat.Dense) (mean, variance []float64, err error) {
	x, y := e.x, e.y.RawMatrix().Data
	// The evaluation's solves go to a tolerance (1e-6) float32 products
	// cannot reach: on the CPU they run in float64 whatever the training's
	// precision.
	op, err := e.newOperator(x, k, kernel.Float64)
	if err != nil {
		return nil, nil, err
	}
	if c, ok := op.(io.Closer); ok {
		defer c.Close()
	}
	n, _ := x.Dims()
	m, _ := xs.Dims()
	set := solvers.Settings{RelTolMean: tol, RelTolProbes: tol, MaxIterations: 20 * n}
	sv, err := solvers.CG{}.Start(op, mat.NewDense(n, 1, y), v0, set)
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
			variance[lo+j] = math.Max(s2-q, 0)
		}
	}
	return mean, variance, nil
}
