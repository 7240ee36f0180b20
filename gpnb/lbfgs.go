package gpnb

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// LBFGSMemory is the number of (s, y) pairs LBFGS keeps: scipy's L-BFGS-B
// default, which scikit-learn's Gaussian process uses.
const LBFGSMemory = 10

// The line search's constants: the sufficient decrease (Armijo) and
// curvature (weak Wolfe) factors, the evaluations a line search may take,
// and how many line searches in a row may fail before the minimiser stops
// trying (LBFGS.Failures).
const (
	lbfgsArmijo      = 1e-4
	lbfgsCurvature   = 0.9
	lbfgsMaxTrials   = 20
	lbfgsMaxFailures = 2
)

// LBFGSOperation is what an LBFGS needs from its caller next (reverse
// communication, in the manner of gonum's optimize.Operation).
type LBFGSOperation int

const (
	// LBFGSEvaluate asks for f and ∇f at LBFGS.Trial, given back by Tell.
	LBFGSEvaluate LBFGSOperation = iota
	// LBFGSIterated says that an iteration ended without needing a
	// further evaluation.
	LBFGSIterated
)

// LBFGS minimises a smooth function f over a box Lower ≤ x ≤ Upper by
// limited-memory BFGS, by reverse communication: Next says what it needs,
// the caller evaluates f and ∇f at Trial and gives them to Tell. Its whole
// state is these exported fields, plain data, so that a run saved between
// any two evaluations and restored continues with the same bits (gonum's
// optimize keeps its methods' state private, and a resumed run there
// restarts its memory and its line search).
//
// One iteration is one line search along the L-BFGS direction of the free
// variables, from the LBFGSMemory most recent pairs s = x_{k+1} − x_k,
// y = ∇f_{k+1} − ∇f_k. A variable is held (Active) while it lies at a bound
// with the gradient pointing out of the box: its component of the
// direction is zero, and the two-loop recursion reads the pairs on the
// free variables only. The memory outlives a change of the held set (a
// length scale reaching its upper bound, σ reaching its floor): the
// pairs' free parts still describe the free variables' curvature, and a
// pair whose free part has sᵀy ≤ ε·yᵀy is passed over, so the
// approximation stays positive definite. Trial points are projected onto
// the box. The line search
// accepts a point that decreases f sufficiently (Armijo, factor 1e-4) and
// either satisfies the weak Wolfe curvature condition (factor 0.9) or was
// clipped by a bound; it brackets by expanding ×4 and shrinks by a
// safeguarded quadratic step. A pair enters the memory only when
// sᵀy > ε·yᵀy (as L-BFGS-B), so the approximation stays positive
// definite. A line search that finds no decrease in lbfgsMaxTrials
// evaluations clears the memory, and the next iteration starts again
// from the projected steepest descent; after lbfgsMaxFailures such
// iterations in a row, iterations end at once (f cannot be decreased from
// X in float64).
//
// An evaluation may fail (f = +Inf, or NaN anywhere): the line search then
// shortens its step, as when f rose.
type LBFGS struct {
	// Lower and Upper bound x componentwise (±Inf: no bound).
	Lower, Upper []float64
	// X is the current point; F and G are f and ∇f there once Evaluated.
	X         []float64
	F         float64
	G         []float64
	Evaluated bool
	// S and Y are the memory's pairs, oldest first, at most LBFGSMemory.
	S, Y [][]float64
	// Active marks the variables held at a bound in the current (or last)
	// direction; nil before the first.
	Active []bool

	// The line search in progress, when Searching: direction Dir (zero on
	// held variables) with slope Gᵀ·Dir < 0 at X, and the trial point
	// Trial = P(X + Alpha·Dir), P the projection onto the box; Clipped
	// when P moved it. Beyond AlphaMax the projected point moves no more.
	// Lo and Hi bracket the accepted step: Lo is the longest step tried
	// that decreased f sufficiently (0: X itself), with LoF, LoSlope (the
	// slope along Dir there), and for Lo > 0 its point and gradient LoX,
	// LoG; Hi is the shortest that did not (0: none yet), with HiF unless
	// its evaluation failed (HiFailed). Trials counts the line search's
	// evaluations. Before the first evaluation Trial is X.
	Searching     bool
	Dir           []float64
	Slope         float64
	Alpha         float64
	AlphaMax      float64
	Trial         []float64
	Clipped       bool
	Lo, Hi        float64
	LoF, LoSlope  float64
	LoX, LoG      []float64
	HiF           float64
	HiFailed      bool
	Trials        int
	Iterations    int // completed iterations
	Evaluations   int // all evaluations told
	IterationEval int // evaluations of the current iteration, or of the last one once it has ended
	// Ended says that the last iteration has ended: the next call of Next
	// starts another.
	Ended bool
	// Failures counts the iterations in a row whose line search found no
	// decrease.
	Failures int
	// Reduction is the last iteration's relative decrease of f,
	// (f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) (scipy's factr test).
	Reduction float64
	// PendingSeconds is the time the evaluations of an unfinished
	// iteration have taken so far, for the caller's records.
	PendingSeconds float64
}

