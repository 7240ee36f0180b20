package gpnb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// probeStream is the second PCG seed word of the probe generator; the first
// is Config.Seed.
const probeStream = 0x9e3779b97f4a7c15

// EstimatorState is level 2's whole state as plain data: the probes, the
// previous solutions used for warm starts, an interrupted solve, and the
// probe generator.
type EstimatorState struct {
	// Probes are the current probe vectors z_1..z_s as columns (n×s);
	// empty before the first solve.
	Probes Matrix
	// PrevV is the previous solution [v_y, v_1..v_s] (n×(s+1)), the warm
	// start of the next solve; empty before the first solve.
	PrevV Matrix
	// Pending is the state of a solve interrupted between iterations, or
	// nil. PendingSolverSeconds is the solver time it has used so far.
	Pending              *solvers.State
	PendingSolverSeconds float64
	// PendingTheta is the θ = (ℓ_1..ℓ_d, s, σ) of the pending solve; the
	// solve may only be continued at the same θ.
	PendingTheta []float64
	// PendingV0R0 holds v0ᵀr0 for each column of the pending solve (for
	// InitDistance), where r0 = b − H v0 is its initial residual; nil for a
	// zero initial guess.
	PendingV0R0 []float64
	// PendingBackoff is what the pending solve's step spent on attempts
	// abandoned for diverging (see MaxRateBackoffs); the pending solve runs
	// at the configured SGD rate halved PendingBackoff.Halvings times.
	PendingBackoff Backoff
	// RNG is the probe generator's state (math/rand/v2 PCG MarshalBinary).
	RNG []byte

	// Pathwise holds the pathwise estimator's random draws (the prior
	// samples' features and weights, and the noise) behind its probes
	// ξ_j = f_j(X) + σε_j; nil for the other estimators. Like Hutchinson
	// probes they are drawn from the generator above, once (fixed) or at
	// every step (resampled), and are stored whole rather than regenerated
	// from a seed, so that a resumed run continues with the same bits
	// whatever later versions of the generators do; they are rescaled to
	// each step's θ (kernel.PathwiseDraws.ProbesTo).
	Pathwise *kernel.PathwiseDraws
	// SolvedTheta is the θ = (ℓ_1..ℓ_d, s, σ) of the solve whose solution
	// PrevV holds, for the pathwise estimator (nil otherwise): posterior
	// samples (Optimiser.PosteriorSamples) condition on that solve, at that
	// θ, one Adam step behind the current one.
	SolvedTheta []float64
}

// MaxRateBackoffs bounds how often one step's SGD solve is started again
// at half its learning rate when it diverges. A solve diverges when SGD
// reports solvers.ErrDiverged, or when it stalls (solvers.State.Stalled)
// with a true residual above its initial guess's in some column: its
// rate is too large for this θ, which may have moved into a stiffer
// region than where the rate was chosen. The step then starts the solve
// again from its initial guess (the warm start, or zero) with the rate
// halved, up to MaxRateBackoffs times (1/16 of the rate); the record says
// how often (StepRecord.RateBackoffs) and what the abandoned attempts cost
// (included in its iterations and work). A solve that still diverges at
// the last halving is an error (solvers.ErrDiverged) that asks for a lower
// rate. Each step starts again at the configured rate.
const MaxRateBackoffs = 4

// Backoff is what one step's solve spent on attempts it abandoned: for
// diverging, before its last restart at half the learning rate (see
// MaxRateBackoffs), or for failing on a Mixed K, before its restart in
// float64 (StepRecord.Float64Retry).
type Backoff struct {
	Halvings   int          // restarts at half the rate so far
	Iterations int          // iterations of the abandoned attempts
	Rows       int          // rows of H they read (solvers.State.Rows)
	Work       solvers.Work // their work
	// Float64 reports that the solve was started again in float64 after
	// it failed on a Mixed K (StepRecord.Float64Retry).
	Float64 bool `json:",omitempty"`
}

// spend counts an abandoned attempt whose final state is st.
func (b *Backoff) spend(st *solvers.State) {
	b.Iterations += st.Iteration
	b.Rows += st.Rows
	b.Work = b.Work.Plus(st.Work)
}

