package gpnb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/enum"
)

// Path is how an Optimiser maximises the marginal likelihood, decided once
// by NewOptimiser from the number of training points n and of inputs d
// (Config.PathFor: ExactUpTo, ExactWorkUpTo) and kept in
// OptimiserState.Path, so that a resumed run goes on along the same path.
type Path int

const (
	// PathIterative is Adam on the gradient of Config.Estimator (iterative
	// solves with Config.Solver, or Cholesky for ExactGradient): the
	// paper's method, and the path of every run Config.PathFor does not
	// send to the exact one.
	PathIterative Path = iota
	// PathExact maximises the exact log marginal likelihood by L-BFGS
	// (LBFGS) over x = (log ℓ_1, …, log ℓ_d, log s², log σ²), scikit-learn's
	// coordinates (exactPower), each evaluation one Cholesky factorisation of
	// H = K + σ²I giving L and its exact gradient (Exact). A quasi-Newton
	// method needs both to be exact, which the iterative estimates are not
	// (DESIGN.md); for small n the factorisation is also cheaper than the
	// iterative path's steps. Each step is one L-BFGS iteration
	// (StepRecord.Evaluations factorisations), within the box
	// [ExactThetaMin, ExactThetaMax] for the length scales and the squares
	// s² and σ², σ's floor raised to Config.NoiseMin; the run has
	// converged by the rule of ExactGradTol and ExactRelTol. With a
	// subset stage (Config.ExactSubset), the first steps are on a subset
	// of the points (StepRecord.Points).
	PathExact
)

var pathNames = enum.Enum[Path]{Type: "Path", What: "path", Err: errEnum, Names: []string{"iterative", "exact"}}

// String returns "iterative" or "exact".
func (p Path) String() string { return pathNames.Name(p) }

// MarshalText returns String().
func (p Path) MarshalText() ([]byte, error) { return pathNames.Marshal(p) }

// UnmarshalText parses iterative or exact.
func (p *Path) UnmarshalText(b []byte) error { return pathNames.Unmarshal(p, b) }

// The exact path's box and convergence rule.
const (
	// ExactThetaMin and ExactThetaMax bound the exact path's length scales
	// ℓ_i and the squares s² and σ² (on the z-scored scale), as
	// scikit-learn's default bounds (1e-5, 1e5) bound its Matern length
	// scales, ConstantKernel and WhiteKernel: the length scale of an input
	// that does not matter stops at ExactThetaMax instead of growing for
	// ever while L rises by ever less, and σ stops at its floor (the
	// larger of √ExactThetaMin and Config.NoiseMin) where L would rise on
	// as σ → 0, as it does where inputs repeat with near-equal targets.
	ExactThetaMin = 1e-5
	ExactThetaMax = 1e5
	// ExactGradTol: the exact path has converged once every component of
	// the projected gradient of L with respect to the exact path's x
	// (PathExact; a component held at a bound counts 0) is below
	// ExactGradTol·n, n the number of training points (scipy's L-BFGS-B
	// default pgtol 1e-5, per point).
	ExactGradTol = 1e-5
	// ExactRelTol: the exact path has converged once an L-BFGS step
	// raised L by less than ExactRelTol·max(|L|, 1): scipy's L-BFGS-B
	// default factr 1e7 times float64's machine epsilon.
	ExactRelTol = 1e7 * epsilon
)

// PathFor returns the path a run of c takes on n training points with d
// inputs: PathExact when n ≤ c.ExactUpTo, or when ExactUpTo > 0, n·(d+2) ≤
// c.ExactWorkUpTo and n ≤ min(ExactWorkMaxN, MaxExactN); else
// PathIterative.
func (c Config) PathFor(n, d int) Path {
	if n <= c.ExactUpTo || c.ExactByWork(n, d) {
		return PathExact
	}
	return PathIterative
}

// ExactByWork reports whether c.ExactWorkUpTo, not ExactUpTo, sends a run
// on n training points with d inputs to the exact path (PathFor): n >
// ExactUpTo > 0, n·(d+2) ≤ ExactWorkUpTo and n ≤ min(ExactWorkMaxN,
// MaxExactN).
func (c Config) ExactByWork(n, d int) bool {
	return n > c.ExactUpTo && c.ExactUpTo > 0 && n*(d+2) <= c.ExactWorkUpTo && n <= min(ExactWorkMaxN, c.maxExactN())
}