// NewLBFGS returns a minimiser starting at x0 projected onto the box
// [lower, upper]. The slices are copied; they must have equal lengths, and
// lower ≤ upper.
func NewLBFGS(x0, lower, upper []float64) (*LBFGS, error) {
	if len(lower) != len(x0) || len(upper) != len(x0) || len(x0) == 0 {
		return nil, fmt.Errorf("gpnb: L-BFGS: x0, lower and upper have lengths %d, %d, %d: give equal, non-zero lengths", len(x0), len(lower), len(upper))
	}
	m := &LBFGS{Lower: clone(lower), Upper: clone(upper), X: clone(x0), Ended: true}
	for i := range m.X {
		if !(lower[i] <= upper[i]) {
			return nil, fmt.Errorf("gpnb: L-BFGS: bounds [%g, %g] of variable %d are empty", lower[i], upper[i], i)
		}
		if math.IsNaN(x0[i]) {
			return nil, fmt.Errorf("gpnb: L-BFGS: x0[%d] is NaN", i)
		}
		m.X[i] = min(max(m.X[i], lower[i]), upper[i])
	}
	m.Trial = clone(m.X)
	return m, nil
}

// Next returns LBFGSEvaluate when the minimiser needs f and ∇f at Trial
// (give them to Tell), or LBFGSIterated when the current iteration ended
// without another evaluation: at a point whose projected gradient is zero,
// after lbfgsMaxFailures failed line searches, or when the first trial
// step is too short to move X in float64.
func (m *LBFGS) Next() LBFGSOperation {
	if m.Ended {
		m.Ended, m.IterationEval = false, 0
	}
	switch {
	case !m.Evaluated:
		m.Trial = clone(m.X)
		return LBFGSEvaluate
	case m.Searching:
		return LBFGSEvaluate
	case m.Failures >= lbfgsMaxFailures || m.ProjectedGradientNorm() == 0:
		m.endIteration(0)
		return LBFGSIterated
	}
	if !m.startSearch() {
		m.fail()
		return LBFGSIterated
	}
	return LBFGSEvaluate
}

// NeedsGradient reports whether Tell needs ∇f at Trial along with the
// value f there: for the first point, and for a trial that decreases f
// sufficiently, whose slope the line search reads. A trial it rejects
// needs f alone, so a caller whose gradient costs more than its value
// (the exact path's inverse) can leave it out.
func (m *LBFGS) NeedsGradient(f float64) bool {
	return !m.Evaluated || m.decreases(f)
}

// decreases reports whether f at Trial decreases f sufficiently for the
// line search in progress (Armijo), and is no worse than its bracket's
// best.
func (m *LBFGS) decreases(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	gdx := 0.0
	for i, x := range m.Trial {
		gdx += m.G[i] * (x - m.X[i])
	}
	return f <= m.F+lbfgsArmijo*math.Min(gdx, 0) && (m.Lo == 0 || f <= m.LoF)
}

