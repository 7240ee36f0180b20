package kernel

import (
	"math"
	"strings"
	"testing"
)

var families = []Family{Matern12, Matern32, Matern52, RBF}

func closeTo(got, want, abs, rel float64) bool {
	return math.Abs(got-want) <= abs+rel*math.Abs(want)
}

// TestFamilyClosedForms checks m(r) against the textbook formulas.
func TestFamilyClosedForms(t *testing.T) {
	for _, r := range []float64{0, 1e-9, 0.3, 1, 2.5, 10} {
		want := map[Family]float64{
			Matern12: math.Exp(-r),
			Matern32: (1 + math.Sqrt(3)*r) * math.Exp(-math.Sqrt(3)*r),
			Matern52: (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r),
			RBF:      math.Exp(-r * r / 2),
		}
		for _, f := range families {
			if got := f.Eval(r); !closeTo(got, want[f], 0, 1e-14) {
				t.Errorf("%v.Eval(%g) = %g, want %g", f, r, got, want[f])
			}
		}
	}
	if v := Family(99).Eval(1); !math.IsNaN(v) {
		t.Errorf("invalid family Eval = %g, want NaN", v)
	}
}

// TestEvalDeriv checks m'(r)/r against central differences of Eval, and its
// r→0 limit, the second derivative of m at 0, against a second difference.
func TestEvalDeriv(t *testing.T) {
	for _, f := range families {
		for _, r := range []float64{1e-3, 0.1, 0.7, 1.5, 4} {
			h := 1e-6
			fd := (f.Eval(r+h) - f.Eval(r-h)) / (2 * h)
			_, dm := f.EvalDeriv(r)
			if !closeTo(dm*r, fd, 1e-9, 1e-7) {
				t.Errorf("%v: m'(%g) = %g, central difference %g", f, r, dm*r, fd)
			}
		}
		_, dm0 := f.EvalDeriv(0)
		if f == Matern12 {
			if dm0 != 0 {
				t.Errorf("Matern12: EvalDeriv(0) = %g, want 0 by convention", dm0)
			}
			continue
		}
		h := 1e-4
		m2 := 2 * (f.Eval(h) - 1) / (h * h) // m(h) ≈ 1 + m''(0)h²/2
		if !closeTo(dm0, m2, 0, 1e-3) {
			t.Errorf("%v: m'(r)/r at 0 = %g, second difference %g", f, dm0, m2)
		}
	}
}

// TestGradAtFiniteDifferences checks every length-scale and signal
// derivative of Kernel.At, including r = 0 and tiny r.
func TestGradAtFiniteDifferences(t *testing.T) {
	x := []float64{0.3, -1.2, 2.0}
	cases := []struct {
		name string
		y    []float64
	}{
		{"r=0", []float64{0.3, -1.2, 2.0}},
		{"tiny", []float64{0.3 + 1e-7, -1.2 - 2e-7, 2.0}},
		{"small", []float64{0.35, -1.1, 2.05}},
		{"unit", []float64{1.1, -0.2, 1.5}},
		{"far", []float64{3, 2, -2}},
	}
	for _, f := range families {
		for _, c := range cases {
			k := Kernel{Family: f, Hyper: Hyper{Lengthscales: []float64{0.8, 1.3, 2.1}, Signal: 1.7, Noise: 0.1}}
			g := make([]float64, 4)
			k.GradAt(g, x, c.y)
			theta := k.Hyper.Vector()
			for i := 0; i < 4; i++ {
				h := 1e-6 * theta[i]
				kp, km := k, k
				tp, tm := append([]float64(nil), theta...), append([]float64(nil), theta...)
				tp[i] += h
				tm[i] -= h
				kp.Hyper, km.Hyper = HyperFromVector(tp), HyperFromVector(tm)
				fd := (kp.At(x, c.y) - km.At(x, c.y)) / (2 * h)
				if !closeTo(g[i], fd, 1e-8, 1e-6) {
					t.Errorf("%v %s: ∂k/∂θ_%d = %.10g, central difference %.10g", f, c.name, i, g[i], fd)
				}
			}
			if c.name == "r=0" {
				for i := 0; i < 3; i++ {
					if g[i] != 0 {
						t.Errorf("%v: ∂k/∂ℓ_%d at r=0 = %g, want exactly 0", f, i, g[i])
					}
				}
			}
		}
	}
}

