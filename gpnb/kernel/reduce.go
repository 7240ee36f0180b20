package kernel

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/par"
)

// Reduce sets dst[k] = Σ_ab W_ab ∂H_ab/∂θ_k for W = A·Bᵀ, where A and B are
// n×c, for every hyperparameter at once, θ = (ℓ_1..ℓ_d, s, σ) in constrained
// values; len(dst) must be d+2. This is the trace term tr(H⁻¹∂H) ≈ Σ_j
// z_jᵀH⁻¹∂H z_j and the data-fit term (H⁻¹y)ᵀ∂H(H⁻¹y) of the paper's
// gradient (eq. 4–5) for all θ_k in one fused pass over the n² pairs; W is
// never formed beyond one tile.
//
// With G_ab = W_ab·(−m'(r)/r) and z = (x − x̄)/ℓ,
//
//	∂/∂ℓ_k: (s²/ℓ_k) Σ_ab G_ab (z_ak − z_bk)²
//	      = (s²/ℓ_k)[Σ_a z_ak² Σ_b G_ab + Σ_b z_bk² Σ_a G_ab − 2 Σ_a z_ak (G·Z)_ak],
//	∂/∂s:   2s Σ_ab W_ab m(r_ab),
//	∂/∂σ:   2σ tr(W) = 2σ Σ_c aᵀ_c b_c.
//
// The expanded form is used for pairs that are far apart; pairs with
// r² ≤ nearTau·(|z_a|²+|z_b|²), where it would cancel, are summed directly,
// so the relative error stays near machine precision times Σ|G|·r².
//
// Since ∂H_ab = ∂H_ba, only blocks on or above the diagonal are visited,
// with W_IJ + W_JIᵀ off the diagonal: half the kernel evaluations. For
// W = A·Bᵀ that symmetrised tile is one gemm, [A_I B_I]·[B_J A_J]ᵀ.
func (o *Operator) Reduce(dst []float64, a, b *mat.Dense) {
	n := o.n
	ac := o.check().Reduce(dst, a, b)
	defer o.timed(&o.reduceNs)()
	A, B := a.RawMatrix(), b.RawMatrix()
	var tr float64
	for i := 0; i < n; i++ {
		tr += blas64.Implementation().Ddot(ac, A.Data[i*A.Stride:], 1, B.Data[i*B.Stride:], 1)
	}
	if ac == 0 {
		o.reduce(dst, tr, func(s *scratch, i0, i1, j0, j1 int, _ bool) ([]float64, int) {
			s.w = grow(s.w, (i1-i0)*(j1-j0))
			clear(s.w)
			return s.w, j1 - j0
		})
		return
	}
	// L = [A B] (n×2c) and Rᵀ = [B A]ᵀ (2c×n): the symmetrised tile
	// A_I B_Jᵀ + B_I A_Jᵀ is L_I·(Rᵀ)_J, and the plain one A_I·(Bᵀ)_J uses
	// the first c columns of L and rows of Rᵀ. The gemms are 2c long axpys
	// per row rather than short dot products.
	c2 := 2 * ac
	o.lbuf = grow(o.lbuf, n*c2)
	o.vt = grow(o.vt, c2*n)
	L, rt := o.lbuf, o.vt
	for i := 0; i < n; i++ {
		copy(L[i*c2:i*c2+ac], A.Data[i*A.Stride:i*A.Stride+ac])
		copy(L[i*c2+ac:i*c2+c2], B.Data[i*B.Stride:i*B.Stride+ac])
		for j := 0; j < ac; j++ {
			rt[j*n+i] = B.Data[i*B.Stride+j]
			rt[(ac+j)*n+i] = A.Data[i*A.Stride+j]
		}
	}
	o.reduce(dst, tr, func(s *scratch, i0, i1, j0, j1 int, sym bool) ([]float64, int) {
		nr, nc := i1-i0, j1-j0
		inner := ac
		if sym {
			inner = c2
		}
		s.w = grow(s.w, nr*nc)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: nr, Cols: inner, Stride: c2, Data: L[i0*c2:]},
			blas64.General{Rows: inner, Cols: nc, Stride: n, Data: rt[j0:]},
			0, blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: s.w})
		return s.w, nc
	})
}

// ReduceDense is Reduce with an explicit n×n W: dst[k] = Σ_ab W_ab ∂H_ab/∂θ_k.
// The exact (Cholesky) gradient uses it with W = αα − H⁻¹.
func (o *Operator) ReduceDense(dst []float64, w *mat.Dense) {
	n := o.n
	o.check().ReduceDense(dst, w)
	defer o.timed(&o.reduceNs)()
	W := w.RawMatrix()
	var tr float64
	for i := 0; i < n; i++ {
		tr += W.Data[i*W.Stride+i]
	}
	o.reduce(dst, tr, func(s *scratch, i0, i1, j0, j1 int, sym bool) ([]float64, int) {
		if !sym {
			return W.Data[i0*W.Stride+j0:], W.Stride
		}
		nr, nc := i1-i0, j1-j0
		s.w = grow(s.w, nr*nc)
		for a := 0; a < nr; a++ {
			row := W.Data[(i0+a)*W.Stride+j0 : (i0+a)*W.Stride+j1]
			out := s.w[a*nc : (a+1)*nc]
			for b, v := range row {
				out[b] = v + W.Data[(j0+b)*W.Stride+i0+a]
			}
		}
		return s.w, nc
	})
}