// ExactWorkMaxN is the most training points for which Config.ExactWorkUpTo
// sends a run to the exact path; ExactUpTo alone sends larger ones. The
// rule in n·(d+2) was measured up to 4000 points; with fewer inputs it
// would admit more, where each evaluation on all points costs O(n³): with
// 2 inputs at 7500 points the exact path, its subset stage included, took
// 0.9 times Adam's time, and it grows as n³ beyond (DESIGN.md, "A good
// model fast").
const ExactWorkMaxN = 4000

// startPath sets the optimiser's path (Config.PathFor) and, for the exact
// path, its L-BFGS at the initial θ moved into the box.
func (o *Optimiser) startPath() error {
	o.st.Path = o.cfg.PathFor(o.st.N, o.st.D)
	if o.st.Path != PathExact {
		return nil
	}
	o.st.Subset = o.cfg.exactSubset(o.st.N, o.st.D)
	return o.startLBFGS(o.cfg.Init)
}

// exactStarts returns the number of starts of a run of c on n training
// points with d inputs on the exact path (Config.ExactStarts): 1 unless
// n ≤ ExactUpTo and the run has no subset stage.
func (c *Config) exactStarts(n, d int) int {
	if c.ExactStarts <= 1 || n > c.ExactUpTo || c.exactSubset(n, d) > 0 {
		return 1
	}
	return c.ExactStarts
}

// startInit returns the initial θ of the exact path's start k
// (Config.ExactStarts): Config.Init with its length scales times 2^k.
func (c *Config) startInit(k int) kernel.Hyper {
	h := c.Init.Clone()
	for i := range h.Lengthscales {
		h.Lengthscales[i] = math.Ldexp(h.Lengthscales[i], k)
	}
	return h
}

// endStart ends the exact path's start in progress, converged: it keeps
// the one with the higher L of it and the best before, then begins the
// next start, or after the last makes the best the run's L-BFGS state.
func (o *Optimiser) endStart() error {
	st := &o.st
	if st.Best == nil || st.LBFGS.F < st.Best.F {
		st.Best = st.LBFGS
	}
	if st.Start+1 < o.cfg.exactStarts(st.N, st.D) {
		st.Start++
		return o.startLBFGS(o.cfg.startInit(st.Start))
	}
	st.LBFGS, st.Best = st.Best, nil
	st.Raw = o.cfg.Param.Raw(o.Hyper())
	return nil
}

// ExactSubsetDiv and ExactSubsetPerInput size the exact path's subset
// stage (Config.ExactSubset): at least 1/ExactSubsetDiv of the n training
// points and ExactSubsetPerInput per input, and the stage only where that
// is at most n/2. From the subset's θ, near the optimum on all points,
// with the subset's curvature pairs in its memory, L-BFGS on all points
// needs a few evaluations. A subset with few points per input can end at
// a local maximum of its own (σ at its floor, inputs dropped) that the run
// on all points does not leave: with 38–56 points per input (pol,
// keggdirected, elevators, protein) the runs ended at an L below that of
// the run without the stage, with 59–111 (bike, protein) at the same L.
// DESIGN.md ("A good model fast") has the measurements.
const (
	ExactSubsetDiv      = 4
	ExactSubsetPerInput = 100
)

// exactSubset returns the size of the subset on which a run of c on n
// training points with d inputs that starts on the exact path maximises L
// first (Config.ExactSubset), or 0 for none.
func (c *Config) exactSubset(n, d int) int {
	if c.ExactSubset == 0 {
		return 0
	}
	m := max(c.ExactSubset, n/ExactSubsetDiv, ExactSubsetPerInput*d)
	if 2*m > n {
		return 0
	}
	return m
}

// exactData returns the training data of the exact path's evaluations:
// the subset of OptimiserState.Subset points, or all of them.
func (o *Optimiser) exactData() (*mat.Dense, []float64) {
	if o.st.Subset == 0 {
		return o.ds.XTrain, o.ds.YTrain
	}
	return data.SubsetRows(o.ds.XTrain, o.ds.YTrain, o.st.Subset, o.cfg.Seed)
}

