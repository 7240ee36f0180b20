package gpnb

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// TestInvertUpper checks invertUpper's H⁻¹ against lapack64.Potri entry by
// entry (sizes below, at and across block edges), and that its bits are
// the same on one core as on several.
func TestInvertUpper(t *testing.T) {
	for _, n := range []int{1, 7, invBlock, invBlock + 1, 3*invBlock + 5} {
		u, ok := choleskyUpper(spd(n, uint64(n)+11))
		if !ok {
			t.Fatalf("n = %d: not positive definite", n)
		}
		ref, ok := lapack64.Potri(blas64.Triangular{N: n, Stride: n, Uplo: blas.Upper, Diag: blas.NonUnit, Data: append([]float64(nil), u.Data...)})
		if !ok {
			t.Fatalf("n = %d: reference Potri failed", n)
		}
		prev := runtime.GOMAXPROCS(1)
		a1 := append([]float64(nil), u.Data...)
		invertUpper(a1, make([]float64, n*n), n)
		runtime.GOMAXPROCS(max(prev, 3))
		a3 := append([]float64(nil), u.Data...)
		invertUpper(a3, make([]float64, n*n), n)
		runtime.GOMAXPROCS(prev)
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				got, want := a1[i*n+j], ref.Data[i*n+j]
				// H = BᵀB/n + I has eigenvalues in [1, ~5]: H⁻¹'s entries
				// are O(1) and both computations are backward stable.
				if math.Abs(got-want) > 1e-12 {
					t.Fatalf("n = %d: H⁻¹[%d,%d] = %v, Potri %v", n, i, j, got, want)
				}
				if math.Float64bits(got) != math.Float64bits(a3[i*n+j]) {
					t.Fatalf("n = %d: H⁻¹[%d,%d] differs between GOMAXPROCS 1 and %d", n, i, j, max(prev, 3))
				}
			}
		}
	}
}

// TestExactEvaluator checks the exact path's evaluator against Exact (the
// plain reference: mat.Cholesky, an explicit inverse and a pairwise
// gradient loop) for every kernel family, at θ of several scales, on 300
// points (the blocks of choleskyUpper and invertUpper split it), and that
// an H that is not positive definite is ErrNotPositiveDefinite.
func TestExactEvaluator(t *testing.T) {
	ds := synth(t, 300, 4, 3)
	for _, fam := range []kernel.Family{kernel.Matern12, kernel.Matern32, kernel.Matern52, kernel.RBF} {
		for _, h := range []kernel.Hyper{
			{Noise: 0.3, Signal: 1.2, Lengthscales: []float64{0.5, 1, 2, 4}},
			{Noise: 0.01, Signal: 3, Lengthscales: []float64{3, 0.7, 50, 1}},
		} {
			k := kernel.Kernel{Family: fam, Hyper: h}
			ref, err := NewExact(ds.XTrain, ds.YTrain, k)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, h.Len())
			if err := ref.Gradient(want); err != nil {
				t.Fatal(err)
			}
			ev, err := newExactEvaluator(ds.XTrain, ds.YTrain, k, kernel.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, h.Len())
			mll, err := ev.eval(k, got)
			if err != nil {
				t.Fatal(err)
			}
			// Both are float64 computations of the same sums in different
			// orders (blocked against unblocked factorisations, the
			// expanded distance against the direct one): agreement to
			// round-off scaled by the size of the terms.
			if d := math.Abs(mll - ref.MLL()); d > 1e-9*math.Abs(ref.MLL()) {
				t.Errorf("%v %v: L = %v, Exact %v", fam, h.Vector(), mll, ref.MLL())
			}
			scale := 0.0
			for _, v := range want {
				scale = math.Max(scale, math.Abs(v))
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-8*scale {
					t.Errorf("%v %v: ∂L/∂θ_%d = %v, Exact %v", fam, h.Vector(), i, got[i], want[i])
				}
			}
		}
	}
	// Every row repeated and σ = 0: H = K is singular.
	dup := synth(t, 40, 2, 5)
	for i := 20; i < 40; i++ {
		for j := 0; j < 2; j++ {
			dup.XTrain.Set(i, j, dup.XTrain.At(i-20, j))
		}
	}
	k := kernel.Kernel{Family: kernel.RBF, Hyper: kernel.Hyper{Noise: 1e-300, Signal: 1, Lengthscales: []float64{1, 1}}}
	ev, err := newExactEvaluator(dup.XTrain, dup.YTrain, k, kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.eval(k, make([]float64, 4)); !errors.Is(err, ErrNotPositiveDefinite) {
		t.Errorf("singular H: err = %v, want ErrNotPositiveDefinite", err)
	}
	// No gradient without a value to take it at: after a failed one, or
	// a second time.
	if err := ev.gradient(make([]float64, 4)); err == nil {
		t.Error("a gradient after a failed value: no error")
	}
	k.Hyper.Noise = 0.1
	if _, err := ev.value(k); err != nil {
		t.Fatal(err)
	}
	if err := ev.gradient(make([]float64, 4)); err != nil {
		t.Fatal(err)
	}
	if err := ev.gradient(make([]float64, 4)); err == nil {
		t.Error("a second gradient of one value: no error")
	}
}

// eval returns L at the kernel k and, when grad is not nil, writes ∇L with
// respect to θ = (ℓ_1..ℓ_d, s, σ) into grad (length d+2): value, then
// gradient, as the exact path does for a trial that needs both.
func (e *exactEvaluator) eval(k kernel.Kernel, grad []float64) (float64, error) {
	mll, err := e.value(k)
	if err != nil || grad == nil {
		return mll, err
	}
	return mll, e.gradient(grad)
}

// BenchmarkExactEvaluation times one evaluation of L and its gradient at
// n = 2000, d = 20 by the exact path's evaluator and by Exact (NewExact
// and Gradient), one after the other in each iteration, and reports the
// ratio of their times (x_faster) and the evaluator's ms per evaluation.
//
//	go test -tags openblas -run '^$' -bench ExactEvaluation -benchtime 5x ./gpnb/
func BenchmarkExactEvaluation(b *testing.B) {
	ds := synth(b, 2000, 20, 9)
	h := kernel.DefaultHyper(20)
	h.Noise = 0.3
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: h}
	ev, err := newExactEvaluator(ds.XTrain, ds.YTrain, k, kernel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g := make([]float64, h.Len())
	var ref, fast time.Duration
	for b.Loop() {
		t0 := time.Now()
		e, err := NewExact(ds.XTrain, ds.YTrain, k)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Gradient(g); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := ev.eval(k, g); err != nil {
			b.Fatal(err)
		}
		ref, fast = ref+t1.Sub(t0), fast+time.Since(t1)
	}
	b.ReportMetric(float64(ref)/float64(fast), "x_faster")
	b.ReportMetric(float64(fast.Milliseconds())/float64(b.N), "ms/eval")
}
