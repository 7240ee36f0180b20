package solvers

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/par"
)

// ColumnOperator is an Operator that gives single columns of H without a
// product, as a dense kernel cache does by reading one of its rows. CG's
// preconditioner reads one column at each of its k steps; from an operator
// without ColumnTo it asks for them with ColsMulTo.
type ColumnOperator interface {
	Operator
	// ColumnTo sets dst[:n] to column j of H.
	ColumnTo(dst []float64, j int)
}

// PrecondRankAuto as CG.PrecondRank lets CG choose the rank of its
// preconditioner at every Start (see CG.PrecondRank).
const PrecondRankAuto = -1

// Automatic rank (CG.PrecondRank = PrecondRankAuto). The pivoted Cholesky
// factorisation stops at the first k where the largest remaining diagonal
// entry of K − L_kL_kᵀ is at most autoRankNoise·σ²: every point is then
// explained by the rank-k part up to a fraction of the noise, and a larger
// rank cannot improve the preconditioned spectrum by more than that fraction
// of σ² (the eigenvalues of P⁻¹H lie in [1, 1 + λ_max(K − LLᵀ)/σ²]). On
// data like pol that bound is far off, and the rank stops at the cap
// instead: AutoRankCap(n) = n/autoRankDiv, between autoRankMin and
// autoRankMax. Up to there each pivot still cuts the iterations by more
// than it adds to an iteration's cost (4km flops for P⁻¹ against 2nm for
// the product with H) and to the build (one column of H and O(nk) flops);
// autoRankMax bounds the build, O(nk²), and the n×k factor's memory at
// large n. DESIGN.md has the measured iterations-versus-rank curves this
// rests on.
const (
	autoRankNoise = 0.1
	autoRankDiv   = 5
	autoRankMin   = 16
	autoRankMax   = 512
)

// AutoRankCap returns the largest rank PrecondRankAuto chooses on n points:
// n/autoRankDiv, at least autoRankMin and at most autoRankMax (and n).
func AutoRankCap(n int) int {
	return min(n, max(autoRankMin, min(autoRankMax, n/autoRankDiv)))
}

// The preconditioner's build and application run over fixed tiles of
// precondTile rows, and C = I + LᵀD⁻¹L over blocks of precondBlock of its
// rows, on every core (package par). Both partitions depend on n and k
// alone, so the bits do not depend on the number of cores; with n ≤
// precondTile and k ≤ precondBlock they are one tile and one block, and the
// BLAS calls are those of a serial build. They are variables only so that
// tests can shrink them to exercise many tiles and blocks.
var (
	precondTile  = 1024
	precondBlock = 128
)

// upperPair returns block t of the upper triangle of an nb×nb grid of
// blocks, row by row: (0,0), (0,1), …, (0,nb−1), (1,1), ….
func upperPair(t, nb int) (a, b int) {
	for a = 0; t >= nb-a; a++ {
		t -= nb - a
	}
	return a, a + t
}

// precondJitter bounds the condition of the preconditioner's small system:
// σ_p² is at least precondJitter·tr(K), so C = I + LᵀD⁻¹L, whose largest
// eigenvalue is at most 1 + tr(K)/σ_p², has a condition number below
// 1 + 1/precondJitter, and the Woodbury form's D⁻¹r − W·C⁻¹Wᵀr, two terms of
// size ‖r‖/σ_p² that cancel where P is large, keeps its error at about
// 10⁻⁷ of them as σ² → 0. Only a σ² below it is raised (a near-noiseless
// target with no floor on σ); the preconditioned spectrum's spread,
// (λ_max(K − LLᵀ) + σ²)/σ², is about the same for either.
const precondJitter = 1e-9