// endSubset moves the exact path from its subset stage, converged, to all
// training points: L-BFGS goes on from its point with its memory, the
// gradient changes y scaled by N/Subset (L, a sum over the points, and its
// curvature grow with their number), after a first evaluation there.
func (o *Optimiser) endSubset() error {
	m := o.st.LBFGS
	next, err := NewLBFGS(m.X, m.Lower, m.Upper)
	if err != nil {
		return err
	}
	next.S, next.Y, next.Active = cloneRows(m.S), cloneRows(m.Y), slices.Clone(m.Active)
	for _, y := range next.Y {
		floats.Scale(float64(o.st.N)/float64(o.st.Subset), y)
	}
	o.st.LBFGS, o.st.Subset, o.exact = next, 0, nil
	return nil
}

// startLBFGS sets the state's L-BFGS at θ moved into the exact path's box.
func (o *Optimiser) startLBFGS(theta kernel.Hyper) error {
	p := o.st.D + 2
	lo, hi, x0 := make([]float64, p), make([]float64, p), make([]float64, p)
	for i, v := range theta.Vector() {
		lo[i], hi[i], x0[i] = math.Log(ExactThetaMin), math.Log(ExactThetaMax), exactPower(i, p)*math.Log(v)
	}
	if m := 2 * math.Log(o.cfg.NoiseMin); m > lo[p-1] {
		lo[p-1], hi[p-1] = m, math.Max(hi[p-1], m)
	}
	m, err := NewLBFGS(x0, lo, hi)
	if err != nil {
		return err
	}
	o.st.LBFGS = m
	o.st.Raw = o.cfg.Param.Raw(o.Hyper())
	return nil
}

// FinishNoiseRatio: a run that finishes on the exact path
// (Config.FinishExactUpTo) switches once Adam has taken σ below
// FinishNoiseRatio·Config.NoiseMin. σ heading that far toward its floor
// marks a near-noiseless target, where Adam's steps in log σ shrink (its
// second moment remembers the first steps' large gradients) while every
// solve grows longer, and L-BFGS on the exact L, whose evaluation costs
// the same at any σ, gets there in fewer evaluations than Adam takes
// steps. Data whose σ stays well above the floor wait for Adam's test:
// DESIGN.md has why the ratio is 10. No such switch without a floor
// (NoiseMin = 0).
const FinishNoiseRatio = 10

// The causes of an iterative run's switch to the exact path
// (Config.FinishCause).
const (
	FinishFloat64   = "σ² neared K's rounding"
	FinishNoise     = "σ neared its floor"
	FinishConverged = "Adam converged"
)

// FinishCause says why a run of c (resolved) on n training points,
// after the steps of h, switches to the exact path (FinishExactUpTo):
// FinishFloat64 where the last step needed K in float64 for σ² near K's
// rounding, FinishNoise where it took σ below FinishNoiseRatio·NoiseMin,
// FinishConverged where n ≤ FinishConvergedUpTo and Adam's steps have
// converged; "" where it goes on with Adam. Adam's test leaves out its
// bound on the estimated gradient here: the finish's test bounds the
// exact one. For a finished run, h is its History up to
// OptimiserState.ExactFrom.
func (c *Config) FinishCause(h History, n int) string {
	if c.Until != UntilConverged || n > c.FinishExactUpTo || len(h) == 0 {
		return ""
	}
	last := h[len(h)-1]
	switch {
	case last.Float64 && !last.Float64Retry:
		return FinishFloat64
	case c.NoiseMin > 0 && last.Noise < FinishNoiseRatio*c.NoiseMin:
		return FinishNoise
	case n <= c.finishConvergedUpTo() && c.settled(h, n, false):
		return FinishConverged
	}
	return ""
}

// finishPending reports whether the next step of an iterative run
// switches to the exact path (Config.FinishCause).
func (st *OptimiserState) finishPending() bool {
	return st.Path == PathIterative && st.Config.FinishCause(st.History, st.N) != ""
}

// finishConvergedUpTo returns FinishConvergedUpTo, or FinishExactUpTo
// where it is 0.
func (c *Config) finishConvergedUpTo() int {
	return orDefault(c.FinishConvergedUpTo, c.FinishExactUpTo)
}

// startFinish switches an iterative run to the exact path at its θ
// (OptimiserState.ExactFrom) and releases the iterative path's operator.
func (o *Optimiser) startFinish() error {
	h := o.Hyper()
	o.st.Path, o.st.ExactFrom = PathExact, o.st.Step
	if err := o.startLBFGS(h); err != nil {
		return fmt.Errorf("gpnb: step %d: finishing on the exact path: %w", o.st.Step+1, err)
	}
	return o.est.Close()
}