// Tell gives the minimiser f and ∇f at Trial (f = +Inf for an evaluation
// that failed; g is copied) and reports whether that ended the iteration.
// g may be nil where NeedsGradient(f) is false; a nil g where it is true
// counts as a failed evaluation.
func (m *LBFGS) Tell(f float64, g []float64) (iterated bool) {
	m.Evaluations++
	m.IterationEval++
	dec := m.Evaluated && m.decreases(f)
	gOK := len(g) == len(m.X) && allFinite(g)
	ok := !math.IsNaN(f) && !math.IsInf(f, 0) && (gOK || (g == nil && m.Evaluated && !dec))
	if !m.Evaluated {
		if !ok {
			return false // Next asks again; the caller decides whether to give up
		}
		m.F, m.G, m.Evaluated = f, clone(g), true
		return false
	}
	m.Trials++
	decrease := ok && dec
	var next float64
	if decrease {
		slope := dot(g, m.Dir)
		if m.Clipped || slope >= lbfgsCurvature*m.Slope || (m.Hi == 0 && m.Alpha >= m.AlphaMax) {
			m.accept(m.Trial, f, g)
			return true
		}
		m.Lo, m.LoF, m.LoSlope, m.LoX, m.LoG = m.Alpha, f, slope, clone(m.Trial), clone(g)
		if m.Hi == 0 {
			next = math.Min(4*m.Alpha, m.AlphaMax)
		} else {
			next = m.interpolate()
		}
	} else {
		m.Hi, m.HiF, m.HiFailed = m.Alpha, f, !ok
		if !ok {
			m.HiF = 0
		}
		next = m.interpolate()
	}
	if m.Trials >= lbfgsMaxTrials || !m.setTrial(next) {
		if m.Lo > 0 {
			m.accept(m.LoX, m.LoF, m.LoG)
		} else {
			m.fail()
		}
		return true
	}
	return false
}

// ProjectedGradientNorm returns the largest |G_i| over the variables not
// held at a bound: 0 at a point that satisfies the first-order conditions
// of the box-constrained problem. +Inf before the first evaluation.
func (m *LBFGS) ProjectedGradientNorm() float64 {
	if !m.Evaluated {
		return math.Inf(1)
	}
	mx := 0.0
	for i, g := range m.G {
		if !m.held(i) {
			mx = math.Max(mx, math.Abs(g))
		}
	}
	return mx
}

// held reports whether variable i lies at a bound with the gradient
// pointing out of the box (descent would leave it).
func (m *LBFGS) held(i int) bool {
	return (m.X[i] <= m.Lower[i] && m.G[i] > 0) || (m.X[i] >= m.Upper[i] && m.G[i] < 0)
}

// startSearch sets the direction and the first trial point of an
// iteration's line search, or returns false when no step from X moves it.
func (m *LBFGS) startSearch() bool {
	p := len(m.X)
	active := make([]bool, p)
	for i := range active {
		active[i] = m.held(i)
	}
	m.Active = active
	d, curved := m.direction()
	slope := m.feasible(d)
	if !(slope < 0) {
		// Not a descent direction (the memory has lost positive
		// definiteness to rounding): start it again from steepest descent.
		m.S, m.Y = nil, nil
		d, curved = m.direction()
		slope = m.feasible(d)
		if !(slope < 0) {
			return false
		}
	}
	m.Dir, m.Slope = d, slope
	m.AlphaMax = 0
	for i, di := range d {
		switch {
		case di > 0:
			m.AlphaMax = math.Max(m.AlphaMax, (m.Upper[i]-m.X[i])/di)
		case di < 0:
			m.AlphaMax = math.Max(m.AlphaMax, (m.Lower[i]-m.X[i])/di)
		}
	}
	alpha := 1.0
	if !curved {
		// Without curvature, a step of length at most 1 (as L-BFGS-B's
		// first).
		alpha = math.Min(1, 1/math.Sqrt(dot(d, d)))
	}
	m.Searching, m.Trials = true, 0
	m.Lo, m.LoF, m.LoSlope, m.LoX, m.LoG = 0, m.F, slope, nil, nil
	m.Hi, m.HiF, m.HiFailed = 0, 0, false
	return m.setTrial(math.Min(alpha, m.AlphaMax))
}