// pivChol is the preconditioner P = LLᵀ + D, where LLᵀ is the rank-k
// pivoted Cholesky approximation (Harbrecht et al. 2012; Gardner et al.
// 2018) of K = H − σ²I and D is σ²I, or, with the diagonal correction,
// σ²I + diag(K − LLᵀ) (the FITC approximation, which matches H's diagonal
// exactly). P⁻¹ is applied with the Woodbury identity, W = D⁻¹L:
//
//	P⁻¹r = D⁻¹r − W (I_k + LᵀD⁻¹L)⁻¹ Wᵀr.
//
// It is built on the host from k columns of H; upload moves it into the
// solver's space, where it is applied.
type pivChol struct {
	n, k int
	dinv []float64 // D⁻¹, n
	w    []float64 // W = D⁻¹L, n×k row-major
	c    []float64 // I_k + LᵀD⁻¹L, k×k (upper triangle)
}

// newPivChol builds the preconditioner from the diagonal and k columns of
// H: rank columns, or with auto the rank chosen by the rule above, up to
// rank. It stops early when the remaining diagonal of K is negligible.
//
// Step k picks the largest remaining diagonal entry p, reads column p of H
// and sets L[:,k] = (K[:,p] − L[:,:k]L[p,:k]ᵀ)/√d_p, one BLAS gemv over
// the columns so far (kept as the rows of Lᵀ, so that each is contiguous).
// C = I + LᵀD⁻¹L is one syrk.
func newPivChol(op Operator, rank int, auto bool, noise float64, diagCorrection bool, w *Work) (*pivChol, error) {
	n := op.Size()
	rank = min(rank, n)
	d := make([]float64, n)
	op.DiagTo(d)
	maxd, trace := 0.0, 0.0
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
		trace += d[i]
	}
	dnoise := math.Max(noise, precondJitter*trace) // σ_p² on P's diagonal
	lt := make([]float64, rank*n)                  // Lᵀ: row j is column j of L
	chosen := make([]bool, n)
	col := make([]float64, n)
	x := make([]float64, rank) // L[p, :k]
	colOp, direct := op.(ColumnOperator)
	var colM, one *mat.Dense
	if !direct {
		colM, one = mat.NewDense(n, 1, col), mat.NewDense(1, 1, []float64{1})
	}
	idx := []int{0}
	nt := par.Tiles(n, precondTile)
	tileBest, tilePivot := make([]float64, nt), make([]int, nt)
	p, best := -1, 0.0
	for i, v := range d {
		if v > best {
			p, best = i, v
		}
	}
	k := 0
	for ; k < rank; k++ {
		if p < 0 || best <= 1e-12*maxd || (auto && best <= autoRankNoise*dnoise) {
			break
		}
		chosen[p] = true
		if direct {
			colOp.ColumnTo(col, p)
		} else {
			idx[0] = p
			op.ColsMulTo(colM, idx, one)
		}
		w.RowEvaluations++
		if !allFinite(col) {
			return nil, fmt.Errorf("%w: CG preconditioner: column %d of H is not finite; check the hyperparameters", ErrNotFinite, p)
		}
		col[p] -= noise
		for j := 0; j < k; j++ {
			x[j] = lt[j*n+p]
		}
		lpp := math.Sqrt(best)
		row := lt[k*n : (k+1)*n]
		// Each tile of rows updates its part of the column, of L[:,k] and
		// of the diagonal, and finds its largest remaining entry; the
		// tiles' maxima are then compared in order, which picks the first
		// of equal entries as one scan would.
		par.ForTiles(nt, 0, func(_, t int) {
			lo, hi := par.Span(t, n, precondTile)
			if k > 0 {
				blas64.Gemv(blas.Trans, -1, blas64.General{Rows: k, Cols: hi - lo, Stride: n, Data: lt[lo:]},
					blas64.Vector{N: k, Inc: 1, Data: x}, 1, blas64.Vector{N: hi - lo, Inc: 1, Data: col[lo:hi]})
			}
			tb, tp := 0.0, -1
			for i := lo; i < hi; i++ {
				if chosen[i] && i != p {
					row[i] = 0 // L[i,k] = 0 for earlier pivots
					continue
				}
				l := col[i] / lpp
				row[i] = l
				if !chosen[i] {
					d[i] = math.Max(d[i]-l*l, 0)
					if d[i] > tb {
						tb, tp = d[i], i
					}
				}
			}
			tileBest[t], tilePivot[t] = tb, tp
		})
		d[p] = 0
		p, best = -1, 0.0
		for t, v := range tileBest {
			if v > best {
				p, best = tilePivot[t], v
			}
		}
	}
	if k == 0 {
		return nil, nil // K is (numerically) zero: no preconditioner needed
	}
	pc := &pivChol{n: n, k: k, dinv: make([]float64, n), w: make([]float64, n*k), c: make([]float64, k*k)}
	// S = LᵀD^(−1/2) in place, C = I + SSᵀ, W = D⁻¹L = (SD^(−1/2))ᵀ.
	half := make([]float64, n)
	for i := range pc.dinv {
		di := dnoise
		if diagCorrection {
			di += d[i]
		}
		pc.dinv[i] = 1 / di
		half[i] = math.Sqrt(pc.dinv[i])
	}
	s := lt[:k*n]
	par.ForTiles(nt, 0, func(_, t int) {
		lo, hi := par.Span(t, n, precondTile)
		for j := 0; j < k; j++ {
			row := s[j*n+lo : j*n+hi]
			for i, h := range half[lo:hi] {
				row[i] *= h
			}
		}
		for i := lo; i < hi; i++ {
			wr := pc.w[i*k : (i+1)*k]
			for j := range wr {
				wr[j] = s[j*n+i] * half[i]
			}
		}
	})
	// C = I + SSᵀ by blocks of precondBlock rows of S: a syrk on the
	// diagonal, a gemm above it.
	nb := par.Tiles(k, precondBlock)
	par.ForTiles(nb*(nb+1)/2, 0, func(_, t int) {
		a, b := upperPair(t, nb)
		a0, a1 := par.Span(a, k, precondBlock)
		b0, b1 := par.Span(b, k, precondBlock)
		sa := blas64.General{Rows: a1 - a0, Cols: n, Stride: n, Data: s[a0*n : a1*n]}
		if a == b {
			blas64.Syrk(blas.NoTrans, 1, sa, 0, blas64.Symmetric{Uplo: blas.Upper, N: a1 - a0, Stride: k, Data: pc.c[a0*k+a0:]})
			return
		}
		sb := blas64.General{Rows: b1 - b0, Cols: n, Stride: n, Data: s[b0*n : b1*n]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, sa, sb, 0, blas64.General{Rows: a1 - a0, Cols: b1 - b0, Stride: k, Data: pc.c[a0*k+b0:]})
	})
	for j := 0; j < k; j++ {
		pc.c[j*k+j]++
	}
	return pc, nil
}

