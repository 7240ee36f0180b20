package solvers

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// pivChol is the preconditioner P = LLᵀ + D, where LLᵀ is the rank-k
// pivoted Cholesky approximation (Harbrecht et al. 2012; Gardner et al.
// 2018) of K = H − σ²I and D is σ²I, or, with the diagonal correction,
// σ²I + diag(K − LLᵀ) (the FITC approximation, which matches H's diagonal
// exactly). P⁻¹ is applied with the Woodbury identity:
//
//	P⁻¹r = D⁻¹r − D⁻¹L (I_k + LᵀD⁻¹L)⁻¹ LᵀD⁻¹r.
//
// It is built on the host from k columns of H; upload moves it into the
// solver's space, where it is applied.
type pivChol struct {
	n, k int
	dinv []float64      // D⁻¹, n
	l    blas64.General // n×k
	dl   blas64.General // D⁻¹L, n×k
	cm   *mat.SymDense  // I_k + LᵀD⁻¹L
}

// newPivChol builds the preconditioner from the diagonal and k columns of
// H. It stops early when the remaining diagonal of K is negligible.
func newPivChol(op Operator, rank int, noise float64, diagCorrection bool, w *Work) (*pivChol, error) {
	n := op.Size()
	if rank > n {
		rank = n
	}
	d := make([]float64, n)
	op.DiagTo(d)
	maxd := 0.0
	for i := range d {
		d[i] -= noise
		if math.IsNaN(d[i]) || math.IsInf(d[i], 0) {
			return nil, fmt.Errorf("%w: CG preconditioner: diagonal entry %d of H is not finite; check the hyperparameters", ErrNotFinite, i)
		}
		if d[i] < -1e-12*math.Abs(noise) {
			return nil, fieldError("CG.PrecondNoise", "CG.PrecondNoise %v exceeds diagonal entry %d of H (%v): set it to the noise variance σ² of H = K + σ²I", noise, i, d[i]+noise)
		}
		d[i] = math.Max(d[i], 0)
		maxd = math.Max(maxd, d[i])
	}
	lfull := make([]float64, n*rank)
	chosen := make([]bool, n)
	col := mat.NewDense(n, 1, nil)
	one := mat.NewDense(1, 1, []float64{1})
	k := 0
	for ; k < rank; k++ {
		p := -1
		best := 0.0
		for i, v := range d {
			if !chosen[i] && v > best {
				p, best = i, v
			}
		}
		if p < 0 || best <= 1e-12*maxd {
			break
		}
		chosen[p] = true
		op.ColsMulTo(col, []int{p}, one)
		w.RowEvaluations++
		cd := col.RawMatrix().Data
		if !allFinite(cd) {
			return nil, fmt.Errorf("%w: CG preconditioner: column %d of H is not finite; check the hyperparameters", ErrNotFinite, p)
		}
		cd[p] -= noise
		lpp := math.Sqrt(best)
		for i := 0; i < n; i++ {
			if chosen[i] && i != p {
				continue // L[i,k] = 0 for earlier pivots
			}
			s := cd[i]
			for j := 0; j < k; j++ {
				s -= lfull[i*rank+j] * lfull[p*rank+j]
			}
			lfull[i*rank+k] = s / lpp
		}
		for i := 0; i < n; i++ {
			if !chosen[i] {
				v := lfull[i*rank+k]
				d[i] = math.Max(d[i]-v*v, 0)
			}
		}
		d[p] = 0
	}
	if k == 0 {
		return nil, nil // K is (numerically) zero: no preconditioner needed
	}
	pc := &pivChol{n: n, k: k, dinv: make([]float64, n)}
	l := make([]float64, n*k)
	dl := make([]float64, n*k)
	for i := 0; i < n; i++ {
		di := noise
		if diagCorrection {
			di += d[i]
		}
		pc.dinv[i] = 1 / di
		for j := 0; j < k; j++ {
			l[i*k+j] = lfull[i*rank+j]
			dl[i*k+j] = lfull[i*rank+j] / di
		}
	}
	pc.l = blas64.General{Rows: n, Cols: k, Stride: k, Data: l}
	pc.dl = blas64.General{Rows: n, Cols: k, Stride: k, Data: dl}
	cm := mat.NewSymDense(k, nil)
	// C = I + Lᵀ(D⁻¹L), symmetric; Gemm fills both triangles.
	cg := blas64.General{Rows: k, Cols: k, Stride: k, Data: cm.RawSymmetric().Data}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, pc.l, pc.dl, 0, cg)
	for i := 0; i < k; i++ {
		cm.SetSym(i, i, cm.At(i, i)+1)
	}
	pc.cm = cm
	return pc, nil
}

// precond is a pivChol in a space, for up to m columns.
type precond struct {
	dl   Block // D⁻¹L, n×k
	dinv Block // D⁻¹, n×1
	c    Block // Cholesky factor of I_k + LᵀD⁻¹L, k×k
	t    Block // k×m scratch
}

// upload moves p into sp and factorises I + LᵀD⁻¹L there.
func (p *pivChol) upload(sp Space, m int) (*precond, error) {
	var pc precond
	var err error
	if pc.dl, err = blockOf(sp, p.dl.Data, p.n, p.k); err != nil {
		return nil, err
	}
	if pc.dinv, err = blockOf(sp, p.dinv, p.n, 1); err != nil {
		return nil, err
	}
	if pc.c, err = blockOf(sp, p.cm.RawSymmetric().Data, p.k, p.k); err != nil {
		return nil, err
	}
	if pc.t, err = sp.NewBlock(p.k, m); err != nil {
		return nil, err
	}
	if err := sp.Factorize(pc.c); err != nil {
		if errors.Is(err, ErrNotPositiveDefinite) || errors.Is(err, ErrNotFinite) {
			return nil, fmt.Errorf("%w: CG preconditioner: I + LᵀD⁻¹L is not positive definite; %s", ErrNotPositiveDefinite, pdAdvice)
		}
		return nil, fmt.Errorf("solvers: CG preconditioner: the operator's space failed: %w", err)
	}
	return &pc, nil
}

// apply overwrites z[:,cols] with P⁻¹z[:,cols]:
// t = (D⁻¹L)ᵀz, t ← C⁻¹t, z ← D⁻¹z − (D⁻¹L)t.
func (p *precond) apply(sp Space, z Block, cols []int) {
	sp.MulT(p.t, p.dl, z, cols)
	sp.Solve(p.t, p.c, p.t, cols)
	sp.ScaleRows(z, p.dinv, cols)
	sp.MulAdd(z, -1, p.dl, p.t, cols)
}
