package gpnb

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// spd is a random n×n symmetric positive definite matrix BᵀB/n + I
// (upper triangle stored, row-major).
func spd(n int, seed uint64) blas64.Symmetric {
	r := rand.New(rand.NewPCG(seed, 7))
	b := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
	for i := range b.Data {
		b.Data[i] = r.NormFloat64()
	}
	a := blas64.Symmetric{N: n, Stride: n, Uplo: blas.Upper, Data: make([]float64, n*n)}
	blas64.Syrk(blas.Trans, 1/float64(n), b, 0, a)
	for i := 0; i < n; i++ {
		a.Data[i*n+i]++
	}
	return a
}

func copySym(a blas64.Symmetric) blas64.Symmetric {
	a.Data = append([]float64(nil), a.Data...)
	return a
}

// TestCholeskyUpper checks the blocked parallel factorisation against
// lapack64.Potrf entry by entry (sizes below, at and across block edges),
// that UᵀU gives the matrix back, and that its bits are the same on one
// core as on several.
func TestCholeskyUpper(t *testing.T) {
	for _, n := range []int{1, 5, cholBlock, cholBlock + 1, 2*cholBlock + 37, 3 * cholBlock} {
		a := spd(n, uint64(n))
		ref, ok := lapack64.Potrf(copySym(a))
		if !ok {
			t.Fatalf("n = %d: reference Potrf failed", n)
		}
		prev := runtime.GOMAXPROCS(1)
		u1, ok1 := choleskyUpper(copySym(a))
		runtime.GOMAXPROCS(max(prev, 3))
		u3, ok3 := choleskyUpper(copySym(a))
		runtime.GOMAXPROCS(prev)
		if !ok1 || !ok3 {
			t.Fatalf("n = %d: choleskyUpper reported not positive definite", n)
		}
		for i := 0; i < n; i++ {
			for j := i; j < n; j++ {
				got, want := u1.Data[i*n+j], ref.Data[i*n+j]
				if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("n = %d: U[%d,%d] = %v, Potrf %v", n, i, j, got, want)
				}
				if math.Float64bits(got) != math.Float64bits(u3.Data[i*n+j]) {
					t.Fatalf("n = %d: U[%d,%d] differs between GOMAXPROCS 1 and %d", n, i, j, max(prev, 3))
				}
			}
		}
		// UᵀU = A on the upper triangle.
		for i := 0; i < n; i += max(1, n/17) {
			for j := i; j < n; j += max(1, n/13) {
				var s float64
				for l := 0; l <= i; l++ {
					s += u1.Data[l*n+i] * u1.Data[l*n+j]
				}
				if want := a.Data[i*n+j]; math.Abs(s-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("n = %d: (UᵀU)[%d,%d] = %v, A %v", n, i, j, s, want)
				}
			}
		}
	}
}

// TestCholeskyUpperNotPD: an indefinite matrix (a negative eigenvalue in
// the last block) and a NaN are reported, not factorised into garbage.
func TestCholeskyUpperNotPD(t *testing.T) {
	n := 2*cholBlock + 10
	a := spd(n, 3)
	a.Data[(n-1)*n+(n-1)] = -5
	if _, ok := choleskyUpper(a); ok {
		t.Error("indefinite matrix: choleskyUpper reported positive definite")
	}
	b := spd(n, 4)
	b.Data[3*n+cholBlock+9] = math.NaN()
	if _, ok := choleskyUpper(b); ok {
		t.Error("matrix with a NaN: choleskyUpper reported positive definite")
	}
}

// BenchmarkCholesky compares choleskyUpper with lapack64.Potrf (one core)
// on the same matrix in one run and reports the speed-up.
func BenchmarkCholesky(b *testing.B) {
	n := 2000
	a := spd(n, 1)
	var tRef, tOurs float64
	for i := 0; i < b.N; i++ {
		c := copySym(a)
		t0 := time.Now()
		lapack64.Potrf(c)
		tRef += time.Since(t0).Seconds()
		c = copySym(a)
		t0 = time.Now()
		choleskyUpper(c)
		tOurs += time.Since(t0).Seconds()
	}
	flops := float64(n) * float64(n) * float64(n) / 3 * float64(b.N)
	b.ReportMetric(flops/tOurs/1e9, "GFLOP/s")
	b.ReportMetric(flops/tRef/1e9, "Potrf-GFLOP/s")
	b.ReportMetric(tRef/tOurs, "speedup")
}
