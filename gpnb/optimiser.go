package gpnb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// Matrix is a dense row-major matrix as plain data, the serialisable form
// of probes and solutions in OptimiserState and checkpoints.
type Matrix struct {
	Rows, Cols int
	Data       []float64
}

// matrixOf copies m into a Matrix; nil gives the zero Matrix.
func matrixOf(m *mat.Dense) Matrix {
	if m == nil || m.IsEmpty() {
		return Matrix{}
	}
	r, c := m.Dims()
	out := Matrix{Rows: r, Cols: c, Data: make([]float64, 0, r*c)}
	for i := 0; i < r; i++ {
		out.Data = append(out.Data, m.RawRowView(i)...)
	}
	return out
}

// Dense returns a copy of m as a *mat.Dense, or nil when m is empty.
func (m Matrix) Dense() *mat.Dense {
	if m.Rows == 0 || m.Cols == 0 {
		return nil
	}
	return mat.NewDense(m.Rows, m.Cols, append([]float64(nil), m.Data...))
}

// OptimiserState is everything an Optimiser holds, as plain exported data: what a
// user can inspect between steps and what a checkpoint stores. Fields are
// copies; changing them does not change the optimiser.
type OptimiserState struct {
	// Config is the run's configuration, resolved (Config.Resolve).
	Config      Config
	Fingerprint string // data.Dataset.Fingerprint of the training data
	// Dataset and Split name the training data (data.Dataset.Name and
	// Split); DataTag is its data.Dataset.String() (name, split, sizes).
	Dataset string
	Split   int
	DataTag string
	// Stats are the data's normalisation (z-scoring) statistics, with
	// which θ maps to the data's units (DataUnits).
	Stats data.Stats
	// Columns are the CSV columns the training data were read from
	// (data.Dataset.Columns: target, inputs, header; zero for other data),
	// with which the file is read again (Columns.Options).
	Columns data.Columns
	N, D    int

	// Step is the number of completed Adam steps.
	Step int
	// Raw are the unconstrained parameters Adam steps in, Theta the
	// hyperparameters they stand for (Config.Param: Theta = Softplus(Raw)
	// by default, exp(Raw) with ParamLog), both ordered (ℓ_1..ℓ_d, s, σ).
	Raw, Theta []float64
	// Gradient is the last step's ∇L with respect to the constrained θ.
	Gradient []float64
	// AdamM and AdamV are Adam's first and second moments (of the
	// gradient with respect to Raw).
	AdamM, AdamV []float64

	// PendingStepSeconds is the time an interrupted step has used so far.
	PendingStepSeconds float64

	// Path is the path the run takes (Config.PathFor, decided by
	// NewOptimiser). On the exact path LBFGS is its whole optimiser state
	// (point, memory, line search), Raw follows its θ and the Adam moments
	// stay zero; nil on the iterative path.
	Path  Path
	LBFGS *LBFGS
	// ExactFrom is the number of Adam steps after which an iterative run
	// went on along the exact path (Config.FinishExactUpTo): the steps
	// after it are L-BFGS iterations. 0 when it did not.
	ExactFrom int `json:"exact_from,omitempty"`
	// Subset is the number of training points of the subset on which
	// the exact path maximises L now (Config.ExactSubset); 0 once it
	// is on all N, and for a run without a subset stage.
	Subset int `json:"subset,omitempty"`
	// Start is the exact path's start in progress (Config.ExactStarts),
	// from 0; Best the finished start with the highest L so far, nil
	// before the second start and once the last has finished (LBFGS is
	// then the best).
	Start int    `json:"start,omitempty"`
	Best  *LBFGS `json:"best,omitempty"`

	// EstimatorState is level 2's state: probes, previous solutions, the
	// pending solve and the probe generator.
	EstimatorState

	// History holds every completed step's record.
	History History
}

// Optimiser is level 1 of the hierarchy: Adam maximising the marginal
// likelihood over unconstrained hyperparameters (Config.Param), with
// gradients from the
// level-2 estimator (Hutchinson with warm start, or exact). Create one with
// NewOptimiser or Resume; it is not safe for concurrent use.
type Optimiser struct {
	ds  *data.Dataset
	cfg Config         // resolved
	st  OptimiserState // level 1; st.EstimatorState is unused (est holds it)
	est *Estimator
	// exact evaluates L and its gradient on the exact path (made at its
	// first evaluation).
	exact *exactEvaluator
}

