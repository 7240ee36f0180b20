package solvers

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// ErrLanczos is wrapped by every error Lanczos returns for bad arguments or
// a bad operator.
var ErrLanczos = errors.New("lanczos")

// Lanczos returns approximations to the k largest eigenvalues of the
// symmetric operator op, in decreasing order, and their unit eigenvectors as
// the columns of an n×k matrix. It runs at most iterations Lanczos steps
// (capped at n) from a start vector drawn from a standard normal generator
// seeded with seed, with full reorthogonalisation of every new Lanczos
// vector against all previous ones (two passes of classical Gram–Schmidt),
// so the Ritz pairs stay accurate however many steps are taken. When the
// Krylov space becomes invariant before that (β ≈ 0), iteration stops early:
// the Ritz pairs are then exact up to rounding.
//
// Cost: one op.MulTo with a single column per step plus O(n·m²) for the
// reorthogonalisation and an m×m symmetric eigendecomposition, where m is
// the number of steps taken; memory is n·m. It never forms H densely. For
// the two extreme eigenpairs of a kernel matrix, iterations of 30–60 are
// typically plenty. The same seed gives the same bits.
func Lanczos(op Operator, k, iterations int, seed uint64) (values []float64, vectors *mat.Dense, err error) {
	if op == nil {
		return nil, nil, fmt.Errorf("solvers: %w: nil operator", ErrLanczos)
	}
	n := op.Size()
	switch {
	case n <= 0:
		return nil, nil, fmt.Errorf("solvers: %w: operator has size %d: it must be at least 1", ErrLanczos, n)
	case k < 1 || k > n:
		return nil, nil, fmt.Errorf("solvers: %w: asked for k=%d eigenpairs of a %d×%d operator: choose 1 ≤ k ≤ n", ErrLanczos, k, n, n)
	case iterations < k:
		return nil, nil, fmt.Errorf("solvers: %w: %d iterations cannot give %d eigenpairs: use iterations ≥ k (30 or more for accurate pairs)", ErrLanczos, iterations, k)
	}
	m := min(iterations, n)

	// Q holds the Lanczos vectors as rows (row j is q_j) so each one is a
	// contiguous slice.
	q := mat.NewDense(m, n, nil)
	alpha := make([]float64, 0, m)
	beta := make([]float64, 0, m) // beta[j] couples q_j and q_{j+1}

	rng := rand.New(rand.NewPCG(seed, 0x6c616e637a6f73)) // "lanczos"
	q0 := q.RawRowView(0)
	for i := range q0 {
		q0[i] = rng.NormFloat64()
	}
	floats.Scale(1/floats.Norm(q0, 2), q0)

	in := mat.NewDense(n, 1, nil)
	out := mat.NewDense(n, 1, nil)
	w := out.RawMatrix().Data
	coef := make([]float64, m)
	scale := 0.0 // largest |α| or β seen, for the breakdown test
	steps := 0
	for j := 0; j < m; j++ {
		qj := q.RawRowView(j)
		copy(in.RawMatrix().Data, qj)
		op.MulTo(out, in)
		a := floats.Dot(qj, w)
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return nil, nil, fmt.Errorf("solvers: %w: operator produced a non-finite value at step %d: check the operator's inputs (hyperparameters, data) for NaN/Inf", ErrLanczos, j+1)
		}
		alpha = append(alpha, a)
		scale = math.Max(scale, math.Abs(a))
		steps = j + 1
		if j == m-1 {
			break
		}
		// Full reorthogonalisation, twice ("twice is enough"): removes the
		// components along q_0..q_j, which includes the three-term
		// recurrence's α_j q_j and β_{j-1} q_{j-1}.
		for pass := 0; pass < 2; pass++ {
			qs := q.Slice(0, j+1, 0, n).(*mat.Dense)
			c := mat.NewVecDense(j+1, coef[:j+1])
			c.MulVec(qs, mat.NewVecDense(n, w))
			wv := mat.NewVecDense(n, w)
			var proj mat.VecDense
			proj.MulVec(qs.T(), c)
			wv.SubVec(wv, &proj)
		}
		b := floats.Norm(w, 2)
		scale = math.Max(scale, b)
		if b <= 1e-12*scale || b == 0 {
			break // invariant subspace: the Ritz values are exact
		}
		beta = append(beta, b)
		floats.ScaleTo(q.RawRowView(j+1), 1/b, w)
	}
	if steps < k {
		return nil, nil, fmt.Errorf("solvers: %w: the start vector's Krylov space has dimension %d < k=%d (the operator has fewer distinct eigenvalues than asked for): ask for fewer pairs or try another seed", ErrLanczos, steps, k)
	}

	// Eigendecomposition of the tridiagonal T = tridiag(β, α, β).
	t := mat.NewSymDense(steps, nil)
	for i := 0; i < steps; i++ {
		t.SetSym(i, i, alpha[i])
		if i+1 < steps {
			t.SetSym(i, i+1, beta[i])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(t, true) {
		return nil, nil, fmt.Errorf("solvers: %w: eigendecomposition of the %d×%d tridiagonal matrix did not converge", ErrLanczos, steps, steps)
	}
	tv := eig.Values(nil)
	var y mat.Dense
	eig.VectorsTo(&y)
	order := make([]int, steps)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tv[order[a]] > tv[order[b]] })

	values = make([]float64, k)
	yk := mat.NewDense(steps, k, nil)
	for c := 0; c < k; c++ {
		values[c] = tv[order[c]]
		for r := 0; r < steps; r++ {
			yk.Set(r, c, y.At(r, order[c]))
		}
	}
	// Ritz vectors: X = Qᵀ·Y (n×k).
	vectors = mat.NewDense(n, k, nil)
	vectors.Mul(q.Slice(0, steps, 0, n).T(), yk)
	// Fix each vector's sign so the largest-magnitude entry is positive:
	// eigenvectors are only defined up to sign, and a fixed convention makes
	// plots reproducible.
	for c := 0; c < k; c++ {
		col := mat.Col(nil, c, vectors)
		nrm := floats.Norm(col, 2)
		s := 1 / nrm
		if col[floats.MaxIdx(absAll(col))] < 0 {
			s = -s
		}
		for r := range col {
			vectors.Set(r, c, col[r]*s)
		}
	}
	return values, vectors, nil
}

func absAll(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}
