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

// DefaultConvergedGrad bounds the gradient a converged run may still
// have (Config.ConvergedGrad when 0): |∂(L/n)/∂log θ_i|, the mean over
// the last ConvergedSteps steps, for every hyperparameter. A run whose L
// still rises slowly because Adam's second moment, remembering the first
// steps' large gradients, has shrunk its steps (σ creeping down on a
// near-noiseless target) has a gradient of one sign well above it; the
// jitter of warm-started solves on pol stays below it (DESIGN.md).
const DefaultConvergedGrad = 1e-2

// convergedTol returns ConvergedTol or its default.
func (c *Config) convergedTol() float64 { return orDefault(c.ConvergedTol, DefaultConvergedTol) }

// convergedSteps returns ConvergedSteps or its default.
func (c *Config) convergedSteps() int { return orDefault(c.ConvergedSteps, DefaultConvergedSteps) }

// convergedGrad returns ConvergedGrad or its default.
func (c *Config) convergedGrad() float64 { return orDefault(c.ConvergedGrad, DefaultConvergedGrad) }

// Converged reports whether the run has converged: with P =
// ConvergedSteps, tol = ConvergedTol and g = ConvergedGrad (Config),
// after at least 2P steps, whether L/n still rises by less than tol a
// step, as estimated to first order from the history, and its gradient is
// below g:
//
//	Σ_i |ḡ_i| · |Δ_i| < tol  and  max_i |ḡ_i| < g,
//
// ḡ_i the mean over the last P steps of θ_i ∂L/∂θ_i / n (the gradient
// with respect to log θ_i per training point) and Δ_i the change a step of
// log θ_i, the mean over the last P steps less the mean over the P before,
// over P. Means over windows, because warm-started solves stopped at their
// tolerances make every step's θ and gradient jitter, and Adam at a fixed
// learning rate never settles closer than that; the product, because a
// hyperparameter may go on moving where L hardly depends on it (the length
// scale of an input that does not matter) or hardly move where it does;
// the gradient, because Adam's steps shrink as its second moment
// remembers the first steps' large gradients, so a hyperparameter that L
// still pulls on can creep too slowly for the product to see. σ held at
// its floor (Config.NoiseMin) by a gradient pulling it lower counts as
// settled. It reads only the history, so a resumed run decides as the
// straight run does.
//
// On the exact path (Config.PathFor) it is that path's rule instead
// (ExactGradTol, ExactRelTol), read from the L-BFGS state. A run that
// finishes on the exact path (Config.FinishExactUpTo) has not converged
// until its finish has.
func (o *Optimiser) Converged() bool { return o.st.converged() }

// converged is Optimiser.Converged for a history h of a run on n points.
func (c *Config) converged(h History, n int) bool { return c.settled(h, n, true) }

// settled is converged's test; withGrad false leaves out the bound on
// the gradient, for a run whose exact finish tests the exact gradient
// (Config.FinishExactUpTo).
func (c *Config) settled(h History, n int, withGrad bool) bool {
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
	rate, grad := 0.0, c.convergedGrad()
	for i := range last {
		g := slope[i] / (pf * float64(n))
		if i == d-1 && g < 0 && c.OnNoiseFloor(theta(t)[i]) {
			g = 0 // σ on its floor, pulled below it
		}
		if withGrad && math.Abs(g) >= grad {
			return false
		}
		rate += math.Abs(g) * math.Abs(last[i]-prev[i]) / (pf * pf)
	}
	return rate < tol
}

// OnNoiseFloor reports whether σ = noise sits on the floor Config.NoiseMin
// (within the rounding of the parametrisation's round trip), false
// without a floor.
func (c Config) OnNoiseFloor(noise float64) bool {
	return c.NoiseMin > 0 && noise <= c.NoiseMin*(1+1e-9)
}

// MaxAdamHalvings bounds how often a run that stops once converged
// (UntilConverged) halves Adam's learning rate because θ oscillates. Adam
// at a fixed rate can circle in a long valley of the marginal likelihood
// (σ on its floor, the signal and the length scales of a near-noiseless
// target trading off) with steps of about the rate, back and forth, and
// such a run never meets the convergence test. After every step the run
// looks at the last 2P steps (P = ConvergedSteps): when a hyperparameter
// travelled in log θ more than P times the current rate but ended less
// than a quarter of that from where it started, and the rate was not
// halved within those steps, the next steps take half the rate
// (StepRecord.AdamHalvings). Runs for a number of steps (UntilSteps) keep
// the rate they were given.
const MaxAdamHalvings = 5

// adamHalvings returns how often the next step halves Config.LearningRate.
func (c *Config) adamHalvings(h History) int {
	k := 0
	if len(h) > 0 {
		k = h[len(h)-1].AdamHalvings
	}
	p := 2 * c.convergedSteps()
	if c.Until != UntilConverged || k >= MaxAdamHalvings || len(h) < p+1 {
		return k
	}
	w := h[len(h)-p-1:]
	for _, r := range w[1:] {
		if r.AdamHalvings != k {
			return k // halved within the window
		}
	}
	lr := c.LearningRate / float64(int(1)<<k)
	first := w[0].Hyper().Vector()
	prev := first
	path := make([]float64, len(first))
	for _, r := range w[1:] {
		th := r.Hyper().Vector()
		if len(th) != len(first) {
			return k
		}
		for i := range th {
			path[i] += math.Abs(math.Log(th[i]) - math.Log(prev[i]))
		}
		prev = th
	}
	for i, l := range path {
		if l > float64(p/2)*lr && math.Abs(math.Log(prev[i])-math.Log(first[i])) < l/4 {
			return k + 1
		}
	}
	return k
}
