package gpnb

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// Kernel families, re-exported so a notebook needs only this package.
const (
	Matern12 = kernel.Matern12
	Matern32 = kernel.Matern32
	Matern52 = kernel.Matern52
	RBF      = kernel.RBF
)

// GradientMode selects how level 2 computes ∇L.
type GradientMode int

const (
	// Hutchinson estimates the trace term of eq. 4 with s probe vectors
	// (eq. 5) and solves H[v_y, v_1..v_s] = [y, z_1..z_s] with the
	// configured iterative solver. The default.
	Hutchinson GradientMode = iota
	// ExactGradient uses a Cholesky factorisation of H (eq. 4 exactly): for
	// small n and for reference traces such as the paper's figure 4.
	ExactGradient
)

// String returns "hutchinson" or "exact".
func (g GradientMode) String() string {
	switch g {
	case Hutchinson:
		return "hutchinson"
	case ExactGradient:
		return "exact"
	}
	return fmt.Sprintf("GradientMode(%d)", int(g))
}

// ProbeDist is the distribution of the Hutchinson probe vectors z_j, which
// must satisfy E[z zᵀ] = I.
type ProbeDist int

const (
	// Gaussian probes z ~ N(0, I), the paper's choice and the default.
	Gaussian ProbeDist = iota
	// Rademacher probes: independent uniform random signs ±1.
	Rademacher
)

// String returns "gaussian" or "rademacher".
func (p ProbeDist) String() string {
	switch p {
	case Gaussian:
		return "gaussian"
	case Rademacher:
		return "rademacher"
	}
	return fmt.Sprintf("ProbeDist(%d)", int(p))
}

// ProbeMode says whether probes are drawn once or every step.
type ProbeMode int

const (
	// ProbesAuto ties the probes to Config.WarmStart: fixed when warm
	// starting (the paper's method), resampled otherwise (its baseline).
	ProbesAuto ProbeMode = iota
	// ProbesFixed draws the probes once and keeps them for every step.
	ProbesFixed
	// ProbesResampled draws new probes at every step.
	ProbesResampled
)

// String returns "auto", "fixed" or "resampled".
func (p ProbeMode) String() string {
	switch p {
	case ProbesAuto:
		return "auto"
	case ProbesFixed:
		return "fixed"
	case ProbesResampled:
		return "resampled"
	}
	return fmt.Sprintf("ProbeMode(%d)", int(p))
}

// Default values for the zero fields of Config.
const (
	DefaultProbes       = 16
	DefaultLearningRate = 0.1
	AdamBeta1           = 0.9
	AdamBeta2           = 0.999
	AdamEpsilon         = 1e-8
)