// direction returns −H·g over the free variables by the two-loop
// recursion, H the L-BFGS inverse Hessian of the memory's pairs restricted
// to the free variables (γI, γ = sᵀy/yᵀy of the newest pair used, for its
// start; I without one), passing over a pair without positive curvature
// there (sᵀy ≤ ε·yᵀy on the free variables); held variables get 0. It
// reports whether a pair was used.
func (m *LBFGS) direction() ([]float64, bool) {
	free := func(a, b []float64) float64 {
		s := 0.0
		for i, x := range a {
			if !m.Active[i] {
				s += x * b[i]
			}
		}
		return s
	}
	q := make([]float64, len(m.X))
	for i, g := range m.G {
		if !m.Active[i] {
			q[i] = g
		}
	}
	k := len(m.S)
	// rho[j] = 0: pair j passed over; gamma = sᵀy/yᵀy of the newest pair
	// used, 0 while none is.
	a, rho := make([]float64, k), make([]float64, k)
	gamma := 0.0
	for j := k - 1; j >= 0; j-- {
		sy, yy := free(m.S[j], m.Y[j]), free(m.Y[j], m.Y[j])
		if !(sy > epsilon*yy) {
			continue
		}
		if gamma == 0 {
			gamma = sy / yy
		}
		rho[j] = 1 / sy
		a[j] = rho[j] * free(m.S[j], q)
		for i := range q {
			if !m.Active[i] {
				q[i] -= a[j] * m.Y[j][i]
			}
		}
	}
	if gamma > 0 {
		for i := range q {
			q[i] *= gamma
		}
	}
	for j := 0; j < k; j++ {
		b := rho[j] * free(m.Y[j], q)
		for i := range q {
			if !m.Active[i] {
				q[i] += (a[j] - b) * m.S[j][i]
			}
		}
	}
	for i := range q {
		q[i] = -q[i]
	}
	return q, gamma > 0
}

// feasible zeroes the components of d that would leave the box at once
// (a free variable at a bound whose quasi-Newton direction points out) and
// returns the slope Gᵀd.
func (m *LBFGS) feasible(d []float64) float64 {
	for i, di := range d {
		if (di < 0 && m.X[i] <= m.Lower[i]) || (di > 0 && m.X[i] >= m.Upper[i]) {
			d[i] = 0
		}
	}
	return dot(m.G, d)
}

// setTrial sets Trial = P(X + alpha·Dir) and returns false when that is X
// itself (the step is too short to move X in float64).
func (m *LBFGS) setTrial(alpha float64) bool {
	if !(alpha > 0) {
		return false
	}
	m.Alpha, m.Clipped = alpha, false
	moved := false
	if len(m.Trial) != len(m.X) {
		m.Trial = make([]float64, len(m.X))
	}
	for i, x := range m.X {
		t := x + alpha*m.Dir[i]
		if t < m.Lower[i] || t > m.Upper[i] {
			t, m.Clipped = min(max(t, m.Lower[i]), m.Upper[i]), true
		}
		m.Trial[i] = t
		moved = moved || t != x
	}
	return moved
}

// interpolate returns the next step inside the bracket (Lo, Hi): the
// minimiser of the quadratic through f and its slope at Lo and f at Hi,
// kept within [Lo + 0.1w, Lo + 0.5w] (w = Hi − Lo); Lo + 0.1w when the
// evaluation at Hi failed.
func (m *LBFGS) interpolate() float64 {
	w := m.Hi - m.Lo
	if m.HiFailed {
		return m.Lo + 0.1*w
	}
	t := 0.5 * w
	if c := m.HiF - m.LoF - m.LoSlope*w; c > 0 {
		t = -m.LoSlope * w * w / (2 * c)
	}
	if !(t >= 0.1*w) { // also NaN
		t = 0.1 * w
	}
	return m.Lo + math.Min(t, 0.5*w)
}

// accept moves X to x with f and g there, and updates the memory.
func (m *LBFGS) accept(x []float64, f float64, g []float64) {
	s, y := make([]float64, len(x)), make([]float64, len(x))
	for i := range x {
		s[i], y[i] = x[i]-m.X[i], g[i]-m.G[i]
	}
	if sy, yy := dot(s, y), dot(y, y); sy > epsilon*yy {
		m.S, m.Y = append(m.S, s), append(m.Y, y)
		if len(m.S) > LBFGSMemory {
			m.S, m.Y = slices.Delete(m.S, 0, 1), slices.Delete(m.Y, 0, 1)
		}
	}
	red := (m.F - f) / math.Max(math.Max(math.Abs(m.F), math.Abs(f)), 1)
	m.X, m.F, m.G = clone(x), f, clone(g)
	m.Failures = 0
	m.endIteration(red)
}

