package solvers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
)

// kernelSystem is a test problem H V = B with H = K + σ²I built entry by
// entry from kernel.Kernel.At, and its exact solution from gonum's Cholesky.
type kernelSystem struct {
	h     *mat.SymDense
	op    *DenseOperator
	b     *mat.Dense
	vstar *mat.Dense
	lmin  float64 // smallest eigenvalue of H
}

// synthX returns n points in [−1.5,1.5]^d from a PCG generator.
func synthX(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 3*rng.Float64()-1.5)
		}
	}
	return x
}

// gramH returns K(X,X) + σ²I for k.
func gramH(x *mat.Dense, k kernel.Kernel) *mat.SymDense { return gptest.SymH(x, k, k.Hyper.Noise) }

// rhs returns B = [y, z_1..z_{m−1}] with y a smooth function of x plus
// noise and z Gaussian probes.
func rhs(x *mat.Dense, m int, seed uint64) *mat.Dense {
	n, d := x.Dims()
	rng := rand.New(rand.NewPCG(seed, 11))
	b := mat.NewDense(n, m, nil)
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += math.Sin(2 * x.At(i, j))
		}
		b.Set(i, 0, s+0.1*rng.NormFloat64())
		for j := 1; j < m; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	return b
}

func hyper(d int, ell, signal, noise float64) kernel.Kernel {
	hp := kernel.DefaultHyper(d)
	for i := range hp.Lengthscales {
		hp.Lengthscales[i] = ell
	}
	hp.Signal, hp.Noise = signal, noise
	return kernel.Kernel{Family: kernel.Matern32, Hyper: hp}
}

func newKernelSystem(t testing.TB, x *mat.Dense, k kernel.Kernel, b *mat.Dense) *kernelSystem {
	t.Helper()
	h := gramH(x, k)
	return newSystem(t, h, b)
}

func newSystem(t testing.TB, h *mat.SymDense, b *mat.Dense) *kernelSystem {
	t.Helper()
	op, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		t.Fatal("test system is not positive definite")
	}
	var vs mat.Dense
	if err := ch.SolveTo(&vs, b); err != nil {
		t.Fatal(err)
	}
	var es mat.EigenSym
	if !es.Factorize(h, false) {
		t.Fatal("eigendecomposition failed")
	}
	return &kernelSystem{h: h, op: op, b: b, vstar: &vs, lmin: es.Values(nil)[0]}
}

// trueRel returns ‖H v_j − b_j‖/‖b_j‖ per column, with gonum's Mul.
func trueRel(h *mat.SymDense, v, b *mat.Dense) []float64 {
	var r mat.Dense
	r.Mul(h, v)
	r.Sub(&r, b)
	_, m := b.Dims()
	out := make([]float64, m)
	for j := range out {
		out[j] = mat.Norm(r.ColView(j), 2) / mat.Norm(b.ColView(j), 2)
	}
	return out
}

// energyErr returns ‖v_j − v*_j‖_H per column.
func energyErr(h *mat.SymDense, v, vstar *mat.Dense) []float64 {
	var e, he mat.Dense
	e.Sub(v, vstar)
	he.Mul(h, &e)
	_, m := v.Dims()
	out := make([]float64, m)
	for j := range out {
		out[j] = math.Sqrt(mat.Dot(e.ColView(j), he.ColView(j)))
	}
	return out
}

// methodsUnderTest are the iterative methods with test-sized settings.
func methodsUnderTest() []Method {
	return []Method{CG{}, AP{BlockSize: 64}, SGD{BatchSize: 64, Seed: 3}}
}
