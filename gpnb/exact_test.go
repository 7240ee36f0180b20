package gpnb

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
)

// randProblem returns n random inputs in [-1,1]^d and smooth noisy targets.
func randProblem(n, d int, seed uint64) (*mat.Dense, []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	X := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			v := 2*rng.Float64() - 1
			X.Set(i, j, v)
			s += math.Sin(2 * float64(j+1) * v)
		}
		y[i] = s + 0.1*rng.NormFloat64()
	}
	return X, y
}

func testKernel(f kernel.Family, d int) kernel.Kernel {
	ls := make([]float64, d)
	for i := range ls {
		ls[i] = 0.6 + 0.3*float64(i)
	}
	return kernel.Kernel{Family: f, Hyper: kernel.Hyper{Lengthscales: ls, Signal: 1.3, Noise: 0.4}}
}

// explicitH builds H = K + σ²I entry by entry.
func explicitH(X *mat.Dense, k kernel.Kernel) *mat.SymDense { return gptest.SymH(X, k, k.Hyper.Noise) }

// TestExactMLLIndependent checks eq. 3 against an eigendecomposition for the
// log-determinant and an LU solve for the quadratic form.
func TestExactMLLIndependent(t *testing.T) {
	for _, f := range []kernel.Family{kernel.Matern12, kernel.Matern32, kernel.Matern52, kernel.RBF} {
		X, y := randProblem(40, 3, 1)
		k := testKernel(f, 3)
		e, err := NewExact(X, y, k)
		if err != nil {
			t.Fatal(err)
		}
		h := explicitH(X, k)
		var eig mat.EigenSym
		if !eig.Factorize(h, false) {
			t.Fatal("eigen failed")
		}
		logdet := 0.0
		for _, l := range eig.Values(nil) {
			logdet += math.Log(l)
		}
		var a mat.VecDense
		if err := a.SolveVec(mat.DenseCopyOf(h), mat.NewVecDense(len(y), y)); err != nil {
			t.Fatal(err)
		}
		want := -0.5*mat.Dot(&a, mat.NewVecDense(len(y), y)) - 0.5*logdet - 0.5*float64(len(y))*math.Log(2*math.Pi)
		if got := e.MLL(); math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%v: MLL = %.12g, want %.12g", f, got, want)
		}
	}
}

// TestExactMLL1x1 checks the one-point closed form N(y; 0, s²+σ²).
func TestExactMLL1x1(t *testing.T) {
	X := mat.NewDense(1, 1, []float64{0.3})
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{2}, Signal: 1.5, Noise: 0.5}}
	e, err := NewExact(X, []float64{0.7}, k)
	if err != nil {
		t.Fatal(err)
	}
	v := 1.5*1.5 + 0.25
	want := -0.5*0.49/v - 0.5*math.Log(v) - 0.5*math.Log(2*math.Pi)
	if got := e.MLL(); math.Abs(got-want) > 1e-14 {
		t.Errorf("MLL = %v, want %v", got, want)
	}
}

// TestExactGradientFD compares every component of the exact gradient with
// central finite differences of MLL, for several kernel families.
func TestExactGradientFD(t *testing.T) {
	const d = 3
	X, y := randProblem(30, d, 2)
	for _, f := range []kernel.Family{kernel.Matern12, kernel.Matern32, kernel.Matern52, kernel.RBF} {
		k := testKernel(f, d)
		e, err := NewExact(X, y, k)
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float64, d+2)
		if err := e.Gradient(g); err != nil {
			t.Fatal(err)
		}
		theta := k.Hyper.Vector()
		for i := range theta {
			const h = 1e-5
			mll := func(delta float64) float64 {
				th := append([]float64(nil), theta...)
				th[i] += delta
				ee, err := NewExact(X, y, kernel.Kernel{Family: f, Hyper: kernel.HyperFromVector(th)})
				if err != nil {
					t.Fatal(err)
				}
				return ee.MLL()
			}
			fd := (mll(h) - mll(-h)) / (2 * h)
			if math.Abs(g[i]-fd) > 1e-5*(1+math.Abs(fd)) {
				t.Errorf("%v: ∂L/∂θ_%d = %.10g, finite difference %.10g", f, i, g[i], fd)
			}
		}
	}
}