// precond is a pivChol in a space, for up to m columns. On the host space
// it is applied by hostPrecond.apply, without the space's per-operation
// gathers and on every core; elsewhere by the space's operations. On up to
// precondTile rows both make the same BLAS calls on the same data, so they
// give the same bits; beyond, the host sums Wᵀr tile by tile.
type precond struct {
	k    int
	dl   Block // W = D⁻¹L, n×k
	dinv Block // D⁻¹, n×1
	c    Block // Cholesky factor of I_k + LᵀD⁻¹L, k×k
	t    Block // k×m scratch

	host *hostPrecond // the host space's fused application, or nil
}

// hostPrecond holds what hostApply works on: views of the host blocks, and
// scratch for the selected columns allocated at upload.
type hostPrecond struct {
	n, k   int
	w      blas64.General    // W, n×k
	dinv   []float64         // D⁻¹
	c      blas64.Triangular // upper Cholesky factor of I + LᵀD⁻¹L
	t      []float64         // k×m
	part   []float64         // tiles×k×m: each row tile's part of Wᵀr
	rg, zg []float64         // n×m: R and Z gathered by column
}

// upload moves p into sp and factorises I + LᵀD⁻¹L there.
func (p *pivChol) upload(sp Space, m int) (*precond, error) {
	pc := precond{k: p.k}
	var err error
	if pc.dl, err = blockOf(sp, p.w, p.n, p.k); err != nil {
		return nil, err
	}
	if pc.dinv, err = blockOf(sp, p.dinv, p.n, 1); err != nil {
		return nil, err
	}
	if pc.c, err = blockOf(sp, p.c, p.k, p.k); err != nil {
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
	if _, ok := sp.(*hostSpace); ok {
		pc.host = &hostPrecond{n: p.n, k: p.k,
			w:    blas64.General{Rows: p.n, Cols: p.k, Stride: p.k, Data: hb(pc.dl).data},
			dinv: hb(pc.dinv).data,
			c:    blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: p.k, Stride: p.k, Data: hb(pc.c).data},
			t:    make([]float64, p.k*m), rg: make([]float64, p.n*m), zg: make([]float64, p.n*m)}
		if nt := par.Tiles(p.n, precondTile); nt > 1 {
			pc.host.part = make([]float64, nt*p.k*m)
		}
	}
	return &pc, nil
}

