package solvers

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/enum"
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
// (ties go to the lowest block; Pick PickAll sums over every column, as the
// authors' code does), solves H[I,I]Δ = R[I,:] with the block's
// Cholesky factor, sets V[I,:] += Δ for every column, and updates the full
// residual exactly, R −= H[:,I]Δ (ColsMulTo: |I| columns of H, counted in
// Work.RowEvaluations). Each update is an exact minimisation of the
// quadratic objective over the block's coordinates, so every column's
// error ‖v − v*‖_H (= ‖r‖_{H⁻¹}) never increases.
//
// The updated residual is exact in exact arithmetic but drifts from
// b − Hv by rounding; where that matters (products in float32, a
// tolerance near float64's limit) it can meet a tolerance that b − Hv
// cannot. So when it meets the stopping rule, the true residual is
// computed (one product of all columns, counted in Work) and replaces R;
// the solve is Converged only if that meets the rule too, and otherwise
// continues from it. Three such failed checks in a row, each above 0.9
// times the one before, stop the solve as Stalled, as CG's do; so does a
// run of StallEpochs epochs without progress (see StallEpochs).
//
// Block factors are computed lazily, the first time a block is picked, and
// kept (n·BlockSize floats at most); Resume recomputes them on demand.
type AP struct {
	// BlockSize is the number of indices per block; 0 means
	// DefaultBlockSize (2000). It is capped at n.
	BlockSize int `json:"block_size,omitempty"`
	// Pick selects the columns whose residuals choose the block:
	// PickUnconverged (the default) or PickAll (the authors' code).
	Pick APPick `json:"pick,omitempty"`
}

// APPick is the set of columns whose residuals choose AP's next block.
type APPick int

const (
	// PickUnconverged sums over the columns that have not met their
	// tolerance, so updates go where work remains. The default.
	PickUnconverged APPick = iota
	// PickAll sums over every column, converged or not, as the authors'
	// code does (linear_solvers.py, ap_solver).
	PickAll
)

var apPickNames = enum.Enum[APPick]{Type: "APPick", What: "AP pick rule", Err: ErrSettings, Names: []string{"unconverged", "all"}}

// String returns "unconverged" or "all".
func (p APPick) String() string { return apPickNames.Name(p) }

// MarshalText returns String(), or an error for an unknown value.
func (p APPick) MarshalText() ([]byte, error) { return apPickNames.Marshal(p) }

// UnmarshalText parses unconverged or all (case-insensitive).
func (p *APPick) UnmarshalText(b []byte) error { return apPickNames.Unmarshal(p, b) }

// APState is AP's method-specific state. The block factors are not part of
// it: block b's factor is computed the first time b is picked (so it has
// been computed once Picks[b] > 0), and after Resume again when b is next
// picked. Factors are deterministic, so this changes Work, not the iterates.
type APState struct {
	BlockSize int   // effective block size (capped at n)
	Starts    []int // block b is indices Starts[b]..Starts[b+1]−1; len = blocks+1
	Picks     []int // Picks[b] = how many times block b has been updated
	Last      int   // block updated by the last iteration (−1 before any)
	// Failed is the measure of the distance to the stopping rule (the
	// largest residual over its tolerance) of the true residual at the
	// last failed check (the updated residual met the rule, b − Hv did
	// not); Stalls counts the failed checks in a row that did not bring it
	// below stallRatio times the one before (see State.Stalled).
	Failed float64 `json:",omitempty"`
	Stalls int     `json:",omitempty"`
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
		return 0, fieldError("AP.BlockSize", "AP.BlockSize is %d: use a value > 0 (0 means %d)", bs, DefaultBlockSize)
	}
	if bs == 0 {
		bs = DefaultBlockSize
	}
	if bs > n {
		bs = n
	}
	if m.Pick != PickUnconverged && m.Pick != PickAll {
		return 0, fieldError("AP.Pick", "AP.Pick is %d: use PickUnconverged or PickAll", int(m.Pick))
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
	b, st, err := begin(m.Name(), n, B, V0, s, defaultAPMaxIter, bs)
	if err != nil {
		return nil, err
	}
	starts := blockRanges(n, bs)
	st.AP = &APState{BlockSize: bs, Starts: starts, Picks: make([]int, len(starts)-1), Last: -1}
	a, err := newAPSolver(op, b, st, m)
	if err != nil {
		return nil, err
	}
	if err := a.finishStart(V0 == nil, nil); err != nil {
		return nil, err
	}
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
	return newAPSolver(op, b, st, m)
}

type apSolver struct {
	core
	factors []Block // per block: its Cholesky factor, nil until first picked
	idx     []Index // per block: its indices, with its factor
	delta   []Block // Δ for a full block and, if smaller, for the last
	scores  []float64
	idxBuf  []int
	all     bool // Pick PickAll
}

func newAPSolver(op Operator, b *mat.Dense, st *State, m AP) (*apSolver, error) {
	nb := len(st.AP.Starts) - 1
	a := &apSolver{
		all:     m.Pick == PickAll,
		factors: make([]Block, nb),
		idx:     make([]Index, nb),
		scores:  make([]float64, nb*st.M),
		idxBuf:  make([]int, st.AP.BlockSize),
	}
	if err := a.init(op, b, st); err != nil {
		return nil, err
	}
	// The largest block bounds an iteration's rows (the last may be
	// smaller; which block comes next is only known when it is picked).
	if err := a.setIterationRows(st.AP.BlockSize); err != nil {
		_ = a.sp.Close()
		return nil, err
	}
	full, err := a.sp.NewBlock(st.AP.BlockSize, st.M)
	if err == nil {
		a.delta = append(a.delta, full)
		if last := st.AP.Starts[nb] - st.AP.Starts[nb-1]; last != st.AP.BlockSize {
			var d Block
			d, err = a.sp.NewBlock(last, st.M)
			a.delta = append(a.delta, d)
		}
	}
	if err != nil {
		_ = a.sp.Close()
		return nil, err
	}
	return a, nil
}

