package solvers

import (
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
type pivChol struct {
	n, k int
	dinv []float64      // D⁻¹, n
	l    blas64.General // n×k
	dl   blas64.General // D⁻¹L, n×k
	c    mat.Cholesky   // of I_k + LᵀD⁻¹L
	t, u *mat.Dense     // k×m scratch
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
			return nil, fmt.Errorf("%w: CG.PrecondNoise %v exceeds diagonal entry %d of H (%v): set it to the noise variance σ² of H = K + σ²I", ErrSettings, noise, i, d[i]+noise)
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
	if !pc.c.Factorize(cm) {
		return nil, fmt.Errorf("%w: CG preconditioner: I + LᵀD⁻¹L is not positive definite; %s", ErrNotPositiveDefinite, pdAdvice)
	}
	return pc, nil
}

// apply overwrites z (row-major n×m, contiguous) with P⁻¹z.
func (p *pivChol) apply(z []float64, m int) {
	if p.t == nil || p.t.RawMatrix().Cols < m {
		p.t = mat.NewDense(p.k, m, nil)
		p.u = mat.NewDense(p.k, m, nil)
	}
	zg := blas64.General{Rows: p.n, Cols: m, Stride: m, Data: z[:p.n*m]}
	t := p.t.Slice(0, p.k, 0, m).(*mat.Dense)
	u := p.u.Slice(0, p.k, 0, m).(*mat.Dense)
	// t = (D⁻¹L)ᵀz, u = C⁻¹t, z = D⁻¹z − (D⁻¹L)u.
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, p.dl, zg, 0, t.RawMatrix())
	_ = p.c.SolveTo(u, t)
	for i := 0; i < p.n; i++ {
		row := zg.Data[i*m : (i+1)*m]
		for j := range row {
			row[j] *= p.dinv[i]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, p.dl, u.RawMatrix(), 1, zg)
}