// fail ends an iteration whose line search found no decrease: X stays, the
// memory is cleared.
func (m *LBFGS) fail() {
	m.S, m.Y = nil, nil
	m.Failures++
	m.endIteration(0)
}

// endIteration closes the iteration with relative reduction red.
func (m *LBFGS) endIteration(red float64) {
	m.Reduction = red
	m.Iterations++
	m.Ended = true
	m.Searching = false
	m.Dir, m.LoX, m.LoG = nil, nil, nil
	m.Trial = clone(m.X)
	m.Alpha, m.AlphaMax, m.Slope, m.Lo, m.Hi, m.LoF, m.LoSlope, m.HiF, m.HiFailed, m.Clipped, m.Trials = 0, 0, 0, 0, 0, 0, 0, 0, false, false, 0
}

// Clone returns a deep copy of m.
func (m *LBFGS) Clone() *LBFGS {
	if m == nil {
		return nil
	}
	c := *m
	c.Lower, c.Upper, c.X, c.G = clone(m.Lower), clone(m.Upper), clone(m.X), clone(m.G)
	c.S, c.Y = cloneRows(m.S), cloneRows(m.Y)
	c.Active = slices.Clone(m.Active)
	c.Dir, c.Trial, c.LoX, c.LoG = clone(m.Dir), clone(m.Trial), clone(m.LoX), clone(m.LoG)
	return &c
}

// check validates a decoded state for p variables: shapes, finite values,
// X inside its box.
func (m *LBFGS) check(p int) error {
	lengths := func(vs ...[]float64) bool {
		for _, v := range vs {
			if len(v) != p {
				return false
			}
		}
		return true
	}
	switch {
	case !lengths(m.Lower, m.Upper, m.X, m.Trial):
		return fmt.Errorf("L-BFGS state has bounds, point or trial of lengths %d, %d, %d, %d, want %d", len(m.Lower), len(m.Upper), len(m.X), len(m.Trial), p)
	case m.Evaluated && (!lengths(m.G) || !allFinite(m.G) || math.IsNaN(m.F) || math.IsInf(m.F, 0)):
		return errors.New("L-BFGS state: non-finite or misshapen value or gradient")
	case m.Active != nil && len(m.Active) != p:
		return fmt.Errorf("L-BFGS state marks %d variables, want %d", len(m.Active), p)
	case len(m.S) != len(m.Y) || len(m.S) > LBFGSMemory || (len(m.S) > 0 && m.Active == nil):
		return fmt.Errorf("L-BFGS memory has %d and %d vectors, at most %d", len(m.S), len(m.Y), LBFGSMemory)
	case m.Searching && (!m.Evaluated || !lengths(m.Dir) || m.Active == nil):
		return errors.New("L-BFGS line search without a direction")
	case m.Lo > 0 && !lengths(m.LoX, m.LoG):
		return errors.New("L-BFGS line search without its bracket's point")
	case m.Iterations < 0 || m.Evaluations < 0 || m.IterationEval < 0 || m.Failures < 0 || m.Trials < 0:
		return errors.New("L-BFGS state has negative counters")
	}
	for _, v := range [][]float64{m.X, m.Trial, m.Dir, m.LoX, m.LoG} {
		if !allFinite(v) {
			return errors.New("L-BFGS state: non-finite point")
		}
	}
	for j := range m.S {
		if !lengths(m.S[j], m.Y[j]) || !allFinite(m.S[j]) || !allFinite(m.Y[j]) {
			return errors.New("L-BFGS memory: misshapen or non-finite pair")
		}
	}
	for i, x := range m.X {
		if !(m.Lower[i] <= x && x <= m.Upper[i]) {
			return fmt.Errorf("L-BFGS point %d is %g, outside its bounds [%g, %g]", i, x, m.Lower[i], m.Upper[i])
		}
	}
	return nil
}

// epsilon is float64's machine epsilon, 2⁻⁵².
const epsilon = 0x1p-52

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func cloneRows(v [][]float64) [][]float64 {
	if v == nil {
		return nil
	}
	out := make([][]float64, len(v))
	for i, r := range v {
		out[i] = clone(r)
	}
	return out
}
