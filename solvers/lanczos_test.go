package solvers

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// lanczosDenseOp is a minimal dense Operator for the Lanczos tests.
type lanczosDenseOp struct{ h *mat.SymDense }

func (o lanczosDenseOp) Size() int               { return o.h.SymmetricDim() }
func (o lanczosDenseOp) MulTo(dst, v *mat.Dense) { dst.Mul(o.h, v) }
func (o lanczosDenseOp) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	for r, i := range idx {
		for c := 0; c < v.RawMatrix().Cols; c++ {
			s := 0.0
			for j := 0; j < o.Size(); j++ {
				s += o.h.At(i, j) * v.At(j, c)
			}
			dst.Set(r, c, s)
		}
	}
}
func (o lanczosDenseOp) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	dst.Zero()
	for r := 0; r < o.Size(); r++ {
		for c := 0; c < d.RawMatrix().Cols; c++ {
			s := 0.0
			for k, j := range idx {
				s += o.h.At(r, j) * d.At(k, c)
			}
			dst.Set(r, c, s)
		}
	}
}
func (o lanczosDenseOp) BlockTo(dst *mat.SymDense, idx []int) {
	for a, i := range idx {
		for b := a; b < len(idx); b++ {
			dst.SetSym(a, b, o.h.At(i, idx[b]))
		}
	}
}
func (o lanczosDenseOp) DiagTo(dst []float64) {
	for i := range dst {
		dst[i] = o.h.At(i, i)
	}
}

// kernelMatrix builds H = K(X,X) + σ²I for n random points in d dimensions
// with kernel.Kernel.At.
func kernelMatrix(n, d int, seed uint64) *mat.SymDense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, d)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64()
		}
	}
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.8, 1.3, 2}, Signal: 1.2, Noise: 0.3}}
	h := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := k.At(x[i], x[j])
			if i == j {
				v += k.Hyper.Noise * k.Hyper.Noise
			}
			h.SetSym(i, j, v)
		}
	}
	return h
}

func denseTopEigen(t *testing.T, h *mat.SymDense) ([]float64, *mat.Dense) {
	t.Helper()
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		t.Fatal("dense EigenSym failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] > vals[idx[b]] })
	sorted := make([]float64, len(vals))
	out := mat.NewDense(len(vals), len(vals), nil)
	for c, i := range idx {
		sorted[c] = vals[i]
		out.SetCol(c, mat.Col(nil, i, &vecs))
	}
	return sorted, out
}

func TestLanczosTopEigenpairsMatchDense(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, k, iter int
		valTol     float64
		vecTol     float64
	}{
		{"top2-n80-40it", 80, 2, 40, 1e-10, 1e-6},
		{"top2-full", 50, 2, 50, 1e-10, 1e-8},
		{"top4-n120-60it", 120, 4, 60, 1e-9, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := kernelMatrix(tc.n, 3, 7)
			want, wantVecs := denseTopEigen(t, h)
			got, vecs, err := Lanczos(lanczosDenseOp{h}, tc.k, tc.iter, 42)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.k {
				t.Fatalf("got %d values, want %d", len(got), tc.k)
			}
			if r, c := vecs.Dims(); r != tc.n || c != tc.k {
				t.Fatalf("vectors are %d×%d, want %d×%d", r, c, tc.n, tc.k)
			}
			for i := 0; i < tc.k; i++ {
				if math.Abs(got[i]-want[i]) > tc.valTol*want[0] {
					t.Errorf("λ%d = %.15g, dense %.15g", i+1, got[i], want[i])
				}
				g := mat.Col(nil, i, vecs)
				w := mat.Col(nil, i, wantVecs)
				if d := math.Abs(floats.Dot(g, w)); math.Abs(d-1) > tc.vecTol {
					t.Errorf("eigenvector %d: |⟨lanczos, dense⟩| = %.12g, want 1", i+1, d)
				}
				if nrm := floats.Norm(g, 2); math.Abs(nrm-1) > 1e-12 {
					t.Errorf("eigenvector %d has norm %v", i+1, nrm)
				}
				// Residual ‖Hx − λx‖ relative to λ.
				var hx mat.VecDense
				hx.MulVec(h, mat.NewVecDense(tc.n, g))
				floats.AddScaled(hx.RawVector().Data, -got[i], g)
				if r := floats.Norm(hx.RawVector().Data, 2) / got[i]; r > 10*math.Sqrt(tc.vecTol) {
					t.Errorf("eigenpair %d residual %g", i+1, r)
				}
			}
			if got[0] < got[1] {
				t.Errorf("values not in decreasing order: %v", got)
			}
		})
	}
}

