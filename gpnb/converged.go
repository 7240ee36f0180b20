package gpnb

import (
	"math"

	"github.com/gpnb/gpnb/internal/enum"
)

// Until says when Optimiser.Run stops.
type Until int

const (
	// UntilSteps runs every step asked for: the paper's protocol (a fixed
	// number of steps) and the default.
	UntilSteps Until = iota
	// UntilConverged stops after the first step at which the run has
	// converged (Optimiser.Converged); the steps asked for are then a cap,
	// which a healthy run does not reach.
	UntilConverged
)

var untilNames = enum.Enum[Until]{Type: "Until", What: "stopping rule", Err: errEnum, Names: []string{"steps", "converged"}}

// String returns "steps" or "converged".
func (u Until) String() string { return untilNames.Name(u) }

// MarshalText returns String().
func (u Until) MarshalText() ([]byte, error) { return untilNames.Marshal(u) }

// UnmarshalText parses steps or converged.
func (u *Until) UnmarshalText(b []byte) error { return untilNames.Unmarshal(u, b) }

// ConvergedMaxSteps is the step cap gpnb train puts on a run that stops
// when converged (Config.Until = UntilConverged) unless --steps says
// otherwise: a last resort that a healthy run does not reach.
const ConvergedMaxSteps = 1000

// Defaults of the convergence test (Config.ConvergedTol and
// Config.ConvergedSteps when 0); DESIGN.md ("A good model fast") has the
// measurements behind them.
const (
	// DefaultConvergedTol bounds the rate at which the run still raises
	// the log marginal likelihood per training point, L/n, a step
	// (DESIGN.md has what a run stopped there leaves).
	DefaultConvergedTol = 3e-4
	// DefaultConvergedSteps is the window P of the test: a little longer
	// than Adam's momentum (β₁ = 0.9) remembers, and long enough that the
	// jitter of warm-started solves stopped at their tolerances averages
	// out.
	DefaultConvergedSteps = 10
)

// convergedTol returns ConvergedTol or its default.
func (c *Config) convergedTol() float64 { return orDefault(c.ConvergedTol, DefaultConvergedTol) }

// convergedSteps returns ConvergedSteps or its default.
func (c *Config) convergedSteps() int { return orDefault(c.ConvergedSteps, DefaultConvergedSteps) }

// Converged reports whether the run has converged: with P =
// ConvergedSteps and tol = ConvergedTol (Config), after at least 2P steps,
// whether L/n still rises by less than tol a step, as estimated to first
// order from the history:
//
//	Σ_i |ḡ_i| · |Δ_i| < tol,
//
// ḡ_i the mean over the last P steps of θ_i ∂L/∂θ_i / n (the gradient
// with respect to log θ_i per training point) and Δ_i the change a step of
// log θ_i, the mean over the last P steps less the mean over the P before,
// over P. Means over windows, because warm-started solves stopped at their
// tolerances make every step's θ and gradient jitter, and Adam at a fixed
// learning rate never settles closer than that; the product, because a
// hyperparameter may go on moving where L hardly depends on it (the length
// scale of an input that does not matter) or hardly move where it does.
// It reads only the history, so a resumed run decides as the straight run
// does.
//
// On the exact path (Config.ExactUpTo) it is that path's rule instead
// (ExactGradTol, ExactRelTol), read from the L-BFGS state.
func (o *Optimiser) Converged() bool {
	if o.st.Path == PathExact {
		return o.st.LBFGS.exactConverged(o.st.N)
	}
	return o.cfg.converged(o.st.History, o.st.N)
}

// converged is Optimiser.Converged for a history h of a run on n points.
func (c *Config) converged(h History, n int) bool {
	tol, p := c.convergedTol(), c.convergedSteps()
	t := len(h)
	if t < 2*p {
		return false
	}
	theta := func(s int) []float64 { // θ after step s (s = 0: Config.Init)
		if s == 0 {
			return c.Init.Vector()
		}
		return h[s-1].Hyper().Vector()
	}
	d := len(theta(t))
	last, prev, slope := make([]float64, d), make([]float64, d), make([]float64, d)
	for s := t - 2*p + 1; s <= t; s++ {
		th, before := theta(s), theta(s-1)
		g := h[s-1].Gradient
		if len(th) != d || len(before) != d || len(g) != d {
			return false
		}
		for i, x := range th {
			if s > t-p {
				last[i] += math.Log(x)
				slope[i] += g[i] * before[i]
			} else {
				prev[i] += math.Log(x)
			}
		}
	}
	pf := float64(p)
	rate := 0.0
	for i := range last {
		rate += math.Abs(slope[i]) / (pf * float64(n)) * math.Abs(last[i]-prev[i]) / (pf * pf)
	}
	return rate < tol
}