// add counts an attempt abandoned for diverging, whose final state is st.
func (b *Backoff) add(st *solvers.State) {
	b.Halvings++
	b.spend(st)
}

// halved returns m with its learning rate halved k times; methods other
// than SGD have none and are returned as they are.
func halved(m solvers.Method, k int) solvers.Method {
	sgd, ok := solvers.Canonical(m).(solvers.SGD)
	if !ok {
		return m
	}
	for range k {
		sgd = sgd.HalfRate()
	}
	return sgd
}

// diverged reports whether a solve that ended with err (nil: stopped) in
// state st diverged (see MaxRateBackoffs), so that a lower SGD rate can
// help.
func diverged(m solvers.Method, st *solvers.State, err error) bool {
	if _, ok := solvers.Canonical(m).(solvers.SGD); !ok {
		return false
	}
	if errors.Is(err, solvers.ErrDiverged) {
		return true
	}
	if err != nil || !st.Stalled || len(st.Trace) == 0 {
		return false
	}
	for j, r := range st.RelResiduals {
		if r > st.Trace[0][j] {
			return true
		}
	}
	return false
}

// Estimator is level 2 of the hierarchy: it turns hyperparameters into an
// estimate of ∇L (eq. 4). Its strategy is chosen by Config.Estimator. The
// iterative ones solve H[v_y, v_1..v_s] = [y, b_1..b_s] with the
// configured level-3 solver, warm-started at the previous solution when
// Config.WarmStart is set, within Config.Settings.Budget when one is set,
// with their randomness fixed or resampled per Config.FixedProbes:
// Hutchinson with probes b_j = z_j ~ N(0, I), reducing W = ½v_y v_yᵀ −
// (1/2s)Σ v_j z_jᵀ against ∂H/∂θ (eq. 5); Pathwise with probes
// b_j = ξ_j ~ N(0, H), reducing W = ½v_y v_yᵀ − (1/2s)Σ ζ_jζ_jᵀ. In
// ExactGradient mode it uses a Cholesky factorisation. An Optimiser owns
// one; it can also be used on its own, e.g. to study the estimator's
// variance or bias at fixed θ.
type Estimator struct {
	x    *mat.Dense
	y    *mat.Dense // n×1 view of the targets
	n, d int
	cfg  Config
	st   EstimatorState // RNG is kept live in pcg
	pcg  *rand.PCG
	rng  *rand.Rand
	op   kernel.GramOperator
	// opDesc is kernel.Describe of the last operator built.
	opDesc  string
	backend Backend
	strat   probeStrategy // nil for ExactGradient

	recs recorders
	step int // the optimiser step in progress, for IterationRecord.Step
}

// NewEstimator returns the level-2 estimator for the training part of ds.
// It uses the fields Solver, Settings, Estimator, WarmStart, FixedProbes,
// Probes, ProbeDist, Seed, Operator, TrackExactMLL and MaxExactN of cfg (zero
// values take their defaults), and the option WithBackend.
func NewEstimator(ds *data.Dataset, cfg Config, opts ...Option) (*Estimator, error) {
	if err := checkDataset(ds); err != nil {
		return nil, err
	}
	cfg, err := cfg.Resolve(ds.D())
	if err != nil {
		return nil, err
	}
	o, err := collect(opts)
	if err != nil {
		return nil, err
	}
	if o.expect != nil || o.changes != nil {
		return nil, errors.New("gpnb: WithConfig and WithChanges apply to Resume only")
	}
	e, err := newEstimator(ds, cfg, o)
	if err != nil {
		return nil, err
	}
	e.pcg = rand.NewPCG(cfg.Seed, probeStream)
	e.rng = rand.New(e.pcg)
	return e, nil
}