func TestLanczosDeterministic(t *testing.T) {
	h := kernelMatrix(40, 3, 3)
	v1, x1, err := Lanczos(lanczosDenseOp{h}, 2, 20, 9)
	if err != nil {
		t.Fatal(err)
	}
	v2, x2, err := Lanczos(lanczosDenseOp{h}, 2, 20, 9)
	if err != nil {
		t.Fatal(err)
	}
	if !floats.Same(v1, v2) || !mat.Equal(x1, x2) {
		t.Fatal("same seed gave different results")
	}
}

func TestLanczosInvariantSubspaceStopsEarly(t *testing.T) {
	// diag(5, 3, 3, 3, 1): three distinct eigenvalues, so the Krylov space
	// has dimension 3 and Lanczos must stop there with exact values.
	h := mat.NewSymDense(5, nil)
	for i, v := range []float64{5, 3, 3, 3, 1} {
		h.SetSym(i, i, v)
	}
	vals, vecs, err := Lanczos(lanczosDenseOp{h}, 2, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(vals[0]-5) > 1e-12 || math.Abs(vals[1]-3) > 1e-12 {
		t.Errorf("values %v, want [5 3]", vals)
	}
	if math.Abs(math.Abs(vecs.At(0, 0))-1) > 1e-12 {
		t.Errorf("first eigenvector %v, want ±e1", mat.Col(nil, 0, vecs))
	}
	// Asking for more pairs than the Krylov space holds is an error.
	id := mat.NewSymDense(4, []float64{2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2})
	if _, _, err := Lanczos(lanczosDenseOp{id}, 2, 4, 1); !errors.Is(err, ErrLanczos) {
		t.Errorf("identity operator, k=2: err = %v, want ErrLanczos", err)
	}
}

type nanOp struct{ lanczosDenseOp }

func (o nanOp) MulTo(dst, v *mat.Dense) { o.lanczosDenseOp.MulTo(dst, v); dst.Set(0, 0, math.NaN()) }

func TestLanczosBadInput(t *testing.T) {
	h := kernelMatrix(10, 3, 1)
	for _, tc := range []struct {
		name    string
		op      Operator
		k, iter int
	}{
		{"nil operator", nil, 2, 5},
		{"k zero", lanczosDenseOp{h}, 0, 5},
		{"k above n", lanczosDenseOp{h}, 11, 20},
		{"iterations below k", lanczosDenseOp{h}, 3, 2},
		{"NaN operator", nanOp{lanczosDenseOp{h}}, 2, 5},
		{"empty operator", lanczosDenseOp{mat.NewSymDense(1, nil)}, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Lanczos(tc.op, tc.k, tc.iter, 1)
			if !errors.Is(err, ErrLanczos) {
				t.Fatalf("err = %v, want ErrLanczos", err)
			}
		})
	}
}

// The two largest eigenpairs of diag(1, 2, 3, 10).
func ExampleLanczos() {
	h := mat.NewSymDense(4, nil)
	for i, v := range []float64{1, 2, 3, 10} {
		h.SetSym(i, i, v)
	}
	op, err := NewDenseOperator(h)
	if err != nil {
		fmt.Println(err)
		return
	}
	vals, vecs, err := Lanczos(op, 2, 4, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("λ = %.6f, %.6f\n", vals[0], vals[1])
	round := func(x []float64) []float64 {
		for i := range x {
			x[i] = math.Round(x[i]*1000)/1000 + 0 // + 0 turns −0 into 0
		}
		return x
	}
	fmt.Printf("e1 = %.3f\n", round(mat.Col(nil, 0, vecs)))
	fmt.Printf("e2 = %.3f\n", round(mat.Col(nil, 1, vecs)))
	// Output:
	// λ = 10.000000, 3.000000
	// e1 = [0.000 0.000 0.000 1.000]
	// e2 = [0.000 0.000 1.000 0.000]
}