func TestSoftplus(t *testing.T) {
	for _, x := range []float64{-40, -5, -0.5, 0, 0.5, 3, 30} {
		want := math.Log1p(math.Exp(x)) // exact formula; log1p keeps small values accurate
		if got := Softplus(x); !closeTo(got, want, 1e-300, 1e-14) {
			t.Errorf("Softplus(%g) = %g, want %g", x, got, want)
		}
		if got := InvSoftplus(Softplus(x)); x > -30 && !closeTo(got, x, 1e-12, 1e-12) {
			t.Errorf("InvSoftplus(Softplus(%g)) = %g", x, got)
		}
		sig := 1 / (1 + math.Exp(-x))
		if got := SoftplusGrad(x); !closeTo(got, sig, 1e-300, 1e-14) {
			t.Errorf("SoftplusGrad(%g) = %g, want %g", x, got, sig)
		}
		h := 1e-5
		fd := (Softplus(x+h) - Softplus(x-h)) / (2 * h)
		if got := SoftplusGrad(x); !closeTo(got, fd, 1e-10, 1e-7) {
			t.Errorf("SoftplusGrad(%g) = %g, central difference %g", x, got, fd)
		}
	}
	if got := Softplus(1000); got != 1000 {
		t.Errorf("Softplus(1000) = %g, want 1000 (no overflow)", got)
	}
	if got := Softplus(0); !closeTo(got, math.Ln2, 0, 1e-15) {
		t.Errorf("Softplus(0) = %g, want ln 2", got)
	}
	if got := InvSoftplus(1000); got != 1000 {
		t.Errorf("InvSoftplus(1000) = %g", got)
	}
	if got := SoftplusGrad(-800); got < 0 || got > 1e-300 {
		t.Errorf("SoftplusGrad(-800) = %g", got)
	}
}

func TestHyperRoundTrip(t *testing.T) {
	h := Hyper{Lengthscales: []float64{0.5, 2}, Signal: 1.5, Noise: 0.2}
	r := HyperFromRaw(h.Raw())
	for i, v := range r.Vector() {
		if !closeTo(v, h.Vector()[i], 0, 1e-13) {
			t.Errorf("raw round trip θ_%d = %g, want %g", i, v, h.Vector()[i])
		}
	}
	if err := h.Validate(3); err == nil || !strings.Contains(err.Error(), "length scales") {
		t.Errorf("Validate(3) = %v, want a length-scale count error", err)
	}
	for _, bad := range []Hyper{
		{Lengthscales: []float64{math.NaN(), 1}, Signal: 1, Noise: 1},
		{Lengthscales: []float64{1, 1}, Signal: 0, Noise: 1},
		{Lengthscales: []float64{1, 1}, Signal: 1, Noise: math.Inf(1)},
	} {
		if err := bad.Validate(2); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

func TestParseFamilyAndMode(t *testing.T) {
	for _, f := range families {
		if g, err := ParseFamily(f.String()); err != nil || g != f {
			t.Errorf("ParseFamily(%q) = %v, %v", f.String(), g, err)
		}
	}
	if _, err := ParseFamily("cosine"); err == nil {
		t.Error("ParseFamily(cosine) = nil error")
	}
	for _, m := range []Mode{ModeAuto, ModeDense, ModeMatrixFree} {
		if g, err := ParseMode(m.String()); err != nil || g != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), g, err)
		}
	}
	if g, err := ParseMode("Matrix-Free"); err != nil || g != ModeMatrixFree {
		t.Errorf("ParseMode(Matrix-Free) = %v, %v", g, err)
	}
	if _, err := ParseMode("sparse"); err == nil || !strings.Contains(err.Error(), "auto, dense, matrixfree") {
		t.Errorf("ParseMode(sparse) error = %v", err)
	}
}