// TestExactPredictClosedForm checks a two-point problem against the explicit
// 2×2 inverse.
func TestExactPredictClosedForm(t *testing.T) {
	X := mat.NewDense(2, 1, []float64{0, 1})
	y := []float64{1, -0.5}
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Lengthscales: []float64{0.8}, Signal: 1.2, Noise: 0.3}}
	e, err := NewExact(X, y, k)
	if err != nil {
		t.Fatal(err)
	}
	xs := []float64{0.4, 2.5}
	mean, variance, err := e.Predict(mat.NewDense(2, 1, xs))
	if err != nil {
		t.Fatal(err)
	}
	s2, n2 := 1.44, 0.09
	k01 := s2 * math.Exp(-0.5/(0.64))
	a, b, c := s2+n2, k01, s2+n2 // H = [a b; b c]
	det := a*c - b*b
	inv := [2][2]float64{{c / det, -b / det}, {-b / det, a / det}}
	for j, x := range xs {
		ks := [2]float64{s2 * math.Exp(-0.5*x*x/0.64), s2 * math.Exp(-0.5*(x-1)*(x-1)/0.64)}
		m, q := 0.0, 0.0
		for p := 0; p < 2; p++ {
			for r := 0; r < 2; r++ {
				m += ks[p] * inv[p][r] * y[r]
				q += ks[p] * inv[p][r] * ks[r]
			}
		}
		v := s2 - q + n2
		if math.Abs(mean[j]-m) > 1e-12 || math.Abs(variance[j]-v) > 1e-12 {
			t.Errorf("x*=%v: got (%v, %v), want (%v, %v)", x, mean[j], variance[j], m, v)
		}
	}
	// Metrics against their definitions.
	yt := []float64{0.5, 0.1}
	rmse := math.Sqrt(((yt[0]-mean[0])*(yt[0]-mean[0]) + (yt[1]-mean[1])*(yt[1]-mean[1])) / 2)
	if got := TestRMSE(mean, yt); math.Abs(got-rmse) > 1e-15 {
		t.Errorf("TestRMSE = %v, want %v", got, rmse)
	}
	llh := 0.0
	for j := range yt {
		llh += math.Log(1/math.Sqrt(2*math.Pi*variance[j])*math.Exp(-(yt[j]-mean[j])*(yt[j]-mean[j])/(2*variance[j]))) / 2
	}
	if got := TestLLH(mean, variance, yt); math.Abs(got-llh) > 1e-14 {
		t.Errorf("TestLLH = %v, want %v", got, llh)
	}
}

func TestExactBadInput(t *testing.T) {
	X, y := randProblem(10, 2, 3)
	good := testKernel(kernel.Matern32, 2)
	nanX := mat.DenseCopyOf(X)
	nanX.Set(3, 1, math.NaN())
	bad := good
	bad.Hyper = good.Hyper.Clone()
	bad.Hyper.Noise = -1
	cases := []struct {
		name string
		X    *mat.Dense
		y    []float64
		k    kernel.Kernel
	}{
		{"nil X", nil, y, good},
		{"short y", X, y[:5], good},
		{"NaN X", nanX, y, good},
		{"Inf y", X, append(append([]float64(nil), y[:9]...), math.Inf(1)), good},
		{"negative noise", X, y, bad},
		{"wrong d", X, y, testKernel(kernel.Matern32, 3)},
		{"bad family", X, y, kernel.Kernel{Family: 99, Hyper: good.Hyper}},
	}
	for _, c := range cases {
		if _, err := NewExact(c.X, c.y, c.k); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	e, err := NewExact(X, y, good)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Gradient(make([]float64, 3)); err == nil {
		t.Error("short gradient destination: no error")
	}
	if _, _, err := e.Predict(mat.NewDense(2, 3, nil)); err == nil {
		t.Error("predict with wrong d: no error")
	}
	if _, err = newExact(X, y, good, 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("n > MaxExactN: got %v, want ErrTooLarge", err)
	}
}

func TestExactNotPD(t *testing.T) {
	X, y := randProblem(200, 1, 4)
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Lengthscales: []float64{1e3}, Signal: 1, Noise: 1e-9}}
	_, err := NewExact(X, y, k)
	if !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("got %v, want ErrNotPositiveDefinite", err)
	}
}