// exactHyper returns θ for the exact path's point x (PathExact):
// θ_i = exp(x_i / exactPower(i, len(x))).
func exactHyper(x []float64) kernel.Hyper {
	v := make([]float64, len(x))
	for i, xi := range x {
		v[i] = math.Exp(xi / exactPower(i, len(x)))
	}
	return kernel.HyperFromVector(v)
}

// exactPower is the power c of θ_i in the exact path's x_i = log θ_i^c:
// 2 for s and σ (the last two of p), 1 for the length scales. In these
// coordinates, scikit-learn's, L-BFGS needed fewer evaluations than in
// log θ, and more often ended at scikit-learn's optimum (DESIGN.md).
func exactPower(i, p int) float64 {
	if i >= p-2 {
		return 2
	}
	return 1
}

// exactObjective returns f = −L at θ = exactHyper(x) (one Cholesky
// factorisation, exactEvaluator, made at the first call) and, where need
// says so (with f, LBFGS.NeedsGradient), writes into g its gradient with
// respect to x, −(θ_i/c_i) ∂L/∂θ_i with c_i = exactPower(i, p), and
// returns g; else it returns a nil gradient and spares the inverse.
func (o *Optimiser) exactObjective(x, g []float64, need func(f float64) bool) (float64, []float64, error) {
	h := exactHyper(x)
	k := kernel.Kernel{Family: o.cfg.Kernel, Hyper: h}
	if o.exact == nil {
		x, y := o.exactData()
		e, err := newExactEvaluator(x, y, k, o.cfg.Operator)
		if err != nil {
			return 0, nil, err
		}
		o.exact = e
	}
	mll, err := o.exact.value(k)
	if err != nil {
		return 0, nil, err
	}
	if !need(-mll) {
		return -mll, nil, nil
	}
	if err := o.exact.gradient(g); err != nil {
		return 0, nil, err
	}
	for i, th := range h.Vector() {
		g[i] *= -th / exactPower(i, len(x))
	}
	return -mll, g, nil
}

// exactStep is Step on the exact path: one L-BFGS iteration, as many
// evaluations as its line search needs. ctx is checked before every
// evaluation; when it is done the line search is kept (OptimiserState.LBFGS)
// and the next Step, also after Save and Resume, continues it.
func (o *Optimiser) exactStep(ctx context.Context) error {
	t0 := time.Now()
	step := o.st.Step + 1
	m := o.st.LBFGS
	g := make([]float64, o.st.D+2)
	for m.Next() == LBFGSEvaluate {
		if err := ctx.Err(); err != nil {
			o.st.PendingStepSeconds += time.Since(t0).Seconds()
			return err
		}
		te := time.Now()
		f, grad, err := o.exactObjective(m.Trial, g, m.NeedsGradient)
		m.PendingSeconds += time.Since(te).Seconds()
		if err != nil {
			if !m.Evaluated || !errors.Is(err, ErrNotPositiveDefinite) {
				o.st.PendingStepSeconds += time.Since(t0).Seconds()
				return fmt.Errorf("gpnb: step %d: %w", step, err)
			}
			// A trial θ at which H is not positive definite in float64
			// (σ tiny against K's spread): the line search steps back.
			f = math.Inf(1)
		}
		if !m.Evaluated && (math.IsNaN(f) || math.IsInf(f, 0) || !allFinite(grad)) {
			o.st.PendingStepSeconds += time.Since(t0).Seconds()
			return fmt.Errorf("gpnb: step %d: the log marginal likelihood or its gradient is not finite at the initial θ %v: start from another θ (Config.Init)", step, exactHyper(m.X).Vector())
		}
		if m.Tell(f, grad) {
			break
		}
	}
	h := o.Hyper()
	theta := h.Vector()
	grad := make([]float64, len(theta))
	for i, gi := range m.G {
		grad[i] = -gi * exactPower(i, len(theta)) / theta[i]
	}
	mll := -m.F
	rec := StepRecord{
		Step: step, Noise: h.Noise, Signal: h.Signal, Lengthscales: clone(h.Lengthscales),
		Gradient: grad, ExactMLL: &mll, Evaluations: m.IterationEval,
		SolverConverged: true, SolverSeconds: m.PendingSeconds, Operator: exactOperator,
		Points: o.st.Subset, Start: o.st.Start,
	}
	m.PendingSeconds = 0
	o.st.Raw = o.cfg.Param.Raw(h)
	if o.st.Subset > 0 && m.exactConverged(o.st.Subset) {
		if err := o.endSubset(); err != nil {
			return fmt.Errorf("gpnb: step %d: %w", step, err)
		}
	} else if o.st.startsPending() && m.exactConverged(o.st.N) {
		if err := o.endStart(); err != nil {
			return fmt.Errorf("gpnb: step %d: %w", step, err)
		}
	}
	return o.finish(rec, t0)
}