// pairRow does the per-pair work of one row a of a reduce tile, by the
// vectorised evaluation when the operator uses it (the same bits either
// way). On entry g holds r²_ab for the row's pairs and w their weights W_ab;
// qc holds |z_b|² and thr = nearTau·|z_a|². It returns Σ_b W_ab m(r_ab) and
// Σ_b G_ab over the far pairs, each summed in four interleaved partial sums
// (b mod 4) combined as (s0+s1)+(s2+s3), the order of four-lane vectors;
// it overwrites g with G_ab = −W_ab m'(r_ab)/r_ab for the far pairs and 0
// for the near ones, adds G_ab into cs, and lists the near pairs whose
// G_ab and r² are nonzero in s.near and s.nearG (nn of them), in order.
func (o *Operator) pairRow(s *scratch, g, w, qc []float64, thr float64, cs []float64) (acc, rs float64, nn int) {
	if o.vec {
		return pairRowVec(o.k.Family, g, w, qc, thr, cs, s.near, s.nearG)
	}
	o.fillMD(g, s.m, s.dm)
	var accL, rsL [4]float64
	for b, r2 := range g {
		wv := w[b]
		accL[b&3] += wv * s.m[b]
		gv := -wv * s.dm[b]
		if r2 <= thr+nearTau*qc[b] {
			if r2 != 0 && gv != 0 {
				s.near[nn], s.nearG[nn] = b, gv
				nn++
			}
			g[b] = 0
			continue
		}
		g[b] = gv
		rsL[b&3] += gv
		cs[b] += gv
	}
	return (accL[0] + accL[1]) + (accL[2] + accL[3]), (rsL[0] + rsL[1]) + (rsL[2] + rsL[3]), nn
}

// reduce does the fused pass over the blocks on and above the diagonal.
// wtile returns W[i0:i1, j0:j1] (sym false: the diagonal block) or
// W[i0:i1, j0:j1] + W[j0:j1, i0:i1]ᵀ (sym true: a block right of it), with
// its leading dimension. Each row tile writes its own (d+1)-vector of
// partial sums, which are added in tile order at the end: deterministic
// whatever the schedule.
func (o *Operator) reduce(dst []float64, trace float64, wtile func(s *scratch, i0, i1, j0, j1 int, sym bool) ([]float64, int)) {
	n, d := o.n, o.d
	nt := par.Tiles(n, rowTile)
	o.partial = grow(o.partial, nt*(d+1))
	o.run(nt, func(s *scratch, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		nr := i1 - i0
		part := o.partial[t*(d+1) : (t+1)*(d+1)]
		clear(part)
		zr, qr := o.z[i0*d:i1*d], o.sq[i0:i1]
		s.rowsum = grow(s.rowsum, nr)
		clear(s.rowsum)
		s.gx = grow(s.gx, nr*d)
		clear(s.gx)
		var accS float64
		// Column chunks: the diagonal block [i0,i1), then [i1,n) by colChunk.
		for j0, j1 := i0, i1; j0 < n; j0, j1 = j1, min(n, j1+colChunk) {
			nc := j1 - j0
			zc, qc := o.z[j0*d:j1*d], o.sq[j0:j1]
			s.t = grow(s.t, nr*nc)
			g := s.t
			sqdist(g, zr, qr, o.ztCols(j0, j1), qc, d, o.vec)
			w, ldw := wtile(s, i0, i1, j0, j1, j0 != i0)
			s.m = grow(s.m, nc)
			s.dm = grow(s.dm, nc)
			s.near = grow(s.near, nc)
			s.nearG = grow(s.nearG, nc)
			s.colsum = grow(s.colsum, nc)
			cs := s.colsum
			clear(cs)
			for a := 0; a < nr; a++ {
				za := zr[a*d : (a+1)*d]
				acc, rs, nn := o.pairRow(s, g[a*nc:(a+1)*nc], w[a*ldw:a*ldw+nc], qc, nearTau*qr[a], cs)
				accS += acc
				s.rowsum[a] += rs
				// Near pairs: sum (z_ak − z_bk)² directly.
				for i, b := range s.near[:nn] {
					gv, zb := s.nearG[i], zc[b*d:(b+1)*d]
					for k, x := range za {
						t := x - zb[k]
						part[k] += gv * t * t
					}
				}
			}
			// gx += G·Z_J, as G·((Zᵀ)_J)ᵀ: d dot products of length nc per row.
			blas64.Gemm(blas.NoTrans, blas.Trans, 1,
				blas64.General{Rows: nr, Cols: nc, Stride: nc, Data: g},
				o.ztCols(j0, j1), 1, blas64.General{Rows: nr, Cols: d, Stride: d, Data: s.gx})
			for b, c := range cs {
				if c == 0 {
					continue
				}
				zb := zc[b*d : (b+1)*d]
				for k, x := range zb {
					part[k] += x * x * c
				}
			}
		}
		for a := 0; a < nr; a++ {
			za := zr[a*d : (a+1)*d]
			gxa := s.gx[a*d : (a+1)*d]
			rs := s.rowsum[a]
			for k, x := range za {
				part[k] += x*x*rs - 2*x*gxa[k]
			}
		}
		part[d] = accS
	})
	hy := o.k.Hyper
	s2 := hy.Signal * hy.Signal
	clear(dst)
	for t := 0; t < nt; t++ {
		part := o.partial[t*(d+1) : (t+1)*(d+1)]
		for k, v := range part {
			dst[k] += v
		}
	}
	for k := 0; k < d; k++ {
		dst[k] *= s2 / hy.Lengthscales[k]
	}
	dst[d] *= 2 * hy.Signal
	dst[d+1] = 2 * hy.Noise * trace
	o.rows.Add(int64(n))
	var evals int64
	for t := 0; t < nt; t++ {
		i0, i1 := par.Span(t, n, rowTile)
		evals += int64(i1-i0) * int64(n-i0)
	}
	o.evals.Add(evals)
}