// pick returns the block with the largest weighted residual.
func (a *apSolver) pick() (int, error) {
	st := a.st
	m := st.M
	if err := a.sp.Dots(a.scores, a.r, a.r, nil, st.AP.Starts); err != nil {
		return 0, fmt.Errorf("solvers: AP: the operator's space failed: %w", err)
	}
	best, bestScore := 0, -1.0
	for bl := 0; bl+1 < len(st.AP.Starts); bl++ {
		s := 0.0
		for j, v := range a.scores[bl*m : (bl+1)*m] {
			if (a.all || !st.ColumnConverged[j]) && st.BNorms[j] != 0 {
				s += v / (st.BNorms[j] * st.BNorms[j])
			}
		}
		if s > bestScore {
			best, bestScore = bl, s
		}
	}
	return best, nil
}

// factor returns block bl's indices and Cholesky factor, computing them
// the first time bl is picked.
func (a *apSolver) factor(bl int) (Index, Block, error) {
	if f := a.factors[bl]; f != nil {
		return a.idx[bl], f, nil
	}
	st := a.st
	lo, hi := st.AP.Starts[bl], st.AP.Starts[bl+1]
	k := hi - lo
	idx := a.idxBuf[:k]
	for i := range idx {
		idx[i] = lo + i
	}
	ix, err := a.sp.NewIndex(idx)
	if err != nil {
		return nil, nil, fmt.Errorf("solvers: AP: the operator's space failed: %w", err)
	}
	f, err := a.sp.NewBlock(k, k)
	if err != nil {
		return nil, nil, fmt.Errorf("solvers: AP: the operator's space failed: %w", err)
	}
	a.sp.Principal(f, ix)
	st.Work.BlockEntries += k * k
	err = a.sp.Factorize(f)
	switch {
	case errors.Is(err, ErrNotFinite):
		return nil, nil, fmt.Errorf("%w: AP: block %d of H (rows %d..%d) has NaN or Inf: check the hyperparameters", ErrNotFinite, bl, lo, hi-1)
	case errors.Is(err, ErrNotPositiveDefinite):
		st.Work.BlockFactorisations++
		return nil, nil, fmt.Errorf("%w: AP: Cholesky factorisation of block %d (rows %d..%d) failed; %s", ErrNotPositiveDefinite, bl, lo, hi-1, pdAdvice)
	case err != nil:
		return nil, nil, fmt.Errorf("solvers: AP: the operator's space failed: %w", err)
	}
	st.Work.BlockFactorisations++
	a.idx[bl], a.factors[bl] = ix, f
	return ix, f, nil
}

// Iterate does one block update: Δ = H[I,I]⁻¹R[I,:], V[I,:] += Δ,
// R −= H[:,I]Δ. The new R is computed into the scratch block and the two
// swap roles once it is known to be finite, so a failure leaves the state
// of the last iteration.
func (a *apSolver) Iterate() error {
	if err := a.stopped(); err != nil {
		return err
	}
	if a.Done() {
		return nil
	}
	st := a.st
	bl, err := a.pick()
	if err != nil {
		return a.fail(err)
	}
	ix, f, err := a.factor(bl)
	if err != nil {
		return a.fail(err)
	}
	k := st.AP.Starts[bl+1] - st.AP.Starts[bl]
	delta := a.delta[0]
	if k != st.AP.BlockSize {
		delta = a.delta[1]
	}
	a.sp.GatherRows(delta, ix, a.r, nil)
	a.sp.Solve(delta, f, delta, nil)
	a.sp.MulCols(a.tmp, ix, delta, nil)
	st.Work.RowEvaluations += k
	a.sp.Xpby(a.tmp, a.r, a.negOnes, nil) // R − H[:,I]Δ
	// A NaN or Inf in Δ or H[:,I]Δ shows in the new residual's norms.
	sq, err := a.dots(a.tmp, a.tmp, nil)
	if err != nil {
		return a.fail(err)
	}
	if !allFinite(sq) {
		return a.fail(fmt.Errorf("%w: AP: block update produced NaN or Inf at iteration %d; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	a.r, a.tmp = a.tmp, a.r
	a.sp.AxpyRows(a.v, ix, a.ones, delta, nil)
	st.AP.Picks[bl]++
	st.AP.Last = bl
	a.setResiduals(sq, nil, true)
	st.Iteration++
	st.Rows += k
	if st.Converged = a.met(); st.Converged {
		if err := a.confirm(); err != nil {
			return a.fail(err)
		}
	}
	// R is updated exactly (R −= H[:,I]Δ), so it needs no check at a
	// budget stop.
	if err := a.budgetStop(false); err != nil {
		return a.fail(err)
	}
	if _, err := a.watch(); err != nil {
		return a.fail(err)
	}
	a.record()
	return nil
}

// confirm replaces R by the true residual b − Hv (one product) when the
// updated residual met the stopping rule, and sets Converged from it, or
// records a failed check (and Stalled, see State.Stalled).
func (a *apSolver) confirm() error {
	st := a.st
	sq, err := a.trueResidual(nil)
	if err != nil {
		return err
	}
	a.setResiduals(sq, nil, true)
	if st.Converged = a.met(); !st.Converged {
		st.Stalled = failedCheck(&st.AP.Failed, &st.AP.Stalls, st.Settings.excess(st.RelResiduals))
	}
	return nil
}