// apply sets z[:,cols] = P⁻¹r[:,cols]:
// t = Wᵀr, t ← C⁻¹t, z ← D⁻¹r − W t.
func (p *precond) apply(sp Space, z, r Block, cols []int) {
	if p.host != nil {
		p.host.apply(hb(z), hb(r), cols)
		return
	}
	sp.Copy(z, r, cols)
	sp.MulT(p.t, p.dl, z, cols)
	sp.Solve(p.t, p.c, p.t, cols)
	sp.ScaleRows(z, p.dinv, cols)
	sp.MulAdd(z, -1, p.dl, p.t, cols)
}

// apply is precond.apply on the host: the selected columns of r are
// gathered once (not at all when they are every column), the two products
// with W are gemms over them, tile by tile of rows (the tiles' parts of Wᵀr
// summed in tile order), C⁻¹ is one triangular solve pair, and the result
// is scattered once. It allocates nothing but the work queue's goroutines.
func (p *hostPrecond) apply(z, r *hostBlock, cols []int) {
	n, m := p.n, r.c
	w, all := sel(cols, m)
	if w == 0 {
		return
	}
	rd, zd := r.data, z.data
	if !all {
		rd, zd = p.rg[:n*w], p.zg[:n*w]
	}
	kw := p.k * w
	nt := par.Tiles(n, precondTile)
	t := blas64.General{Rows: p.k, Cols: w, Stride: w, Data: p.t[:kw]}
	par.ForTiles(nt, 0, func(_, i int) {
		lo, hi := par.Span(i, n, precondTile)
		if !all {
			gatherCols(rd[lo*w:hi*w], r.data[lo*m:hi*m], hi-lo, m, cols)
		}
		ti := t
		if nt > 1 {
			ti.Data = p.part[i*kw : (i+1)*kw]
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, p.rows(lo, hi), blas64.General{Rows: hi - lo, Cols: w, Stride: w, Data: rd[lo*w : hi*w]}, 0, ti)
	})
	if nt > 1 {
		copy(t.Data, p.part[:kw])
		for i := 1; i < nt; i++ {
			for a, v := range p.part[i*kw : (i+1)*kw] {
				t.Data[a] += v
			}
		}
	}
	lapack64.Potrs(p.c, t)
	par.ForTiles(nt, 0, func(_, i int) {
		lo, hi := par.Span(i, n, precondTile)
		for j, di := range p.dinv[lo:hi] {
			row := (lo + j) * w
			zr, rr := zd[row:row+w], rd[row:row+w]
			for a, v := range rr {
				zr[a] = v * di
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, p.rows(lo, hi), t, 1, blas64.General{Rows: hi - lo, Cols: w, Stride: w, Data: zd[lo*w : hi*w]})
		if !all {
			scatterCols(z.data[lo*m:hi*m], zd[lo*w:hi*w], hi-lo, m, cols)
		}
	})
}

// rows returns rows [lo, hi) of W.
func (p *hostPrecond) rows(lo, hi int) blas64.General {
	return blas64.General{Rows: hi - lo, Cols: p.k, Stride: p.k, Data: p.w.Data[lo*p.k : hi*p.k]}
}
