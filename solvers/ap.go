package solvers

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// DefaultBlockSize is AP's block size in the paper (appendix B).
const DefaultBlockSize = 2000

// AP is alternating projections (Wu et al. 2024, "Large-scale Gaussian
// processes via alternating projection"): block Gauss–Seidel with greedy
// block selection. 0..n−1 is split into fixed contiguous blocks of
// BlockSize indices (the last may be smaller). Each iteration picks the
// block I with the largest residual,
//
//	argmax_I Σ_j ‖R[I,j]‖² / ‖b_j‖²  over unconverged columns j
//
// (ties go to the lowest block), solves H[I,I]Δ = R[I,:] with the block's
// Cholesky factor, sets V[I,:] += Δ for every column, and updates the full
// residual exactly, R −= H[:,I]Δ (ColsMulTo: |I| columns of H, counted in
// Work.RowEvaluations). Each update is an exact minimisation of the
// quadratic objective over the block's coordinates, so every column's
// error ‖v − v*‖_H (= ‖r‖_{H⁻¹}) never increases.
//
// Block factors are computed lazily, the first time a block is picked, and
// kept (n·BlockSize floats at most); Resume recomputes them on demand.
type AP struct {
	// BlockSize is the number of indices per block; 0 means
	// DefaultBlockSize (2000). It is capped at n.
	BlockSize int `json:"block_size,omitempty"`
}

// APState is AP's method-specific state. The block factors are not part of
// it: block b's factor is computed the first time b is picked (so it has
// been computed once Picks[b] > 0), and after Resume again when b is next
// picked. Factors are deterministic, so this changes Work, not the iterates.
type APState struct {
	BlockSize int   // effective block size (capped at n)
	Starts    []int // block b is indices Starts[b]..Starts[b+1]−1; len = blocks+1
	Picks     []int // Picks[b] = how many times block b has been updated
	Last      int   // block updated by the last iteration (−1 before any)
}

func (s *APState) clone() *APState {
	c := *s
	c.Starts = append([]int(nil), s.Starts...)
	c.Picks = append([]int(nil), s.Picks...)
	return &c
}

// Name returns "ap".
func (AP) Name() string { return "ap" }

const defaultAPMaxIter = 20000

// Resolve returns m as it runs on an n×n operator: BlockSize set to the
// effective block size (the default filled in, capped at n), or the
// ErrSettings error that Start would return.
func (m AP) Resolve(n int) (AP, error) {
	bs, err := m.blockSize(n)
	if err != nil {
		return m, err
	}
	m.BlockSize = bs
	return m, nil
}

func (m AP) blockSize(n int) (int, error) {
	bs := m.BlockSize
	if bs < 0 {
		return 0, fmt.Errorf("%w: AP.BlockSize is %d: use a value > 0 (0 means %d)", ErrSettings, bs, DefaultBlockSize)
	}
	if bs == 0 {
		bs = DefaultBlockSize
	}
	if bs > n {
		bs = n
	}
	return bs, nil
}

// Start returns an AP solver; see Method.
func (m AP) Start(op Operator, B, V0 *mat.Dense, s Settings) (Solver, error) {
	n, err := checkOperator(op)
	if err != nil {
		return nil, err
	}
	bs, err := m.blockSize(n)
	if err != nil {
		return nil, err
	}
	b, st, err := begin(m.Name(), n, B, V0, s, defaultAPMaxIter)
	if err != nil {
		return nil, err
	}
	starts := blockRanges(n, bs)
	st.AP = &APState{BlockSize: bs, Starts: starts, Picks: make([]int, len(starts)-1), Last: -1}
	a := newAPSolver(op, b, st)
	if V0 == nil {
		copy(st.R, b.RawMatrix().Data)
	} else if err := a.trueResidual(nil); err != nil {
		return nil, err
	}
	a.updateResiduals(true)
	st.Converged = a.allConverged()
	a.record()
	return a, nil
}

func (m AP) resume(op Operator, b *mat.Dense, st *State) (Solver, error) {
	bs, err := m.blockSize(st.N)
	if err != nil {
		return nil, err
	}
	if st.AP == nil {
		return nil, fmt.Errorf("%w: state has no AP part: it was not saved from an AP solver", ErrShape)
	}
	if st.AP.BlockSize != bs {
		return nil, fmt.Errorf("%w: state has AP block size %d but the method has %d: resume with the same AP settings", ErrShape, st.AP.BlockSize, bs)
	}
	want := blockRanges(st.N, bs)
	if len(st.AP.Starts) != len(want) || len(st.AP.Picks) != len(want)-1 {
		return nil, fmt.Errorf("%w: state's AP block partition does not fit n = %d and block size %d", ErrShape, st.N, bs)
	}
	for i := range want {
		if st.AP.Starts[i] != want[i] {
			return nil, fmt.Errorf("%w: state's AP block partition does not fit n = %d and block size %d", ErrShape, st.N, bs)
		}
	}
	return newAPSolver(op, b, st), nil
}