// NewOptimiser returns an optimiser for the training part of ds. Zero
// fields of cfg take their defaults (see Config); the option WithBackend
// applies. Recorders are added with AddRecorder.
func NewOptimiser(ds *data.Dataset, cfg Config, opts ...Option) (*Optimiser, error) {
	est, err := NewEstimator(ds, cfg, opts...)
	if err != nil {
		return nil, err
	}
	d := ds.D()
	cfg = est.cfg
	o := &Optimiser{ds: ds, cfg: cfg, est: est}
	raw := cfg.Param.Raw(cfg.Init)
	o.st = OptimiserState{
		Config:      cfg,
		Fingerprint: ds.Fingerprint(),
		Dataset:     dataSource(ds),
		Split:       ds.Split,
		DataTag:     ds.String(),
		Stats:       ds.Stats,
		Columns:     ds.Columns,
		N:           ds.NTrain(),
		D:           d,
		Raw:         raw,
		AdamM:       make([]float64, len(raw)),
		AdamV:       make([]float64, len(raw)),
	}
	if err := o.startPath(); err != nil {
		return nil, err
	}
	return o, nil
}

func checkDataset(ds *data.Dataset) error {
	if ds == nil || ds.XTrain == nil || ds.XTrain.IsEmpty() || ds.NTrain() == 0 {
		return errors.New("gpnb: no training data: the dataset is nil or empty; load one with data.Load, data.LoadCSV, data.New or data.Synthetic")
	}
	n, _ := ds.XTrain.Dims()
	if n != len(ds.YTrain) {
		return fmt.Errorf("gpnb: dataset has %d training inputs but %d targets", n, len(ds.YTrain))
	}
	if err := checkFinite(ds.XTrain, ds.YTrain); err != nil {
		return fmt.Errorf("gpnb: training data: %w", err)
	}
	return nil
}

// AddRecorder adds r to the optimiser's recorders, called after every solver
// iteration and every completed step (see Recorder), and returns the
// function that removes it again. A live view, a progress bar and a user's
// own recorder coexist.
func (o *Optimiser) AddRecorder(r Recorder) (remove func()) { return o.est.AddRecorder(r) }

// Close releases the kernel operator (for a GPU backend, its device
// memory). The optimiser stays usable: the next step builds a new one.
func (o *Optimiser) Close() error { return o.est.Close() }

// Estimator returns the optimiser's level-2 estimator.
func (o *Optimiser) Estimator() *Estimator { return o.est }

// Steps returns the number of completed steps.
func (o *Optimiser) Steps() int { return o.st.Step }

// Hyper returns the current constrained hyperparameters.
func (o *Optimiser) Hyper() kernel.Hyper {
	if o.st.Path == PathExact {
		return exactHyper(o.st.LBFGS.X)
	}
	return o.cfg.Param.Hyper(o.st.Raw)
}

// Kernel returns the current kernel.
func (o *Optimiser) Kernel() kernel.Kernel {
	return kernel.Kernel{Family: o.cfg.Kernel, Hyper: o.Hyper()}
}

// Config returns the run's configuration, resolved (Config.Resolve).
func (o *Optimiser) Config() Config { c := o.cfg; c.Init = c.Init.Clone(); return c }

// Dataset returns the data the optimiser trains on.
func (o *Optimiser) Dataset() *data.Dataset { return o.ds }

// History returns a copy of the record of every completed step.
func (o *Optimiser) History() History { return cloneHistory(o.st.History) }

// State returns a deep copy of the optimiser's whole state.
func (o *Optimiser) State() OptimiserState {
	s := o.st
	s.Theta = o.Hyper().Vector()
	s.Config = o.Config()
	s.Raw = clone(s.Raw)
	s.Gradient = clone(s.Gradient)
	s.AdamM = clone(s.AdamM)
	s.AdamV = clone(s.AdamV)
	s.LBFGS, s.Best = s.LBFGS.Clone(), s.Best.Clone()
	s.EstimatorState = o.est.State()
	s.History = cloneHistory(s.History)
	return s
}

func clone(v []float64) []float64 {
	if v == nil {
		return nil
	}
	return append([]float64(nil), v...)
}

