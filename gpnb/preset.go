package gpnb

import (
	"fmt"
	"strings"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// Presets are named configurations for a purpose, each defined here once.
// A preset is a Config to start from: a caller changes what it wants from
// there, and gpnb train applies the flags given on its command line on top
// of it, so a preset changes defaults, never an explicit choice.
//
//   - "paper" is the paper's protocol (appendix B; Paper): a fixed number
//     of steps, float64, no preconditioner, softplus θ. For reproducing
//     and comparing with the paper.
//   - "fast" is a good model soon: CG with warm starts, FastProbes probe
//     vectors, mixed precision where the vectorised kernel exists
//     (kernel.MixedKernel), CG's automatic preconditioner
//     (solvers.PrecondRankAuto), the paper's-text stopping rules
//     (solvers.RulesPaperText: a system that meets its tolerance gets no
//     more products), log θ (ParamLog), a floor on σ (FastNoiseMin) and a
//     stop once the run has converged (UntilConverged); up to
//     FastExactUpTo training points, or FastExactWorkUpTo training
//     points times hyperparameters, the exact path instead (Cholesky +
//     L-BFGS, Config.ExactUpTo and ExactWorkUpTo; from 2000 points, first
//     on a subset, FastExactSubset; up to FastExactUpTo from two starts,
//     FastExactStarts), and up to FastFinishExactUpTo, Adam's
//     run finishing on it (Config.FinishExactUpTo) once σ nears its floor,
//     or, up to FastFinishConvergedUpTo, once Adam has converged
//     (Config.FinishConvergedUpTo). For fitting a model
//     to data. DESIGN.md
//     ("A good model fast") has the measurements behind each choice.
var PresetNames = []string{"paper", "fast"}

// FastProbes is the number of probe vectors of the "fast" preset (the
// authors' code's default): with fixed probes the optimiser converges to
// the optimum of one probe draw's gradient, whose distance from the exact
// optimum falls as the square root of the number of probes, and at the
// paper's 16 it costs more test log-likelihood than the speed is worth.
const FastProbes = 64

// FastNoiseMin is the "fast" preset's floor on σ (Config.NoiseMin), on
// the scale the run trains on (the target z-scored, by default): σ² ≥
// 10⁻⁵, the lower bound of scikit-learn's WhiteKernel, which is what a
// Python user's exact GP would stop at (GPyTorch's default constraint is
// σ² ≥ 10⁻⁴). On a near-noiseless target the marginal likelihood's optimum
// has σ → 0, and without a floor H's condition number grows without bound
// until no solver can follow; the floor is a setting (--noise-min), not a
// clamp hidden in the solver: set it lower, or 0, to let σ go further.
const FastNoiseMin = 3.1622776601683795e-3 // √1e-5

// FastExactUpTo is the fast preset's Config.ExactUpTo: up to this many
// training points the exact path (Cholesky + L-BFGS) gives the exact GP's
// test log-likelihood, which the iterative path misses by a few hundredths,
// in about the iterative path's time and less than scikit-learn's; beyond,
// its time grows to several times the iterative path's. DESIGN.md ("A good
// model fast") has the measurements (results/speed/fast-preset, stages
// crossover and suite).
const FastExactUpTo = 400

// FastExactWorkUpTo is the fast preset's Config.ExactWorkUpTo: beyond
// FastExactUpTo points, the exact path also where n·(d+2) is at most
// this, up to ExactWorkMaxN points. With few inputs L-BFGS needs few
// evaluations, each O(n³), and with its subset stage (FastExactSubset) the
// run took 0.17 to 0.64 times Adam's time on the measured sets within this
// line; it then ends at the exact optimum, which Adam's fixed probes miss
// by up to 0.011 in test log-likelihood. With more inputs it needs more
// evaluations, the subset stage needs more points, and on pol it ended at
// a maximum 0.018 below Adam's test log-likelihood. DESIGN.md ("A good
// model fast") has the measurements (results/speed/fast-preset, stages
// crossover and suite).
const FastExactWorkUpTo = 32000

// FastFinishExactUpTo is the fast preset's Config.FinishExactUpTo: up to
// this many training points a run whose σ heads for its floor (a
// near-noiseless target) finishes on the exact path: there Adam's steps,
// whose solves grow longer as σ falls, cost more than the finish's
// Cholesky evaluations, which cost the same at any σ. DESIGN.md ("A good
// model fast") has the measurements (results/speed/fast-preset, stage
// suite).
const FastFinishExactUpTo = 4000

// FastFinishConvergedUpTo is the fast preset's Config.FinishConvergedUpTo:
// up to this many training points Adam's converged run also finishes on
// the exact path, which brings the test log-likelihood to the exact GP's
// where the fixed probes left it a few hundredths short; at 4000 points
// it cost more than it gained. DESIGN.md ("A good model fast") has the
// measurements (results/speed/fast-preset, stage suite).
const FastFinishConvergedUpTo = 2000

// FastExactSubset is the fast preset's Config.ExactSubset: from 2000
// training points with at most 10 inputs its exact path first fits a
// subset of at least 1000, which brought the suite's sets there from
// 4.5–11.4 to 10.5–37.4 times scikit-learn's speed at its test
// log-likelihood; from 500 points the subset stage ended at σ's floor on
// protein and the run on all points stayed there. DESIGN.md ("A good
// model fast") has the measurements.
const FastExactSubset = 1000

// FastExactStarts is the fast preset's Config.ExactStarts: up to
// FastExactUpTo points a second start at twice the initial length scales,
// the higher L kept, brought two of the 30 400-point subsets of the seeds
// stage to scikit-learn's maximum, where the first start ended at another
// 0.08–0.12 below its test log-likelihood, for about twice the
// evaluations, still 5.2–42.2 times as fast as scikit-learn. DESIGN.md ("A
// good model fast") has the measurements.
const FastExactStarts = 2

// Preset returns the named preset (PresetNames) for the named solver (cg,
// ap, sgd, or cholesky for the exact gradient) on the named dataset, as
// Paper takes them. Names are case-insensitive; an unknown name is an
// ErrConfig error listing the known ones.
func Preset(name, solver, dataset string) (Config, error) {
	c, err := Paper(solver, dataset)
	if err != nil {
		return c, err
	}
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "paper":
		return c, nil
	case "fast":
		c.WarmStart = true
		c.Probes = FastProbes
		if kernel.MixedKernel() != "" {
			c.Operator.Precision = kernel.Mixed
		}
		if cg, ok := c.Solver.(solvers.CG); ok {
			cg.PrecondRank = solvers.PrecondRankAuto
			c.Solver = cg
		}
		c.Rules = solvers.RulesPaperText
		c.Param = ParamLog
		c.NoiseMin = FastNoiseMin
		c.Until = UntilConverged
		c.ExactUpTo = FastExactUpTo
		c.ExactWorkUpTo = FastExactWorkUpTo
		c.FinishExactUpTo = FastFinishExactUpTo
		c.FinishConvergedUpTo = FastFinishConvergedUpTo
		c.ExactSubset = FastExactSubset
		c.ExactStarts = FastExactStarts
		return c, nil
	}
	return c, fmt.Errorf("gpnb: %w: unknown preset %q: use one of %s", ErrConfig, name, strings.Join(PresetNames, ", "))
}

// Fast returns the "fast" preset with conjugate gradients (see Preset):
// the configuration to fit a model to one's own data with, e.g.
//
//	cfg := gpnb.Fast()
//	cfg.Kernel = gpnb.Matern52
//	o, err := gpnb.NewOptimiser(ds, cfg)
//	err = o.Run(ctx, gpnb.ConvergedMaxSteps) // stops once converged
func Fast() Config {
	c, err := Preset("fast", "cg", "")
	if err != nil {
		panic(err) // the names above are this file's own
	}
	return c
}