// Config configures an Optimiser. The zero value of every field is a usable
// default: Matérn-3/2, conjugate gradients with the paper's tolerances, 16
// Gaussian probes resampled each step, zero initialisation (the paper's
// baseline), learning rate 0.1, every hyperparameter initialised at 1.0.
type Config struct {
	// Kernel is the kernel family (default Matern32).
	Kernel kernel.Family

	// Solver is the level-3 linear solver; nil means solvers.CG{}.
	Solver solvers.Method
	// Settings are the solver's stopping rules. Zero tolerances mean the
	// paper's 0.01 (mean column) and 0.1 (probe columns).
	Settings solvers.Settings

	// Gradient selects the Hutchinson estimator (default) or the exact
	// Cholesky gradient.
	Gradient GradientMode
	// WarmStart starts each solve at the previous step's solution instead
	// of at zero.
	WarmStart bool
	// FixedProbes decides whether probes are drawn once (ProbesFixed) or
	// every step (ProbesResampled). ProbesAuto, the zero value, ties it to
	// WarmStart, as in the paper. Setting it explicitly lets an ablation
	// warm-start with resampled probes or fix probes with a zero start.
	FixedProbes ProbeMode
	// Probes is the number s of probe vectors (default 16).
	Probes int
	// ProbeDist is the probe distribution (default Gaussian).
	ProbeDist ProbeDist

	// LearningRate is Adam's step size (default 0.1).
	LearningRate float64
	// Seed seeds the probe generator (math/rand/v2 PCG).
	Seed uint64
	// Init is the initial constrained θ; a zero value means 1.0 for every
	// hyperparameter (the paper's initialisation).
	Init kernel.Hyper

	// Operator configures the CPU kernel operator (dense cache or
	// matrix-free, memory budget, precision).
	Operator kernel.Options
	// Backend, when set, builds the kernel operator instead of the CPU
	// kernel.NewOperator(X, k, Operator), e.g. the GPU backend:
	//
	//	Backend: func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
	//		return cuda.New(x, k, cuda.Options{})
	//	}
	//
	// An operator that implements kernel.Rekerneler is rebuilt in place at
	// each step. Backend is not saved in checkpoints: pass it again with
	// WithBackend (or WithConfig) when resuming. A different backend gives
	// a valid continuation, but not the same bits.
	Backend func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error)

	// TrackExactMLL records the Cholesky log marginal likelihood at the
	// start of every step in StepRecord.ExactMLL (O(n³) per step).
	TrackExactMLL bool

	// DropResidualTraces leaves StepRecord.Residuals empty: the history
	// (and so every checkpoint and Result) then holds O(steps) numbers
	// instead of one row of s+1 residuals per solver iteration, which for
	// a cold SGD run of 100 steps is millions of numbers. Iteration counts,
	// convergence, timings and the OnIteration hook are unaffected, and so
	// are the bits of θ. It may change on resume (WithConfig).
	DropResidualTraces bool

	// CheckpointPath, when set, makes Step save a checkpoint after every
	// completed step and Run save one when interrupted.
	CheckpointPath string

	// OnIteration, when set, is called after every solver iteration with
	// the 1-based step number, the 1-based iteration number within the
	// step and each column's relative residual. It is not saved in
	// checkpoints; set it again after Resume with Optimiser.OnIteration.
	OnIteration func(step, iter int, relRes []float64)
	// OnStep, when set, is called with each completed step's record. Not
	// saved in checkpoints; see Optimiser.OnStep.
	OnStep func(StepRecord)
}

// fixedProbes resolves FixedProbes against WarmStart.
func (c *Config) fixedProbes() bool {
	switch c.FixedProbes {
	case ProbesFixed:
		return true
	case ProbesResampled:
		return false
	}
	return c.WarmStart
}

// withDefaults fills zero fields and checks the result for dimension d.
func (c Config) withDefaults(d int) (Config, error) {
	if c.Solver == nil {
		c.Solver = solvers.CG{}
	}
	if c.Settings.RelTolMean == 0 {
		c.Settings.RelTolMean = 0.01
	}
	if c.Settings.RelTolProbes == 0 {
		c.Settings.RelTolProbes = 0.1
	}
	if c.Probes == 0 {
		c.Probes = DefaultProbes
	}
	if c.LearningRate == 0 {
		c.LearningRate = DefaultLearningRate
	}
	if c.Init.Lengthscales == nil && c.Init.Signal == 0 && c.Init.Noise == 0 {
		c.Init = kernel.DefaultHyper(d)
	} else {
		c.Init = c.Init.Clone()
	}
	if err := c.check(d); err != nil {
		return c, err
	}
	return c, nil
}

// ErrConfig is wrapped by every configuration validation error.
var ErrConfig = errors.New("invalid configuration")