func cloneHistory(h History) History {
	out := make(History, len(h))
	for i, r := range h {
		r.Lengthscales = clone(r.Lengthscales)
		r.Gradient = clone(r.Gradient)
		r.FinalResiduals = clone(r.FinalResiduals)
		if r.Residuals != nil {
			res := make([][]float64, len(r.Residuals))
			for t, row := range r.Residuals {
				res[t] = clone(row)
			}
			r.Residuals = res
		}
		if r.ExactMLL != nil {
			v := *r.ExactMLL
			r.ExactMLL = &v
		}
		out[i] = r
	}
	return out
}

// Run performs steps more marginal-likelihood steps, or with
// Config.Until = UntilConverged at most that many, stopping after the first
// step at which Converged holds (at once when it already does). It stops
// cleanly at the next solver iteration when ctx is cancelled or the process
// receives SIGINT (GoNB's interrupt): the in-flight solve is kept, a
// checkpoint is saved when Config.CheckpointPath is set, and the returned
// error wraps context.Canceled (or ctx's error) and says how to resume.
func (o *Optimiser) Run(ctx context.Context, steps int) error {
	if steps < 0 {
		return fmt.Errorf("gpnb: Run: steps = %d: must be ≥ 0", steps)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	for i := 0; i < steps; i++ {
		if o.cfg.Until == UntilConverged && o.Converged() {
			return nil
		}
		if err := o.Step(ctx); err != nil {
			if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
				return err
			}
			return o.interrupted(err)
		}
	}
	return nil
}

// RunTo continues until total steps have been completed in all (counting
// steps done before a Resume), or, with UntilConverged, until the run has
// converged if that comes first. It does nothing when total ≤ Steps().
func (o *Optimiser) RunTo(ctx context.Context, total int) error {
	if total <= o.st.Step {
		return nil
	}
	return o.Run(ctx, total-o.st.Step)
}

// interrupted saves a checkpoint (if configured) and explains how to resume.
func (o *Optimiser) interrupted(cause error) error {
	where := fmt.Sprintf("after %d completed steps", o.st.Step)
	if p := o.est.st.Pending; p != nil {
		where += fmt.Sprintf(", %d solver iterations into step %d", p.Iteration, o.st.Step+1)
	}
	if p := o.cfg.CheckpointPath; p != "" {
		if err := o.Save(p); err != nil {
			return fmt.Errorf("gpnb: interrupted %s, and saving the checkpoint %s failed: %v: %w", where, p, err, cause)
		}
		return fmt.Errorf("gpnb: interrupted %s; checkpoint saved to %s: continue with gpnb.Resume(%q, ds) and RunTo (or gpnb train --resume %s): %w", where, p, p, p, cause)
	}
	return fmt.Errorf("gpnb: interrupted %s; no checkpoint was saved (Config.CheckpointPath is empty): call Save(path) to keep the state, or call Run again in this process: %w", where, cause)
}

// Step performs one marginal-likelihood step: the gradient at the current θ
// (solving H[v_y, v_1..v_s] = [y, z_1..z_s] iteratively, or by Cholesky in
// ExactGradient mode), one Adam update, and the step's record. ctx is
// checked between solver iterations; when it is done, Step returns ctx.Err()
// and keeps the in-flight solve, so the next Step (also after Save and
// Resume) continues exactly where this one stopped. On the exact path
// (Config.PathFor) a step is one L-BFGS iteration instead (PathExact).
func (o *Optimiser) Step(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.st.finishPending() {
		if err := o.startFinish(); err != nil {
			return err
		}
	}
	if o.st.Path == PathExact {
		return o.exactStep(ctx)
	}
	t0 := time.Now()
	step := o.st.Step + 1
	rec := StepRecord{Step: step}
	grad := make([]float64, o.st.D+2)
	o.est.step = step
	if err := o.est.Gradient(ctx, o.Kernel(), grad, &rec); err != nil {
		o.st.PendingStepSeconds += time.Since(t0).Seconds()
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		return fmt.Errorf("gpnb: step %d: %w", step, err)
	}
	rec.Operator = o.est.OperatorDescription()
	rec.AdamHalvings = o.cfg.adamHalvings(o.st.History)
	o.adam(grad, o.cfg.LearningRate/float64(int(1)<<rec.AdamHalvings))
	h := o.Hyper()
	rec.Noise, rec.Signal, rec.Lengthscales = h.Noise, h.Signal, clone(h.Lengthscales)
	rec.Gradient = grad
	return o.finish(rec, t0)
}