// newEstimator sets up everything but the generator, for a resolved cfg.
func newEstimator(ds *data.Dataset, cfg Config, o options) (*Estimator, error) {
	if (cfg.Estimator == ExactGradient || cfg.TrackExactMLL) && ds.NTrain() > cfg.maxExactN() {
		return nil, configError("MaxExactN", "ExactGradient and TrackExactMLL need a Cholesky factorisation, but n = %d > MaxExactN = %d: use the Hutchinson estimator, a subset, or raise Config.MaxExactN on a machine with the memory", ds.NTrain(), cfg.maxExactN())
	}
	e := &Estimator{
		x:       ds.XTrain,
		y:       mat.NewDense(ds.NTrain(), 1, ds.YTrain),
		n:       ds.NTrain(),
		d:       ds.D(),
		cfg:     cfg,
		backend: o.backend,
	}
	switch cfg.Estimator {
	case Hutchinson:
		e.strat = hutchinsonStrategy{e}
	case Pathwise:
		e.strat = pathwiseStrategy{e}
	}
	return e, nil
}

// restore sets the estimator's state from st (already checked).
func (e *Estimator) restore(st EstimatorState) error {
	e.pcg = new(rand.PCG)
	if err := e.pcg.UnmarshalBinary(st.RNG); err != nil {
		return fmt.Errorf("generator state: %v", err)
	}
	e.rng = rand.New(e.pcg)
	st.RNG = nil
	e.st = st
	return nil
}

// AddRecorder adds r to the recorders called after every solver iteration
// (RecordIteration; IterationRecord.Step is 0 for an estimator used on its own)
// and returns the function that removes it again.
func (e *Estimator) AddRecorder(r Recorder) (remove func()) { return e.recs.add(r) }

// Pending reports whether a solve was interrupted and will be continued by
// the next Gradient call.
func (e *Estimator) Pending() bool { return e.st.Pending != nil }

// State returns a deep copy of the estimator's state.
func (e *Estimator) State() EstimatorState {
	s := e.st
	s.Probes.Data = clone(s.Probes.Data)
	s.PrevV.Data = clone(s.PrevV.Data)
	s.PendingV0R0 = clone(s.PendingV0R0)
	s.PendingTheta = clone(s.PendingTheta)
	s.SolvedTheta = clone(s.SolvedTheta)
	if s.Pathwise != nil {
		s.Pathwise = clonePathwise(s.Pathwise)
	}
	if s.Pending != nil {
		s.Pending = s.Pending.Clone()
	}
	s.RNG, _ = e.pcg.MarshalBinary()
	return s
}

// Gradient writes the estimate of ∇L at kernel k, with respect to the
// constrained θ = (ℓ_1..ℓ_d, s, σ), into dst (length d+2), and fills the
// solver fields of rec when rec is not nil (iterations, convergence, work,
// residual trace, distances, seconds, and ExactMLL when TrackExactMLL).
//
// ctx is checked between solver iterations. When it is done, Gradient
// returns ctx.Err() and keeps the in-flight solve; the next call with the
// same k continues it exactly where it stopped.
func (e *Estimator) Gradient(ctx context.Context, k kernel.Kernel, dst []float64, rec *StepRecord) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(dst) != e.d+2 {
		return fmt.Errorf("gpnb: estimator: gradient destination has length %d, want d+2 = %d", len(dst), e.d+2)
	}
	if k.Family != e.cfg.Kernel {
		return fmt.Errorf("gpnb: estimator: kernel family %v, configured %v", k.Family, e.cfg.Kernel)
	}
	if rec == nil {
		rec = new(StepRecord)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t0 := time.Now()
	var exact *Exact
	if e.cfg.Estimator == ExactGradient || e.cfg.TrackExactMLL {
		ex, err := newExact(e.x, e.y.RawMatrix().Data, k, e.cfg.maxExactN())
		if err != nil {
			return err
		}
		exact = ex
		if e.cfg.TrackExactMLL {
			v := ex.MLL()
			rec.ExactMLL = &v
		}
	}
	if e.cfg.Estimator == ExactGradient {
		if err := exact.Gradient(dst); err != nil {
			return err
		}
		// The Cholesky factorisation and inverse are this mode's "solve".
		rec.SolverConverged = true
		rec.SolverSeconds = time.Since(t0).Seconds()
		return checkGrad(dst)
	}
	if err := e.solveGradient(ctx, k, dst, rec); err != nil {
		return err
	}
	return checkGrad(dst)
}

