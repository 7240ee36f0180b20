package gpnb

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// rosenbrock returns f(x, y) = (1 − x)² + 100(y − x²)² and writes ∇f to g.
func rosenbrock(p, g []float64) float64 {
	x, y := p[0], p[1]
	g[0] = -2*(1-x) - 400*x*(y-x*x)
	g[1] = 200 * (y - x*x)
	return (1-x)*(1-x) + 100*(y-x*x)*(y-x*x)
}

// minimise drives m by reverse communication on f until an iteration ends
// with the projected gradient below tol, or maxIter iterations.
func minimise(t *testing.T, m *LBFGS, f func(p, g []float64) float64, tol float64, maxIter int) {
	t.Helper()
	g := make([]float64, len(m.X))
	for it := 0; it < maxIter; it++ {
		for m.Next() == LBFGSEvaluate {
			if m.Tell(f(m.Trial, g), g) {
				break
			}
		}
		if m.ProjectedGradientNorm() < tol {
			return
		}
	}
	t.Fatalf("not converged in %d iterations: x %v, projected gradient %g", maxIter, m.X, m.ProjectedGradientNorm())
}

// TestLBFGSRosenbrock: the minimiser finds Rosenbrock's known minima,
// unbounded (1, 1) and in the box x ≤ 0.5, where the minimiser is
// (0.5, 0.25) with x held at its bound (∂f/∂x < 0 there); trial points
// never leave the box, and the memory holds at most LBFGSMemory pairs, each
// with sᵀy > 0.
func TestLBFGSRosenbrock(t *testing.T) {
	inf := math.Inf(1)
	m, err := NewLBFGS([]float64{-1.2, 1}, []float64{-inf, -inf}, []float64{inf, inf})
	if err != nil {
		t.Fatal(err)
	}
	minimise(t, m, rosenbrock, 1e-8, 200)
	if math.Abs(m.X[0]-1) > 1e-6 || math.Abs(m.X[1]-1) > 1e-6 {
		t.Errorf("unbounded: minimum at %v, want (1, 1)", m.X)
	}
	t.Logf("unbounded: %d iterations, %d evaluations", m.Iterations, m.Evaluations)
	if m.Iterations > 100 {
		t.Errorf("unbounded: %d iterations (L-BFGS takes about 35)", m.Iterations)
	}

	lo, hi := []float64{-2, -2}, []float64{0.5, 2}
	m, err = NewLBFGS([]float64{-1.2, 1}, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	box := func(p, g []float64) float64 {
		for i, x := range p {
			if x < lo[i] || x > hi[i] {
				t.Fatalf("trial point %v outside the box", p)
			}
		}
		if len(m.S) > LBFGSMemory {
			t.Fatalf("memory holds %d pairs", len(m.S))
		}
		for j := range m.S {
			if dot(m.S[j], m.Y[j]) <= 0 {
				t.Fatalf("pair %d has sᵀy = %g", j, dot(m.S[j], m.Y[j]))
			}
		}
		return rosenbrock(p, g)
	}
	minimise(t, m, box, 1e-8, 200)
	if m.X[0] != 0.5 || math.Abs(m.X[1]-0.25) > 1e-7 {
		t.Errorf("box: minimum at %v, want (0.5, 0.25)", m.X)
	}
	if !m.held(0) || m.G[0] >= 0 {
		t.Errorf("box: x is not held at its bound (gradient %v)", m.G)
	}
}

// TestLBFGSFailedEvaluations: evaluations that fail (+Inf) make the line
// search step back, as a rise of f does: on f = x − log x, undefined for
// x ≤ 0, the quasi-Newton step from x = 10 overshoots into x ≤ 0 (the
// secant curvature there is small), and the minimiser still finds the
// minimum x = 1.
func TestLBFGSFailedEvaluations(t *testing.T) {
	inf := math.Inf(1)
	m, err := NewLBFGS([]float64{10}, []float64{-inf}, []float64{inf})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	f := func(p, g []float64) float64 {
		x := p[0]
		g[0] = 1 - 1/x
		if x <= 0 {
			failed++
			return inf
		}
		return x - math.Log(x)
	}
	minimise(t, m, f, 1e-9, 100)
	if math.Abs(m.X[0]-1) > 1e-8 || failed == 0 {
		t.Errorf("ended at %v after %d failed evaluations, want 1 after some", m.X, failed)
	}
}

// TestLBFGSGradientOnlyWhenNeeded: a caller that gives ∇f only where
// NeedsGradient asks for it (nil otherwise) drives the minimiser through
// the same points, bit for bit, as one that always gives it, on
// Rosenbrock in a box, where line searches reject trials; a nil gradient
// where it was needed counts as a failed evaluation.
func TestLBFGSGradientOnlyWhenNeeded(t *testing.T) {
	lo, hi := []float64{-2, -2}, []float64{0.5, 2}
	full, err := NewLBFGS([]float64{-1.2, 1}, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := NewLBFGS([]float64{-1.2, 1}, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, 2)
	skipped := 0
	for it := 0; it < 200 && full.ProjectedGradientNorm() > 1e-10; it++ {
		for full.Next() == LBFGSEvaluate {
			if lazy.Next() != LBFGSEvaluate || !slices.Equal(lazy.Trial, full.Trial) {
				t.Fatalf("iteration %d: trial %v, want %v", it, lazy.Trial, full.Trial)
			}
			f := rosenbrock(full.Trial, g)
			var lg []float64
			if lazy.NeedsGradient(f) {
				lg = g
			} else {
				skipped++
			}
			doneLazy := lazy.Tell(f, lg)
			if done := full.Tell(f, g); done != doneLazy {
				t.Fatalf("iteration %d: the lazy search ended %v, the full one %v", it, doneLazy, done)
			} else if done {
				break
			}
		}
		if !slices.Equal(lazy.X, full.X) || lazy.F != full.F {
			t.Fatalf("iteration %d: lazy at %v (f %v), full at %v (f %v)", it, lazy.X, lazy.F, full.X, full.F)
		}
	}
	if skipped == 0 || lazy.Evaluations != full.Evaluations {
		t.Errorf("%d of %d evaluations without a gradient (the full run: %d), want some", skipped, lazy.Evaluations, full.Evaluations)
	}
	t.Logf("%d of %d evaluations needed no gradient", skipped, full.Evaluations)

	// A nil gradient where one was needed: the first point is asked again.
	m, err := NewLBFGS([]float64{-1.2, 1}, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	m.Next()
	if f := rosenbrock(m.Trial, g); !m.NeedsGradient(f) || m.Tell(f, nil) || m.Evaluated {
		t.Errorf("the first point told without its gradient: evaluated %v", m.Evaluated)
	}
}

// TestLBFGSKeepsMemoryAtBounds: on f = ½(x − c)ᵀA(x − c), A = BBᵀ + I with
// B fixed and c outside the box in three coordinates, the variables reach
// their bounds one by one; the memory outlives each change of the held
// set (pairs remain right after it), and the minimiser ends where the
// KKT conditions hold: the free variables solve A's reduced system (a
// dense solve by gonum), and each held variable's gradient points out of
// the box.
func TestLBFGSKeepsMemoryAtBounds(t *testing.T) {
	const p = 6
	var a [p][p]float64
	for i := range p {
		for j := range p {
			for k := range p {
				a[i][j] += math.Sin(float64(1+i+3*k)) * math.Sin(float64(1+j+3*k))
			}
		}
		a[i][i]++
	}
	c := []float64{1.6, -0.2, 1.3, 0.3, -1.5, 0.1}
	lo, hi := []float64{-1, -1, -1, -1, -1, -1}, []float64{1, 1, 1, 1, 1, 1}
	f := func(x, g []float64) float64 {
		v := 0.0
		for i := range p {
			g[i] = 0
			for j := range p {
				g[i] += a[i][j] * (x[j] - c[j])
			}
			v += (x[i] - c[i]) * g[i] / 2
		}
		return v
	}
	m, err := NewLBFGS(make([]float64, p), lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, p)
	changes, kept := 0, 0
	var held []bool
	for it := 0; it < 200 && m.ProjectedGradientNorm() >= 1e-8 || it == 0; it++ {
		before := len(m.S)
		for m.Next() == LBFGSEvaluate {
			if m.Tell(f(m.Trial, g), g) {
				break
			}
		}
		// On a quadratic every step's pair has sᵀy = sᵀAs > 0 and enters
		// the memory: a memory cleared at the change would hold one pair.
		if held != nil && m.Active != nil && !slices.Equal(held, m.Active) && before > 0 {
			changes++
			if len(m.S) == min(before+1, LBFGSMemory) {
				kept++
			}
		}
		held = append(held[:0], m.Active...)
	}
	if m.ProjectedGradientNorm() >= 1e-8 {
		t.Fatalf("not converged: x %v, projected gradient %g", m.X, m.ProjectedGradientNorm())
	}
	if changes == 0 || kept != changes {
		t.Errorf("the held set changed %d times, and the memory kept pairs across %d of them", changes, kept)
	}
	// KKT: x_F solves A_FF x_F = A_F·c − A_FH x_H (gonum's LU solve).
	var free []int
	for i := range p {
		if !m.held(i) {
			free = append(free, i)
		}
	}
	k := len(free)
	if k == p || k == 0 {
		t.Fatalf("held set %v at %v: the test wants some variables held and some free", m.Active, m.X)
	}
	aff, rhs := mat.NewDense(k, k, nil), mat.NewVecDense(k, nil)
	for r, i := range free {
		for s, j := range free {
			aff.Set(r, s, a[i][j])
		}
		for j := range p {
			v := a[i][j] * c[j]
			if m.held(j) {
				v -= a[i][j] * m.X[j]
			}
			rhs.SetVec(r, rhs.AtVec(r)+v)
		}
	}
	var sol mat.VecDense
	if err := sol.SolveVec(aff, rhs); err != nil {
		t.Fatal(err)
	}
	want := sol.RawVector().Data
	for r, i := range free {
		if math.Abs(m.X[i]-want[r]) > 1e-8 {
			t.Errorf("x[%d] = %v, the reduced system gives %v", i, m.X[i], want[r])
		}
	}
	for i := range p {
		if m.held(i) && !((m.X[i] == lo[i] && m.G[i] > 0) || (m.X[i] == hi[i] && m.G[i] < 0)) {
			t.Errorf("held x[%d] = %v with gradient %v", i, m.X[i], m.G[i])
		}
	}
	t.Logf("%d iterations, %d evaluations; held set changed %d times; free %v; x %v", m.Iterations, m.Evaluations, changes, free, m.X)
}
