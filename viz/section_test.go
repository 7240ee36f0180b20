package viz

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
	"github.com/gpnb/gpnb/solvers"
)

// sectionProblem returns a small kernel system H = K + σ²I with its dense
// matrix, a right-hand side, the exact solution (Cholesky) and a perturbed
// warm start.
func sectionProblem(t *testing.T, n int) (*solvers.DenseOperator, *mat.SymDense, []float64, []float64, []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	x := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		x.SetRow(i, []float64{rng.NormFloat64(), rng.NormFloat64()})
	}
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{1, 1.5}, Signal: 1, Noise: 0.5}}
	h := gptest.SymH(x, k, k.Hyper.Noise)
	op, err := solvers.NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		t.Fatal("not PD")
	}
	var vv mat.VecDense
	if err := ch.SolveVecTo(&vv, mat.NewVecDense(n, b)); err != nil {
		t.Fatal(err)
	}
	v := vv.RawVector().Data
	v0 := make([]float64, n)
	for i := range v0 {
		v0[i] = v[i] + 0.3*rng.NormFloat64()
	}
	return op, h, b, v, v0
}

func quad(h *mat.SymDense, b, u []float64) float64 {
	var hu mat.VecDense
	hu.MulVec(h, mat.NewVecDense(len(u), u))
	return 0.5*floats.Dot(u, hu.RawVector().Data) - floats.Dot(u, b)
}

func TestCrossSectionAgainstDense(t *testing.T) {
	const n = 40
	op, h, b, v, v0 := sectionProblem(t, n)
	s, err := NewSection(op, b, v, v0, SectionOptions{Grid: 9, LanczosIterations: n})
	if err != nil {
		t.Fatal(err)
	}
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		t.Fatal("EigenSym failed")
	}
	vals := eig.Values(nil)
	sort.Sort(sort.Reverse(sort.Float64Slice(vals)))
	for i := 0; i < 2; i++ {
		if !near(s.Lambda[i], vals[i], 1e-10) {
			t.Errorf("λ%d = %v, dense %v", i+1, s.Lambda[i], vals[i])
		}
	}
	// Every grid value against f evaluated directly with the dense H.
	u := make([]float64, n)
	for j, be := range s.Beta {
		for i, al := range s.Alpha {
			for r := range u {
				u[r] = v[r] + al*s.E1[r] + be*s.E2[r]
			}
			if want := quad(h, b, u); !near(s.F[j][i], want, 1e-10) {
				t.Fatalf("F[%d][%d] = %v, direct %v", j, i, s.F[j][i], want)
			}
		}
	}
	// v is the exact solution, so the grid minimum is at the centre.
	c := len(s.Alpha) / 2
	for j := range s.F {
		for i := range s.F[j] {
			if s.F[j][i] < s.F[c][c]-1e-12 {
				t.Errorf("F[%d][%d] = %v below the centre %v", j, i, s.F[j][i], s.F[c][c])
			}
		}
	}
	// Projections: α = e1ᵀ(u0 − v), β = e2ᵀ(u0 − v).
	d := make([]float64, n)
	floats.SubTo(d, v0, v)
	if !near(s.Warm[0], floats.Dot(s.E1, d), 1e-12) || !near(s.Warm[1], floats.Dot(s.E2, d), 1e-12) {
		t.Errorf("warm projection %v", s.Warm)
	}
	if !near(s.Zero[0], -floats.Dot(s.E1, v), 1e-12) || !near(s.Zero[1], -floats.Dot(s.E2, v), 1e-12) {
		t.Errorf("zero projection %v", s.Zero)
	}
	// The automatic span contains every marker.
	span := s.Alpha[len(s.Alpha)-1]
	for _, p := range [][2]float64{s.Zero, s.Warm} {
		if math.Abs(p[0]) > span || math.Abs(p[1]) > span {
			t.Errorf("marker %v outside the grid ±%v", p, span)
		}
	}

	ch := s.Chart()
	o := options(t, ch)[0]
	ss := seriesOf(t, o)
	if got := names(ss); !equalStrings(got, []string{"f(u)", "solution", "zero init", "warm start"}) {
		t.Fatalf("series %v", got)
	}
	if len(ss[0]["data"].([]any)) != 81 {
		t.Errorf("heat cells %d, want 81", len(ss[0]["data"].([]any)))
	}
	vm := o["visualMap"].([]any)[0].(map[string]any)
	if vm["seriesIndex"] != 0.0 || !near(vm["min"].(float64), s.F[c][c], 1e-12) {
		t.Errorf("visualMap %v, want seriesIndex 0 and min f(v) = %v", vm, s.F[c][c])
	}
	xs, ys := xy(t, ss[3])
	if xs[0] != s.Warm[0] || ys[0] != s.Warm[1] {
		t.Errorf("warm marker at (%v, %v), want %v", xs[0], ys[0], s.Warm)
	}
}

func TestFigure1AndBadInput(t *testing.T) {
	op, _, b, v, v0 := sectionProblem(t, 20)
	r := synthResult("pol", "cg", true, 0, 3, 1, 1)
	c, err := Figure1(op, b, v, v0, r.History, SectionOptions{Grid: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Panels) != 2 || c.Panels[0].Heat == nil || c.Panels[1].SeriesNames()[0] != "zero init" {
		t.Fatal("figure 1 should be the cross-section beside the distances")
	}
	nan := append([]float64(nil), b...)
	nan[3] = math.NaN()
	for name, f := range map[string]func() error{
		"short b":   func() error { _, err := NewSection(op, b[:5], v, v0, SectionOptions{}); return err },
		"NaN b":     func() error { _, err := NewSection(op, nan, v, v0, SectionOptions{}); return err },
		"nil op":    func() error { _, err := NewSection(nil, b, v, v0, SectionOptions{}); return err },
		"grid 1":    func() error { _, err := NewSection(op, b, v, v0, SectionOptions{Grid: 1}); return err },
		"span -1":   func() error { _, err := NewSection(op, b, v, v0, SectionOptions{Span: -1}); return err },
		"lanczos 1": func() error { _, err := NewSection(op, b, v, v0, SectionOptions{LanczosIterations: 1}); return err },
	} {
		if err := f(); !errors.Is(err, ErrChart) {
			t.Errorf("%s: err = %v, want ErrChart", name, err)
		}
	}
}