// exactOperator is StepRecord.Operator on the exact path.
const exactOperator = "cholesky float64"

// exactConverged is Optimiser.Converged on the exact path, for a run on n
// training points: after at least one step, the projected gradient of L
// with respect to x (PathExact) is below ExactGradTol·n in every
// component, or the last step raised L by less than ExactRelTol
// relatively, or the line search can no longer raise L in float64
// (lbfgsMaxFailures failed in a row).
func (m *LBFGS) exactConverged(n int) bool {
	switch {
	case m == nil || !m.Evaluated || m.Iterations == 0:
		return false
	case m.Failures >= lbfgsMaxFailures:
		return true
	case m.ProjectedGradientNorm() <= ExactGradTol*float64(n):
		return true
	}
	return m.Failures == 0 && m.Reduction <= ExactRelTol
}

// rescale changes m to the same minimisation in the coordinates c_i·x_i:
// every point, bound, direction and step s_i is multiplied by c_i, every
// gradient and gradient change y_i divided by it, so that f, the slopes
// and the step lengths Alpha stay the same. For powers of two it is
// exact. A nil m stays nil.
func (m *LBFGS) rescale(c []float64) {
	if m == nil {
		return
	}
	mul := func(v []float64, div bool) {
		for i := range min(len(v), len(c)) {
			if div {
				v[i] /= c[i]
			} else {
				v[i] *= c[i]
			}
		}
	}
	for _, v := range [][]float64{m.Lower, m.Upper, m.X, m.Dir, m.Trial, m.LoX} {
		mul(v, false)
	}
	for _, v := range m.S {
		mul(v, false)
	}
	for _, v := range [][]float64{m.G, m.LoG} {
		mul(v, true)
	}
	for _, v := range m.Y {
		mul(v, true)
	}
}

// hyper returns the current constrained θ of a state.
func (st *OptimiserState) hyper() kernel.Hyper {
	if st.Path == PathExact && st.LBFGS != nil {
		return exactHyper(st.LBFGS.X)
	}
	return st.Config.Param.Hyper(st.Raw)
}

// converged is Optimiser.Converged of a state.
func (st *OptimiserState) converged() bool {
	switch {
	case st.Path == PathExact && (st.Subset > 0 || st.startsPending()):
		return false
	case st.Path == PathExact && st.refineFrom() > 0:
		return st.finishConverged()
	case st.Path == PathExact:
		return st.LBFGS.exactConverged(st.N)
	case st.finishPending():
		return false
	}
	return st.Config.converged(st.History, st.N)
}

// FinishSteps is the window of the exact finish's convergence test
// (Config.FinishExactUpTo): shorter than Adam's (ConvergedSteps), since
// L-BFGS's steps carry neither momentum nor the jitter of solves stopped
// at their tolerances.
const FinishSteps = 5

// finishConverged is converged for a run finishing on the exact path
// (Config.FinishExactUpTo): the exact path's own rule, or, after more
// than FinishSteps L-BFGS steps, L/n rose by less than ConvergedTol a step
// over the last FinishSteps and every component of its projected gradient
// with respect to x (PathExact) is below ConvergedGrad per point: Adam's
// test, on the exact L and gradient. It does not wait for the exact path's
// rule, whose tolerances (scipy's) let L-BFGS go on for as many steps
// again while L/n rises by far less than the test log-likelihood feels.
func (st *OptimiserState) finishConverged() bool {
	m := st.LBFGS
	if m.exactConverged(st.N) {
		return true
	}
	h, p := st.History[st.refineFrom():], FinishSteps
	if len(h) <= p {
		return false
	}
	last, first := h[len(h)-1].ExactMLL, h[len(h)-1-p].ExactMLL
	if last == nil || first == nil {
		return false
	}
	n := float64(st.N)
	return (*last-*first)/(float64(p)*n) < st.Config.convergedTol() && m.ProjectedGradientNorm() < st.Config.convergedGrad()*n
}