type apSolver struct {
	core
	factors []*mat.Cholesky // per block, nil until first picked
	idx     [][]int         // per block index lists, built lazily
	sym     *mat.SymDense   // BlockSize×BlockSize scratch
	delta   []float64       // BlockSize×M
	score   []float64       // per column scratch
}

func newAPSolver(op Operator, b *mat.Dense, st *State) *apSolver {
	nb := len(st.AP.Starts) - 1
	return &apSolver{
		core:    newCore(op, b, st),
		factors: make([]*mat.Cholesky, nb),
		idx:     make([][]int, nb),
		delta:   make([]float64, st.AP.BlockSize*st.M),
		score:   make([]float64, st.M),
	}
}

// pick returns the block with the largest weighted residual.
func (a *apSolver) pick() int {
	st := a.st
	m := st.M
	best, bestScore := 0, -1.0
	for bl := 0; bl+1 < len(st.AP.Starts); bl++ {
		lo, hi := st.AP.Starts[bl], st.AP.Starts[bl+1]
		sumSqCols(a.score, st.R[lo*m:hi*m], hi-lo, m)
		s := 0.0
		for j, v := range a.score {
			if !st.ColumnConverged[j] {
				s += v / (st.BNorms[j] * st.BNorms[j])
			}
		}
		if s > bestScore {
			best, bestScore = bl, s
		}
	}
	return best
}

func (a *apSolver) factor(bl int) (*mat.Cholesky, error) {
	if f := a.factors[bl]; f != nil {
		return f, nil
	}
	st := a.st
	lo, hi := st.AP.Starts[bl], st.AP.Starts[bl+1]
	k := hi - lo
	idx := make([]int, k)
	for i := range idx {
		idx[i] = lo + i
	}
	a.idx[bl] = idx
	if a.sym == nil {
		a.sym = mat.NewSymDense(st.AP.BlockSize, nil)
	}
	sym := a.sym
	if k != st.AP.BlockSize {
		sym = mat.NewSymDense(k, nil)
	}
	a.op.BlockTo(sym, idx)
	st.Work.BlockEntries += k * k
	if !allFinite(sym.RawSymmetric().Data) {
		return nil, fmt.Errorf("%w: AP: block %d of H (rows %d..%d) has NaN or Inf: check the hyperparameters", ErrNotFinite, bl, lo, hi-1)
	}
	f := new(mat.Cholesky)
	ok := f.Factorize(sym)
	st.Work.BlockFactorisations++
	if !ok {
		return nil, fmt.Errorf("%w: AP: Cholesky factorisation of block %d (rows %d..%d) failed; %s", ErrNotPositiveDefinite, bl, lo, hi-1, pdAdvice)
	}
	a.factors[bl] = f
	return f, nil
}

// Iterate does one block update.
func (a *apSolver) Iterate() error {
	if a.err != nil {
		return a.err
	}
	if a.Done() {
		return nil
	}
	st := a.st
	n, m := st.N, st.M
	bl := a.pick()
	f, err := a.factor(bl)
	if err != nil {
		return a.fail(err)
	}
	lo, hi := st.AP.Starts[bl], st.AP.Starts[bl+1]
	k := hi - lo
	delta := mat.NewDense(k, m, a.delta[:k*m])
	if err := f.SolveTo(delta, mat.NewDense(k, m, st.R[lo*m:hi*m])); err != nil {
		// mat.Condition: the block is numerically singular but was
		// factorised; the solve is still usable, as in Wu et al.
		if _, ok := err.(mat.Condition); !ok {
			return a.fail(fmt.Errorf("%w: AP: block %d solve failed: %v; %s", ErrNotPositiveDefinite, bl, err, pdAdvice))
		}
	}
	hd := mat.NewDense(n, m, a.tmp)
	a.op.ColsMulTo(hd, a.idx[bl], delta)
	st.Work.RowEvaluations += k
	if !allFinite(a.delta[:k*m]) || !allFinite(a.tmp) {
		return a.fail(fmt.Errorf("%w: AP: block update produced NaN or Inf at iteration %d; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	dd := a.delta[:k*m]
	for i, d := range dd {
		st.V[lo*m+i] += d
	}
	for i, h := range a.tmp {
		st.R[i] -= h
	}
	st.AP.Picks[bl]++
	st.AP.Last = bl
	a.updateResiduals(true)
	st.Iteration++
	st.Converged = a.allConverged()
	a.record()
	return nil
}
