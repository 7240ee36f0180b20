package gpnb

import (
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// StepRecord is what one marginal-likelihood step leaves behind: the unit of
// record (DESIGN.md). A History is the list of them, in step order. All
// fields are plain data so records serialise to JSON and gob unchanged.
type StepRecord struct {
	// Step is 1-based: the record of the first Adam step has Step 1.
	Step int `json:"step"`

	// Hyperparameters after this step's Adam update (constrained values).
	Noise        float64   `json:"noise"`
	Signal       float64   `json:"signal"`
	Lengthscales []float64 `json:"lengthscales"`

	// Gradient is the estimated ∇L with respect to the constrained θ =
	// (ℓ_1..ℓ_d, s, σ) at the hyperparameters this step started from.
	Gradient []float64 `json:"gradient,omitempty"`

	// Solver work for this step's batch H[v_y, v_1..v_s] = [y, z_1..z_s].
	SolverIterations int  `json:"solver_iterations"`
	SolverConverged  bool `json:"solver_converged"`
	// BudgetStop reports that the solve stopped at its budget
	// (Config.Settings.Budget) before its tolerances: by design, not a
	// failure and not the iteration cap (UnconvergedSteps does not count
	// it); a warm-started run continues from there at the next step.
	BudgetStop bool `json:"budget_stop,omitempty"`
	// SolverStalled reports that the solve stopped, not converged, because
	// its true residual stopped falling above the tolerance
	// (solvers.State.Stalled): the rounding of the products, float32 ones
	// above all, is the floor. Such a step is counted by UnconvergedSteps
	// (its gradient is inexact) and by StalledSteps.
	SolverStalled bool `json:"solver_stalled,omitempty"`
	// RateBackoffs is how often this step's SGD solve diverged and was
	// started again from its initial guess at half the learning rate
	// (MaxRateBackoffs); BackoffIterations the iterations of those
	// abandoned attempts, which SolverIterations, SolverEpochs and the work
	// counts include (the residual trace is the last attempt's).
	RateBackoffs      int `json:"rate_backoffs,omitempty"`
	BackoffIterations int `json:"backoff_iterations,omitempty"`
	// AdamHalvings is how often Adam's learning rate had been halved for
	// oscillating when this step was taken (MaxAdamHalvings): the step
	// moved θ at Config.LearningRate / 2^AdamHalvings.
	AdamHalvings int `json:"adam_halvings,omitempty"`
	// Float64 reports that this step's solve multiplied with K stored in
	// float64 although the run's precision is Mixed: σ² was too small for a
	// Mixed K (MixedNoiseRatio), or the solve failed on it and was started
	// again in float64 (Float64Retry).
	Float64 bool `json:"float64,omitempty"`
	// Float64Retry reports that the solve failed on a Mixed K (CG broke
	// down, or stopped short of its tolerances at the cap or in a stall)
	// and was started again from its initial guess in float64; the failed
	// attempt's iterations count in BackoffIterations.
	Float64Retry bool `json:"float64_retry,omitempty"`
	// SolverEpochs is what the solve cost in epochs, passes over the rows
	// of H (solvers.State.Epochs: one per CG iteration, |I|/n per AP block
	// or SGD batch): the unit of the budget, comparable across solvers.
	SolverEpochs  float64 `json:"solver_epochs,omitempty"`
	SolverSeconds float64 `json:"solver_seconds"`
	StepSeconds   float64 `json:"step_seconds"`

	// FinalResiduals[j] is column j's relative residual ‖H v_j − b_j‖/‖b_j‖
	// when the solve ended (column 0 the mean system): what it reached. At a
	// budget stop these are true residuals (solvers.State.BudgetSpent);
	// otherwise each solver's own (CG's checked true residuals for
	// converged columns, SGD's verified ones). Kept with
	// DropResidualTraces, so a budget's effect can be charted step by
	// step. Empty for the exact gradient.
	FinalResiduals []float64 `json:"final_residuals,omitempty"`

	// Solver work of this step, in units that compare across methods and
	// do not depend on the machine's load (solvers.Work): OperatorProducts
	// counts columns multiplied by the full H, RowEvaluations rows of H
	// used by AP and SGD, BlockEntries entries of H evaluated for blocks.
	OperatorProducts int `json:"operator_products"`
	RowEvaluations   int `json:"row_evaluations"`
	BlockEntries     int `json:"block_entries"`
	// BlockFactorisations counts AP's block Cholesky factorisations.
	BlockFactorisations int `json:"block_factorisations,omitempty"`
	// PrecondRank is the rank of CG's preconditioner in this step's solve
	// (solvers.CGState.PrecondRank: the configured rank, or the one
	// solvers.PrecondRankAuto chose for this θ), 0 without one.
	PrecondRank int `json:"precond_rank,omitempty"`

	// Where the step's time went, wall clock, for the Hutchinson estimator
	// (0 where not recorded): BuildSeconds
	// rebuilding the kernel operator for the step's θ and ReduceSeconds the
	// gradient reduction, both outside SolverSeconds; StartSeconds the
	// solver's Start (a warm start's initial residual B − H·V0, one product
	// of all columns) and FactorSeconds the solver iterations that
	// factorised an AP block (each with its block update), both inside
	// SolverSeconds.
	BuildSeconds  float64 `json:"build_seconds,omitempty"`
	StartSeconds  float64 `json:"start_seconds,omitempty"`
	FactorSeconds float64 `json:"factor_seconds,omitempty"`
	ReduceSeconds float64 `json:"reduce_seconds,omitempty"`

	// Residuals[t][j] is column j's relative residual ‖H v_j − b_j‖/‖b_j‖
	// after solver iteration t (t = 0 is the initial guess). Column 0 is the
	// mean system H v_y = y, columns 1..s are the probes. Estimated for SGD.
	Residuals [][]float64 `json:"residuals,omitempty"`

	// Distances between the initial guess and the solution, as RMSE in the
	// norm induced by H: sqrt((v0−v)ᵀH(v0−v)/n), averaged over columns
	// (figure 1, right). InitDistance is for the initial guess actually used;
	// ZeroInitDistance is what a zero initialisation would have had. Both use
	// the solver's final iterate in place of the exact solution.
	InitDistance     float64 `json:"init_distance"`
	ZeroInitDistance float64 `json:"zero_init_distance"`

	// ExactMLL is the Cholesky log marginal likelihood (eq. 3) at the
	// hyperparameters this step started from, when Config asked for it;
	// nil otherwise. On the exact path (PathExact) it and Gradient are at
	// the hyperparameters after the step, where L-BFGS evaluated them.
	ExactMLL *float64 `json:"exact_mll,omitempty"`
	// Evaluations counts the exact path's evaluations of L in this step
	// (one Cholesky factorisation each: the L-BFGS line search's, and for
	// the first step the initial θ's), with the gradient where the line
	// search reads it (LBFGS.NeedsGradient); 0 on the iterative path.
	Evaluations int `json:"evaluations,omitempty"`
	// Points is the number of training points of the subset whose L,
	// ExactMLL and Gradient are, for an exact path's step on its subset
	// (Config.ExactSubset); 0 for a step on all of them.
	Points int `json:"points,omitempty"`
	// Start is the exact path's start this step belongs to
	// (Config.ExactStarts), from 0.
	Start int `json:"start,omitempty"`

	// Operator describes the kernel operator this step used
	// (kernel.Describe); empty where not recorded.
	Operator string `json:"operator,omitempty"`
}

// Hyper returns the hyperparameters after the step (constrained, on the
// scale the run trains on).
func (r StepRecord) Hyper() kernel.Hyper {
	return kernel.Hyper{Lengthscales: append([]float64(nil), r.Lengthscales...), Signal: r.Signal, Noise: r.Noise}
}

// Untimed returns r with its wall-clock fields (the seconds) zeroed: what two
// runs of the same configuration must agree on bit for bit, as runtimes
// inherently differ.
func (r StepRecord) Untimed() StepRecord {
	r.SolverSeconds, r.StepSeconds = 0, 0
	r.BuildSeconds, r.StartSeconds, r.FactorSeconds, r.ReduceSeconds = 0, 0, 0, 0
	return r
}

// ProbeResidual returns the mean of the probe columns' FinalResiduals: how
// far the probe systems' solve got. NaN when the record has none.
func (r StepRecord) ProbeResidual() float64 {
	if len(r.FinalResiduals) < 2 {
		return math.NaN()
	}
	return stat.Mean(r.FinalResiduals[1:], nil)
}

// History is the record of every step so far, in order.
type History []StepRecord

// TotalSolverIterations sums SolverIterations over the history.
func (h History) TotalSolverIterations() int {
	return sum(h, func(r StepRecord) int { return r.SolverIterations })
}

// UnconvergedSteps counts the steps whose solver stopped before reaching its
// tolerances at Settings.MaxIterations (the iteration cap), or stalled
// above them (StalledSteps counts those apart): their gradients came from
// inexact solves, and their iteration counts and times are what the cap or
// the stall allowed, not what convergence would have taken. Steps stopped
// by a budget are counted by BudgetSteps instead.
func (h History) UnconvergedSteps() int {
	return count(h, func(r StepRecord) bool { return !r.SolverConverged && !r.BudgetStop })
}

// BudgetSteps counts the steps whose solve stopped at its budget
// (StepRecord.BudgetStop) before its tolerances.
func (h History) BudgetSteps() int {
	return count(h, func(r StepRecord) bool { return r.BudgetStop })
}

// StalledSteps counts the steps whose solve stalled above its tolerances
// (StepRecord.SolverStalled).
func (h History) StalledSteps() int {
	return count(h, func(r StepRecord) bool { return r.SolverStalled })
}

// BackoffSteps counts the steps whose SGD solve was started again at half
// the learning rate (StepRecord.RateBackoffs), and RateBackoffs the
// restarts in all.
func (h History) BackoffSteps() (steps, restarts int) {
	return count(h, func(r StepRecord) bool { return r.RateBackoffs > 0 }), sum(h, func(r StepRecord) int { return r.RateBackoffs })
}

// Float64Steps counts the steps whose solve ran on a float64 K although
// the run's precision is Mixed (StepRecord.Float64), and retries those of
// them that failed on the Mixed K first (StepRecord.Float64Retry).
func (h History) Float64Steps() (steps, retries int) {
	return count(h, func(r StepRecord) bool { return r.Float64 }), count(h, func(r StepRecord) bool { return r.Float64Retry })
}

// TotalSolverEpochs sums SolverEpochs over the history.
func (h History) TotalSolverEpochs() float64 {
	return sum(h, func(r StepRecord) float64 { return r.SolverEpochs })
}

// TotalSolverSeconds sums SolverSeconds over the history.
func (h History) TotalSolverSeconds() float64 {
	return sum(h, func(r StepRecord) float64 { return r.SolverSeconds })
}

// TotalSeconds sums StepSeconds over the history.
func (h History) TotalSeconds() float64 {
	return sum(h, func(r StepRecord) float64 { return r.StepSeconds })
}

// sum returns Σ f(r) over h, in order.
func sum[T int | float64](h History, f func(StepRecord) T) T {
	var t T
	for _, r := range h {
		t += f(r)
	}
	return t
}

// count returns how many records of h satisfy f.
func count(h History, f func(StepRecord) bool) int {
	return sum(h, func(r StepRecord) int {
		if f(r) {
			return 1
		}
		return 0
	})
}

// Final holds the constrained hyperparameters at the end of a run.
type Final struct {
	Noise        float64   `json:"noise"`
	Signal       float64   `json:"signal"`
	Lengthscales []float64 `json:"lengthscales"`
}

// Result is the outcome of a training run: what `gpnb train --json` prints,
// what the reproduction runner stores per job, and what the charts and
// tables read.
type Result struct {
	Dataset       string  `json:"dataset"`
	Split         int     `json:"split"`
	NTrain        int     `json:"n_train"`
	NTest         int     `json:"n_test"`
	D             int     `json:"d"`
	Kernel        string  `json:"kernel"`
	Solver        string  `json:"solver"` // the solver's name: cg, ap, sgd, or cholesky (also for the exact gradient)
	WarmStart     bool    `json:"warm_start"`
	Probes        int     `json:"probes"`
	Seed          uint64  `json:"seed"`
	StepsDone     int     `json:"steps_done"`
	TotalSeconds  float64 `json:"total_seconds"`
	SolverSeconds float64 `json:"solver_seconds"`
	// Test is the evaluation on the test set at the final θ (Evaluate;
	// with the pathwise estimator also from its posterior samples), nil
	// when the run was not evaluated.
	Test *Eval `json:"test,omitempty"`
	// Operator describes the kernel operator of the last step
	// (kernel.Describe: "dense float64", "dense float32", "dense mixed", "matrix-free",
	// "gpu dense float64", ...): the one this process built, or else the
	// last step record's (a run resumed at its final step builds none);
	// empty when neither says.
	Operator string  `json:"operator,omitempty"`
	Final    Final   `json:"final"`
	History  History `json:"history"`
	// Config is the run's configuration (resolved), less what does not
	// change its results: the checkpoint path, the operator's memory budget
	// and workers, and DropResidualTraces. Optimiser.Result and
	// State.Result set it.
	Config *Config `json:"config,omitempty"`
	// Converged reports whether the run had converged (Optimiser.Converged,
	// with the run's ConvergedTol and ConvergedSteps) after its last step,
	// whatever its Config.Until.
	Converged bool `json:"converged,omitempty"`
	// Path is the path the run took (OptimiserState.Path): "iterative"
	// or "exact".
	Path Path `json:"path"`
	// ExactFrom is the number of Adam steps after which the run finished
	// on the exact path (OptimiserState.ExactFrom); 0 when it did not.
	ExactFrom int `json:"exact_from,omitempty"`
}