// operator returns H_θ for k in the precision a step at k uses
// (stepPrecision).
func (e *Estimator) operator(k kernel.Kernel) (kernel.GramOperator, error) {
	return e.operatorIn(k, e.precisionFor(k))
}

// precisionFor returns the precision of a step's operator at kernel k:
// Config.Operator.Precision, or Float64 where a Mixed K's rounding is too
// large for k's σ² (stepPrecision). A Backend chooses its own.
func (e *Estimator) precisionFor(k kernel.Kernel) kernel.Precision {
	return stepPrecision(e.cfg.Operator.Precision, k.Hyper, e.n)
}

// operatorIn returns H_θ for k stored in precision p (the CPU operator's;
// a Backend chooses its own), rebuilding the estimator's operator in place
// (reusing its n² cache) after the first call when it can.
func (e *Estimator) operatorIn(k kernel.Kernel, p kernel.Precision) (kernel.GramOperator, error) {
	if r, ok := e.op.(kernel.Rekerneler); ok && e.op != nil && (e.backend != nil || kernel.PrecisionOf(e.op) == p) {
		if err := r.SetKernel(k); err != nil {
			return nil, err
		}
		return e.op, nil
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	op, err := e.newOperator(e.x, k, p)
	if err != nil {
		return nil, err
	}
	e.op, e.opDesc = op, kernel.Describe(op)
	return op, nil
}

// OperatorDescription returns kernel.Describe of the last kernel operator
// the estimator built ("dense float64", "matrix-free", ...), or "" before
// the first gradient.
func (e *Estimator) OperatorDescription() string { return e.opDesc }

// Close releases the kernel operator (for a GPU backend, its device
// memory). The estimator stays usable: the next Gradient builds a new one.
func (e *Estimator) Close() error {
	op := e.op
	e.op = nil
	if c, ok := op.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// operatorErr returns the error a backend kept from a failed call (the GPU
// operator fills its outputs with NaN and reports the cause through Err).
func operatorErr(op kernel.GramOperator) error {
	if eo, ok := op.(interface{ Err() error }); ok {
		if err := eo.Err(); err != nil {
			return fmt.Errorf("kernel operator: %w", err)
		}
	}
	return nil
}

// newOperator builds H_θ for inputs x with the estimator's Backend, or the
// CPU operator in precision p.
func (e *Estimator) newOperator(x *mat.Dense, k kernel.Kernel, p kernel.Precision) (kernel.GramOperator, error) {
	if e.backend != nil {
		op, err := e.backend(x, k)
		if err != nil {
			return nil, err
		}
		if op == nil || op.Size() != x.RawMatrix().Rows {
			return nil, errors.New("the Backend returned no operator, or one of the wrong size")
		}
		return op, nil
	}
	opt := e.cfg.Operator
	opt.Precision = p
	return kernel.NewOperator(x, k, opt)
}

// drawProbes fills the n×s probe matrix column by column from the generator.
func (e *Estimator) drawProbes() {
	n, s := e.n, e.cfg.Probes
	z := make([]float64, n*s)
	for j := 0; j < s; j++ {
		for i := 0; i < n; i++ {
			if e.cfg.ProbeDist == Rademacher {
				if e.rng.Uint64()&1 == 0 {
					z[i*s+j] = 1
				} else {
					z[i*s+j] = -1
				}
			} else {
				z[i*s+j] = e.rng.NormFloat64()
			}
		}
	}
	e.st.Probes = Matrix{Rows: n, Cols: s, Data: z}
}

// solveGradient computes the estimate of eq. 4 by an iterative solve with
// the estimator's strategy's probes and reduction into grad: the part of
// level 2 every iterative strategy shares (warm start, budget, pausing and
// resuming mid-solve, the step's record).
func (e *Estimator) solveGradient(ctx context.Context, k kernel.Kernel, grad []float64, rec *StepRecord) error {
	n, s := e.n, e.cfg.Probes
	resumed := e.st.Pending != nil
	prec := e.precisionFor(k)
	if resumed && e.st.PendingBackoff.Float64 {
		prec = kernel.Float64
	}
	tBuild := time.Now()
	op, err := e.operatorIn(k, prec)
	if err != nil {
		return fmt.Errorf("building the kernel operator: %w", err)
	}
	rec.BuildSeconds = time.Since(tBuild).Seconds()
	if resumed && !floatbits.Equal(e.st.PendingTheta, k.Hyper.Vector()) {
		return fmt.Errorf("an interrupted solve at θ = %v is pending, but the gradient was asked at θ = %v: continue it at the same hyperparameters", e.st.PendingTheta, k.Hyper.Vector())
	}
	if !resumed && (!e.cfg.fixedProbes() || !e.strat.drawn()) {
		if err := e.strat.draw(); err != nil {
			return err
		}
	}
	b := mat.NewDense(n, s+1, nil)
	b.Slice(0, n, 0, 1).(*mat.Dense).Copy(e.y)
	if err := e.strat.probes(b.Slice(0, n, 1, s+1).(*mat.Dense), k); err != nil {
		return err
	}
	var v0 *mat.Dense // nil: zeros, which saves the solver a product
	if e.cfg.WarmStart && e.st.PrevV.Rows == n && e.st.PrevV.Cols == s+1 {
		v0 = e.st.PrevV.Dense()
	}

	var sol solvers.Solver
	var backoff Backoff // attempts abandoned for diverging
	tSolve := time.Now()
	if resumed {
		pending := e.st.Pending.Clone()
		// A cap raised on resuming (Resume's WithChanges, a rerun of gpnb
		// reproduce with a larger --max-iterations) applies to the
		// interrupted solve too, so that it continues as a solve started
		// under the larger cap would; every other setting applies from the
		// next solve on.
		if c := e.cfg.Settings.MaxIterations; c > pending.Settings.MaxIterations {
			pending.Settings.MaxIterations = c
		}
		backoff = e.st.PendingBackoff
		sol, err = solvers.Resume(op, halved(e.cfg.Solver, backoff.Halvings), b, pending)
		if err != nil {
			return fmt.Errorf("resuming the interrupted solve: %w", err)
		}
	} else {
		sol, err = e.cfg.Solver.Start(op, b, v0, e.cfg.Settings)
		if err != nil {
			return fmt.Errorf("starting the solver: %w", err)
		}
		rec.StartSeconds = time.Since(tSolve).Seconds()
		e.st.PendingV0R0 = v0R0(v0, e.initialResidual(op, sol, b, v0))
		e.st.PendingSolverSeconds = 0
	}
	defer func() { sol.Close() }() // a device backend's vectors
	solverSec := e.st.PendingSolverSeconds + time.Since(tSolve).Seconds()
solve:
	for {
		var ierr error // the error that ended the solve, if one did
		for !sol.Done() {
			if err := ctx.Err(); err != nil {
				e.st.Pending = sol.State().Clone()
				e.st.PendingSolverSeconds = solverSec
				e.st.PendingTheta = k.Hyper.Vector()
				e.st.PendingBackoff = backoff
				return err
			}
			t := time.Now()
			factors := sol.Progress().Work.BlockFactorisations
			ierr = sol.Iterate()
			dt := time.Since(t).Seconds()
			solverSec += dt
			if ierr != nil {
				break
			}
			p := sol.Progress() // scalars only: no vector leaves a device
			if p.Work.BlockFactorisations > factors {
				rec.FactorSeconds += dt
			}
			if len(e.recs.list) > 0 {
				e.recs.iteration(e.step, p.Iteration, p.RelResiduals)
			}
		}
		if ierr != nil {
			if oerr := operatorErr(op); oerr != nil {
				e.st.Pending = nil
				return oerr
			}
		}
		t := time.Now()
		switch {
		case e.backend == nil && prec == kernel.Mixed && failed(sol, ierr):
			// The solve failed on K's float32 rounding: start it again from
			// its initial guess on a float64 K (StepRecord.Float64Retry).
			// Float32 is left to stall: its products round every time, and
			// it is kept as the paper's experiment (MixedNoiseRatio).
			backoff.spend(sol.State())
			backoff.Float64, prec = true, kernel.Float64
			sol.Close()
			if op, err = e.operatorIn(k, prec); err != nil {
				e.st.Pending = nil
				return fmt.Errorf("building the kernel operator in float64: %w", err)
			}
			sol, err = halved(e.cfg.Solver, backoff.Halvings).Start(op, b, v0, e.cfg.Settings)
		case diverged(e.cfg.Solver, sol.State(), ierr) && backoff.Halvings < MaxRateBackoffs:
			// Diverged: start again from the initial guess at half the rate.
			backoff.add(sol.State())
			sol.Close()
			sol, err = halved(e.cfg.Solver, backoff.Halvings).Start(op, b, v0, e.cfg.Settings)
		case ierr == nil:
			break solve // done; a stall at the last halving is recorded as such
		default:
			e.st.Pending = nil
			if errors.Is(ierr, solvers.ErrDiverged) && backoff.Halvings > 0 {
				return fmt.Errorf("solver iteration: %w (after %d restarts at half the rate, at 1/%d of the configured rate: set a lower one)", ierr, backoff.Halvings, 1<<backoff.Halvings)
			}
			return fmt.Errorf("solver iteration: %w%s", ierr, breakdownAdvice(ierr, k.Hyper, e.cfg.NoiseMin))
		}
		solverSec += time.Since(t).Seconds()
		if err != nil {
			e.st.Pending = nil
			return fmt.Errorf("starting the solver again: %w", err)
		}
	}
	st := sol.State()
	v := sol.Solution()
	e.st.Pending = nil
	e.st.PendingSolverSeconds = 0
	e.st.PendingTheta = nil
	e.st.PendingBackoff = Backoff{}

	tReduce := time.Now()
	if err := e.strat.reduce(grad, op, v, b); err != nil {
		return err
	}
	rec.ReduceSeconds = time.Since(tReduce).Seconds()
	if err := operatorErr(op); err != nil {
		return err
	}

	rec.SolverIterations = st.Iteration + backoff.Iterations
	rec.RateBackoffs, rec.BackoffIterations = backoff.Halvings, backoff.Iterations
	rec.Float64 = e.backend == nil && prec != e.cfg.Operator.Precision
	rec.Float64Retry = backoff.Float64
	rec.SolverConverged = sol.Converged()
	rec.BudgetStop = st.BudgetSpent
	rec.SolverStalled = st.Stalled
	rec.SolverEpochs = float64(st.Rows+backoff.Rows) / float64(st.N)
	rec.FinalResiduals = clone(st.RelResiduals)
	rec.SolverSeconds = solverSec
	if !e.cfg.DropResidualTraces {
		rec.Residuals = st.Clone().Trace
	}
	w := st.Work.Plus(backoff.Work)
	rec.OperatorProducts, rec.RowEvaluations, rec.BlockEntries, rec.BlockFactorisations = w.OperatorProducts, w.RowEvaluations, w.BlockEntries, w.BlockFactorisations
	if st.CG != nil {
		rec.PrecondRank = st.CG.PrecondRank
	}
	rec.InitDistance, rec.ZeroInitDistance = distances(v0, v, b, e.st.PendingV0R0)
	e.st.PendingV0R0 = nil
	e.st.PrevV = matrixOf(v)
	if e.cfg.Estimator == Pathwise {
		e.st.SolvedTheta = k.Hyper.Vector()
	}
	return nil
}

// probeStrategy is an iterative gradient estimator, chosen by
// Config.Estimator rather than branched on (DESIGN.md, level 2): it owns
// its random draws, makes the probe right-hand sides from them and turns
// the solutions into the gradient, while the solve around it (warm start,
// budget, pausing and resuming, the step's record) is solveGradient's, the
// same for every strategy. The exact gradient needs no solve: Exact.
type probeStrategy interface {
	// drawn reports whether the strategy holds draws (it does after its
	// first draw, and after a resume).
	drawn() bool
	// draw makes new draws from the estimator's generator.
	draw() error
	// probes sets dst (n×s) to the probe right-hand sides at kernel k.
	probes(dst *mat.Dense, k kernel.Kernel) error
	// reduce sets grad to the estimate of ∇L from the solution
	// v = [v_y, v_1..v_s] of H v = b.
	reduce(grad []float64, op kernel.GramOperator, v, b *mat.Dense) error
}

// hutchinsonStrategy is the paper's estimator (eq. 5): probes z_j with
// E[z zᵀ] = I, kept in EstimatorState.Probes.
type hutchinsonStrategy struct{ e *Estimator }

func (h hutchinsonStrategy) drawn() bool { return h.e.st.Probes.Rows != 0 }

func (h hutchinsonStrategy) draw() error { h.e.drawProbes(); return nil }

func (h hutchinsonStrategy) probes(dst *mat.Dense, _ kernel.Kernel) error {
	dst.Copy(h.e.st.Probes.Dense())
	return nil
}

// reduce: W = ½ v_y v_yᵀ − (1/2s) Σ v_j z_jᵀ (eq. 4 with eq. 5), as A·B'ᵀ
// with A = [½v_y, −v_j/(2s)] and B' = [v_y, z_j]. ∂H is symmetric, so
// v_jᵀ∂H z_j = z_jᵀH⁻¹∂H z_j.
func (h hutchinsonStrategy) reduce(grad []float64, op kernel.GramOperator, v, b *mat.Dense) error {
	n, m := v.Dims()
	s := m - 1
	a := mat.DenseCopyOf(v)
	a.Slice(0, n, 0, 1).(*mat.Dense).Scale(0.5, v.Slice(0, n, 0, 1))
	a.Slice(0, n, 1, s+1).(*mat.Dense).Scale(-1/(2*float64(s)), v.Slice(0, n, 1, s+1))
	bp := mat.DenseCopyOf(b)
	bp.Slice(0, n, 0, 1).(*mat.Dense).Copy(v.Slice(0, n, 0, 1))
	op.Reduce(grad, a, bp)
	return nil
}

// pathwiseStrategy is the pathwise estimator (kernel.PathwiseDraws): probes
// ξ_j = f_j(X) + σε_j from draws kept in EstimatorState.Pathwise and
// rescaled to each θ. A new draw takes its seed from the estimator's
// generator, so one Config.Seed fixes every draw of a run, fixed or
// resampled.
type pathwiseStrategy struct{ e *Estimator }

func (p pathwiseStrategy) drawn() bool { return p.e.st.Pathwise != nil }

func (p pathwiseStrategy) draw() error {
	e := p.e
	d, err := kernel.NewPathwiseDraws(e.cfg.Kernel, e.n, e.d, e.cfg.Features, e.cfg.Probes, e.rng.Uint64())
	if err != nil {
		return err
	}
	e.st.Pathwise = d
	return nil
}

func (p pathwiseStrategy) probes(dst *mat.Dense, k kernel.Kernel) error {
	n, s := dst.Dims()
	xi := mat.NewDense(n, s, nil)
	if err := p.e.st.Pathwise.ProbesTo(xi, p.e.x, k); err != nil {
		return fmt.Errorf("pathwise probes: %w", err)
	}
	dst.Copy(xi)
	return nil
}

// reduce: W = ½ v_y v_yᵀ − (1/2s) Σ ζ_jζ_jᵀ (kernel.PathwiseGradient).
func (p pathwiseStrategy) reduce(grad []float64, op kernel.GramOperator, v, _ *mat.Dense) error {
	n, m := v.Dims()
	return kernel.PathwiseGradient(grad, op, v.Slice(0, n, 0, 1).(*mat.Dense), v.Slice(0, n, 1, m).(*mat.Dense))
}

// clonePathwise returns a deep copy of p.
func clonePathwise(p *kernel.PathwiseDraws) *kernel.PathwiseDraws {
	c := *p
	c.Noise = clone(p.Noise)
	c.Prior.Freqs = clone(p.Prior.Freqs)
	c.Prior.ChiSq = clone(p.Prior.ChiSq)
	c.Prior.Weights = clone(p.Prior.Weights)
	return &c
}

// failed reports whether a solve that ended with err (nil: stopped) failed
// in a way a float64 K can mend: CG's breakdown (pᵀHp ≤ 0, a non-finite
// value), or a stop short of the tolerances that was neither its budget
// (the iteration cap, a stall).
func failed(sol solvers.Solver, err error) bool {
	if err != nil {
		return breakdown(err)
	}
	return !sol.Converged() && !sol.State().BudgetSpent
}

// breakdown reports whether err is a solver's breakdown: H not positive
// definite as it multiplied (pᵀHp ≤ 0), or a non-finite value.
func breakdown(err error) bool {
	return errors.Is(err, solvers.ErrNotPositiveDefinite) || errors.Is(err, solvers.ErrNotFinite)
}

// breakdownAdvice is what to change after a solve broke down in float64
// at θ = h: a floor on σ where there is none or σ sits on it.
func breakdownAdvice(err error, h kernel.Hyper, noiseMin float64) string {
	if !breakdown(err) {
		return ""
	}
	if noiseMin > 0 {
		return fmt.Sprintf(" (σ = %.3g, its floor %.3g: raise the floor, Config.NoiseMin or --noise-min)", h.Noise, noiseMin)
	}
	return fmt.Sprintf(" (σ = %.3g with no floor: set one, Config.NoiseMin or --noise-min, as the fast preset does)", h.Noise)
}

// ErrNonFiniteGradient is returned (wrapped) when a gradient estimate holds
// NaN or Inf.
var ErrNonFiniteGradient = errors.New("gradient is not finite")

func checkGrad(g []float64) error {
	for i, v := range g {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: component %d is %v: the solve diverged or H is ill-conditioned; lower the SGD learning rate, raise MaxIterations, or start from other hyperparameters", ErrNonFiniteGradient, i, v)
		}
	}
	return nil
}

// initialResidual returns r0 = b − H v0 (row-major): the solver's R at
// Start, or, for SGD started with its estimate at b (ResidualB), one
// product. nil for a zero initial guess.
func (e *Estimator) initialResidual(op kernel.GramOperator, sol solvers.Solver, b, v0 *mat.Dense) []float64 {
	if v0 == nil {
		return nil
	}
	if m, ok := e.cfg.Solver.(solvers.SGD); !ok || m.ResidualStart != solvers.ResidualB {
		return sol.State().R
	}
	r := mat.NewDense(v0.RawMatrix().Rows, v0.RawMatrix().Cols, nil)
	op.MulTo(r, v0)
	r.Sub(b, r)
	return r.RawMatrix().Data
}

// v0R0 returns v0ᵀr0 per column, where r0 = b − H v0 (row-major) is the
// solve's initial residual (nil for a zero initial guess).
func v0R0(v0 *mat.Dense, r0 []float64) []float64 {
	if v0 == nil {
		return nil
	}
	n, m := v0.Dims()
	out := make([]float64, m)
	for i := 0; i < n; i++ {
		vr, rr := v0.RawRowView(i), r0[i*m:(i+1)*m]
		for j := range out {
			out[j] += vr[j] * rr[j]
		}
	}
	return out
}

// distances returns the H-norm RMSE between the initial guess and the final
// iterate, averaged over columns, for v0 (nil: zeros) and for a zero initial
// guess, with no extra operator product: (v0−v)ᵀH(v0−v) ≈ −v0ᵀr0 − v0ᵀb +
// vᵀb and ‖v‖²_H ≈ vᵀb (using Hv ≈ b), clamped at 0.
func distances(v0, v, b *mat.Dense, v0r0 []float64) (initDist, zeroDist float64) {
	n, m := v.Dims()
	vb := make([]float64, m)
	v0b := make([]float64, m)
	for i := 0; i < n; i++ {
		vr, br := v.RawRowView(i), b.RawRowView(i)
		for j := 0; j < m; j++ {
			vb[j] += vr[j] * br[j]
		}
		if v0 != nil {
			v0r := v0.RawRowView(i)
			for j := 0; j < m; j++ {
				v0b[j] += v0r[j] * br[j]
			}
		}
	}
	for j := 0; j < m; j++ {
		z := math.Sqrt(math.Max(vb[j], 0) / float64(n))
		zeroDist += z
		if v0 == nil || v0r0 == nil {
			initDist += z
			continue
		}
		q := -v0r0[j] - v0b[j] + vb[j]
		initDist += math.Sqrt(math.Max(q, 0) / float64(n))
	}
	return initDist / float64(m), zeroDist / float64(m)
}