func (c *Config) check(d int) error {
	switch {
	case !c.Kernel.Valid():
		return fmt.Errorf("gpnb: %w: unknown kernel family %v: use Matern12, Matern32, Matern52 or RBF", ErrConfig, c.Kernel)
	case c.Gradient != Hutchinson && c.Gradient != ExactGradient:
		return fmt.Errorf("gpnb: %w: unknown gradient mode %v: use Hutchinson or ExactGradient", ErrConfig, c.Gradient)
	case c.FixedProbes < ProbesAuto || c.FixedProbes > ProbesResampled:
		return fmt.Errorf("gpnb: %w: unknown probe mode %v: use ProbesAuto, ProbesFixed or ProbesResampled", ErrConfig, c.FixedProbes)
	case c.ProbeDist != Gaussian && c.ProbeDist != Rademacher:
		return fmt.Errorf("gpnb: %w: unknown probe distribution %v: use Gaussian or Rademacher", ErrConfig, c.ProbeDist)
	case c.Probes < 1:
		return fmt.Errorf("gpnb: %w: Probes = %d: need at least 1 probe vector (the paper uses 16)", ErrConfig, c.Probes)
	case !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 0):
		return fmt.Errorf("gpnb: %w: LearningRate = %v: must be finite and > 0 (the paper uses 0.1)", ErrConfig, c.LearningRate)
	case !(c.Settings.RelTolMean > 0) || !(c.Settings.RelTolProbes > 0):
		return fmt.Errorf("gpnb: %w: solver tolerances (%v, %v) must be > 0 (the paper uses 0.01 and 0.1)", ErrConfig, c.Settings.RelTolMean, c.Settings.RelTolProbes)
	case c.Settings.MaxIterations < 0:
		return fmt.Errorf("gpnb: %w: MaxIterations = %d must be ≥ 0 (0 means the solver's default)", ErrConfig, c.Settings.MaxIterations)
	}
	if _, err := encodeMethod(c.Solver); err != nil {
		return err
	}
	if err := c.Init.Validate(d); err != nil {
		return fmt.Errorf("gpnb: %w: Init: %v", ErrConfig, err)
	}
	return nil
}

// MethodSpec names a solver method and its parameters as plain data, so a
// checkpoint can rebuild it.
type MethodSpec struct {
	Name         string  // "cg", "ap", "sgd" or "cholesky"
	PrecondRank  int     // CG
	PrecondNoise float64 // CG
	BlockSize    int     // AP
	BatchSize    int     // SGD
	LearningRate float64 // SGD, normalised
	// RawLearningRate is SGD's unnormalised (paper) learning rate.
	RawLearningRate float64
	Momentum        float64 // SGD
	Seed            uint64  // SGD
}

// encodeMethod turns a solvers.Method into a MethodSpec.
func encodeMethod(m solvers.Method) (MethodSpec, error) {
	switch v := m.(type) {
	case solvers.CG:
		return MethodSpec{Name: "cg", PrecondRank: v.PrecondRank, PrecondNoise: v.PrecondNoise}, nil
	case *solvers.CG:
		return MethodSpec{Name: "cg", PrecondRank: v.PrecondRank, PrecondNoise: v.PrecondNoise}, nil
	case solvers.AP:
		return MethodSpec{Name: "ap", BlockSize: v.BlockSize}, nil
	case *solvers.AP:
		return MethodSpec{Name: "ap", BlockSize: v.BlockSize}, nil
	case solvers.SGD:
		return MethodSpec{Name: "sgd", BatchSize: v.BatchSize, LearningRate: v.LearningRate, RawLearningRate: v.RawLearningRate, Momentum: v.Momentum, Seed: v.Seed}, nil
	case *solvers.SGD:
		return MethodSpec{Name: "sgd", BatchSize: v.BatchSize, LearningRate: v.LearningRate, RawLearningRate: v.RawLearningRate, Momentum: v.Momentum, Seed: v.Seed}, nil
	case solvers.Cholesky:
		return MethodSpec{Name: "cholesky"}, nil
	case *solvers.Cholesky:
		return MethodSpec{Name: "cholesky"}, nil
	}
	return MethodSpec{}, fmt.Errorf("gpnb: %w: solver %T cannot be saved in a checkpoint: use solvers.CG, AP, SGD or Cholesky", ErrConfig, m)
}

// Method rebuilds the solvers.Method that s describes.
func (s MethodSpec) Method() (solvers.Method, error) {
	switch strings.ToLower(s.Name) {
	case "cg":
		return solvers.CG{PrecondRank: s.PrecondRank, PrecondNoise: s.PrecondNoise}, nil
	case "ap":
		return solvers.AP{BlockSize: s.BlockSize}, nil
	case "sgd":
		return solvers.SGD{BatchSize: s.BatchSize, LearningRate: s.LearningRate, RawLearningRate: s.RawLearningRate, Momentum: s.Momentum, Seed: s.Seed}, nil
	case "cholesky":
		return solvers.Cholesky{}, nil
	}
	return nil, fmt.Errorf("gpnb: %w: unknown solver %q: use cg, ap, sgd or cholesky", ErrConfig, s.Name)
}
