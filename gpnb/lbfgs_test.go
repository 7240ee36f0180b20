package gpnb

import (
	"math"
	"testing"
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