// startsPending reports whether an exact path's start is still running
// or has yet to begin (Config.ExactStarts).
func (st *OptimiserState) startsPending() bool {
	return st.Best != nil || st.Start+1 < st.Config.exactStarts(st.N, st.D)
}

// refineFrom returns the number of steps after which the exact path went
// on from a θ near the optimum, where it converges by finishConverged's
// rule: ExactFrom for a run that finished on the exact path, the subset
// stage's steps for one that had one (Config.ExactSubset), else 0.
func (st *OptimiserState) refineFrom() int {
	if st.ExactFrom > 0 {
		return st.ExactFrom
	}
	k, _ := st.History.SubsetSteps()
	return k
}

// checkPath checks a decoded state's path against its configuration and
// its L-BFGS state.
func (st *OptimiserState) checkPath() error {
	if st.ExactFrom > 0 {
		if st.Path != PathExact || st.ExactFrom > st.Step || st.N > st.Config.FinishExactUpTo || st.Config.PathFor(st.N, st.D) != PathIterative {
			return fmt.Errorf("the run finishes on the exact path from step %d, but it is on the %v path after %d steps, with n = %d, ExactUpTo = %d and FinishExactUpTo = %d", st.ExactFrom, st.Path, st.Step, st.N, st.Config.ExactUpTo, st.Config.FinishExactUpTo)
		}
	} else if want := st.Config.PathFor(st.N, st.D); st.Path != want {
		return fmt.Errorf("the run is on the %v path, but n = %d, d = %d, ExactUpTo = %d and ExactWorkUpTo = %d make it %v", st.Path, st.N, st.D, st.Config.ExactUpTo, st.Config.ExactWorkUpTo, want)
	}
	if st.Subset != 0 {
		if m := st.Config.exactSubset(st.N, st.D); st.Subset != m || st.Path != PathExact || st.ExactFrom > 0 {
			return fmt.Errorf("the run is on a subset stage of %d points, but it is on the %v path (finishing from step %d) with n = %d and ExactSubset = %d, which make the stage %d points", st.Subset, st.Path, st.ExactFrom, st.N, st.Config.ExactSubset, m)
		}
		for _, r := range st.History {
			if r.Points != st.Subset {
				return fmt.Errorf("the run is on its subset stage of %d points, but step %d was on %d (0: all)", st.Subset, r.Step, r.Points)
			}
		}
	}
	if k := st.Config.exactStarts(st.N, st.D); st.Start < 0 || st.Start >= k || (st.Best != nil && st.Start == 0) {
		return fmt.Errorf("the run is on start %d of the exact path (a best one kept: %v), but it has %d", st.Start+1, st.Best != nil, k)
	}
	if st.Best != nil {
		if err := st.Best.check(st.D + 2); err != nil {
			return fmt.Errorf("best start: %w", err)
		}
	}
	if st.Path != PathExact {
		if st.LBFGS != nil {
			return errors.New("L-BFGS state in a run on the iterative path")
		}
		return nil
	}
	if st.LBFGS == nil {
		return errors.New("no L-BFGS state in a run on the exact path")
	}
	return st.LBFGS.check(st.D + 2)
}

// SubsetSteps returns the number k of the history's first steps that the
// exact path took on a subset of its training points (Config.ExactSubset),
// and the subset's size m (0 where k is 0).
func (h History) SubsetSteps() (k, m int) {
	for k < len(h) && h[k].Points > 0 {
		k++
	}
	if k > 0 {
		m = h[0].Points
	}
	return k, m
}

// Starts returns the number of the exact path's starts in the history
// (Config.ExactStarts): 1 + the largest StepRecord.Start.
func (h History) Starts() int {
	k := 0
	for _, r := range h {
		k = max(k, r.Start)
	}
	return k + 1
}

// TotalEvaluations sums StepRecord.Evaluations over the history: the exact
// path's Cholesky factorisations.
func (h History) TotalEvaluations() int {
	return sum(h, func(r StepRecord) int { return r.Evaluations })
}