// finish completes step rec.Step, begun at t0, on either path: its time
// (with what an interrupted step had used), the optimiser's step count and
// gradient (rec.Gradient), the history, the checkpoint and the recorders.
func (o *Optimiser) finish(rec StepRecord, t0 time.Time) error {
	rec.StepSeconds = o.st.PendingStepSeconds + time.Since(t0).Seconds()
	o.st.PendingStepSeconds = 0
	o.st.Gradient = clone(rec.Gradient)
	o.st.Step = rec.Step
	o.st.History = append(o.st.History, rec)
	if p := o.cfg.CheckpointPath; p != "" {
		if err := o.Save(p); err != nil {
			return fmt.Errorf("gpnb: step %d done but saving the checkpoint failed: %w", rec.Step, err)
		}
	}
	o.est.recs.step(rec)
	return nil
}

// adam applies one Adam ascent step at rate lr to the raw parameters,
// given ∇L with respect to the constrained θ (chain rule through
// Config.Param).
func (o *Optimiser) adam(grad []float64, lr float64) {
	t := float64(o.st.Step + 1)
	c1 := 1 - math.Pow(AdamBeta1, t)
	c2 := 1 - math.Pow(AdamBeta2, t)
	for i, g := range grad {
		gr := g * o.cfg.Param.grad(o.st.Raw[i])
		o.st.AdamM[i] = AdamBeta1*o.st.AdamM[i] + (1-AdamBeta1)*gr
		o.st.AdamV[i] = AdamBeta2*o.st.AdamV[i] + (1-AdamBeta2)*gr*gr
		mhat := o.st.AdamM[i] / c1
		vhat := o.st.AdamV[i] / c2
		o.st.Raw[i] += lr * mhat / (math.Sqrt(vhat) + AdamEpsilon)
	}
	// σ is the last parameter; both parametrisations are increasing, so
	// flooring the raw value floors σ.
	if m := o.cfg.NoiseMin; m > 0 {
		last := len(o.st.Raw) - 1
		o.st.Raw[last] = math.Max(o.st.Raw[last], o.cfg.Param.rawOf(m))
	}
}

// String summarises the optimiser in one line, for notebooks and logs.
func (o *Optimiser) String() string {
	h := o.Hyper()
	mode := o.cfg.Solver.Name()
	if o.st.Path == PathExact {
		mode = "exact path (Cholesky + L-BFGS)"
	} else if o.cfg.Estimator == ExactGradient {
		mode = "exact gradient"
	} else {
		if o.cfg.Estimator == Pathwise {
			mode += fmt.Sprintf(" (pathwise, %d features)", o.cfg.Features)
		}
		if o.cfg.WarmStart {
			mode += " + warm start"
		}
		if b := o.cfg.Settings.Budget; b > 0 {
			mode += fmt.Sprintf(", budget %g epochs a step", b)
		}
	}
	pending := ""
	if p := o.est.st.Pending; p != nil {
		pending = fmt.Sprintf(" (step %d paused after %d solver iterations)", o.st.Step+1, p.Iteration)
	}
	return fmt.Sprintf("gpnb.Optimiser: %s (n=%d, d=%d), %s, %s kernel, %d steps done%s; noise %.4g, signal %.4g, length scales %.4g",
		o.ds.Name, o.st.N, o.st.D, mode, o.cfg.Kernel, o.st.Step, pending, h.Noise, h.Signal, h.Lengthscales)
}

// Change lets f modify the run's configuration between steps, with the
// limits of a resumed run (see WithChanges): only the fields tagged
// `resume:"change"` may differ, others give ErrConfigMismatch and leave the
// configuration as it was. A pending mid-step solve keeps the solver
// settings it started with.
func (o *Optimiser) Change(f func(*Config)) error {
	want := o.Config()
	f(&want)
	want, err := want.Resolve(o.st.D)
	if err != nil {
		return err
	}
	if err := changeable(o.cfg, want); err != nil {
		return err
	}
	o.cfg, o.est.cfg, o.st.Config = want, want, want
	return nil
}

// dataSource names ds as data.Open reads it, or by its Name when it was
// built by hand.
func dataSource(ds *data.Dataset) string {
	if ds.Source != "" {
		return ds.Source
	}
	return ds.Name
}
