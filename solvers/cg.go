package solvers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// CG is batched conjugate gradients (Hestenes–Stiefel; Gardner et al.
// 2018): an independent CG recurrence per column, with the products H·P of
// all unconverged columns shared in one operator call. Converged columns
// leave the active set, so later products take fewer columns.
//
// Residuals: each iteration updates the recurrence residual r ← r − αHp.
// When a column's recurrence residual first meets its tolerance, its true
// residual b − Hv is computed (one extra column-product, counted in Work)
// and replaces R; the column is declared converged only if the true residual
// meets the tolerance, otherwise its recurrence restarts from the true
// residual (p = M⁻¹r). So Converged always refers to true residuals, and the
// trace holds recurrence residuals (equal to the true ones in exact
// arithmetic) except at such checks, where it holds the true ones.
//
// The paper uses no preconditioner (PrecondRank 0, the default).
type CG struct {
	// PrecondRank > 0 turns on a pivoted-Cholesky preconditioner of that
	// rank (an extension): P = LLᵀ + σ_p²I with LLᵀ the rank-k pivoted
	// Cholesky approximation of H − σ_p²I (plus diag(K − LLᵀ) with
	// PrecondDiagonal), applied with the Woodbury identity. Building it costs
	// k columns of H (RowEvaluations) and O(nk²) flops, and is redone on
	// Resume. PrecondRankAuto (−1) chooses the rank at every Start: the
	// factorisation stops once the largest remaining diagonal entry of
	// K − LLᵀ is below a tenth of σ_p², or at AutoRankCap(n): n/5, at most
	// 512. The rank a solve used is CGState.PrecondRank. 0, the default, means no preconditioner.
	PrecondRank int `json:"precond_rank,omitempty"`
	// PrecondNoise is σ_p², the variance on the preconditioner's diagonal,
	// normally the noise variance σ² of H = K + σ²I (at most min_i H_ii);
	// P's diagonal takes 10⁻⁹·tr(K) instead where σ_p² is below that
	// (precondJitter), so that its Woodbury form stays accurate as σ → 0.
	// The solver does not know σ: 0 means "ask the operator", which works
	// when it implements NoiseVariancer; otherwise set it (> 0) whenever
	// PrecondRank > 0.
	PrecondNoise float64 `json:"precond_noise,omitempty"`
	// PrecondDiagonal adds the diagonal correction diag(K − LLᵀ) to the
	// preconditioner, P = LLᵀ + diag(K − LLᵀ) + σ_p²I (the FITC
	// approximation of H, exact on the diagonal). Without it, P = LLᵀ + σ²I
	// underestimates H wherever the rank-k approximation misses K — on pol
	// at length scales 1 this made CG slower than no preconditioner (see
	// the tests) — so it is usually the better choice for kernels whose
	// spectrum decays slowly.
	PrecondDiagonal bool `json:"precond_diagonal,omitempty"`
}

// NoiseVariancer is implemented by operators H = K + σ²I that know their
// noise variance σ². CG's preconditioner uses it when CG.PrecondNoise is 0,
// so a CG configuration need not change as σ is optimised.
type NoiseVariancer interface {
	NoiseVariance() float64
}

// CGState is CG's method-specific state.
type CGState struct {
	P  []float64 // search directions, row-major N×M
	RZ []float64 // rᵀM⁻¹r per column (rᵀr without a preconditioner)
	// Failed[j] is column j's true relative residual at its last failed
	// check (the recurrence said it met its tolerance, b − Hv said not);
	// Stalls[j] counts the failed checks in a row that did not bring it
	// below stallRatio times the one before (see State.Stalled). Nil in
	// states saved before they were kept: all zero.
	Failed []float64 `json:",omitempty"`
	Stalls []int     `json:",omitempty"`
	// PrecondRank is the rank of the preconditioner this solve applies
	// (CG.PrecondRank, or the rank PrecondRankAuto chose; less where K is
	// numerically of lower rank), 0 without one. It is set at Start and on
	// Resume, which rebuilds the preconditioner.
	PrecondRank int `json:",omitempty"`
}

func (s *CGState) clone() *CGState {
	return &CGState{P: append([]float64(nil), s.P...), RZ: append([]float64(nil), s.RZ...),
		Failed: append([]float64(nil), s.Failed...), Stalls: append([]int(nil), s.Stalls...), PrecondRank: s.PrecondRank}
}

// checkFailed records column j's failed true-residual check at relative
// residual rel and reports whether the column has stalled.
func (cs *CGState) checkFailed(j int, rel float64) bool {
	if cs.Failed == nil {
		cs.Failed, cs.Stalls = make([]float64, len(cs.RZ)), make([]int, len(cs.RZ))
	}
	return failedCheck(&cs.Failed[j], &cs.Stalls[j], rel)
}

// Name returns "cg".
func (CG) Name() string { return "cg" }

const defaultCGMaxIter = 1000

func (m CG) check() error {
	if m.PrecondRank < PrecondRankAuto {
		return fieldError("CG.PrecondRank", "CG.PrecondRank is %d: use 0 (no preconditioner), a rank > 0, or PrecondRankAuto (−1)", m.PrecondRank)
	}
	if m.PrecondRank != 0 && (m.PrecondNoise < 0 || math.IsNaN(m.PrecondNoise) || math.IsInf(m.PrecondNoise, 0)) {
		return fieldError("CG.PrecondNoise", "CG.PrecondNoise is %v: with a preconditioner (PrecondRank ≠ 0) set it to the noise variance σ² (> 0) of H = K + σ²I, or 0 to take it from the operator", m.PrecondNoise)
	}
	return nil
}

// precondNoise returns σ_p²: PrecondNoise, or the operator's σ².
func (m CG) precondNoise(op Operator) (float64, error) {
	if m.PrecondNoise > 0 {
		return m.PrecondNoise, nil
	}
	if nv, ok := op.(NoiseVariancer); ok {
		if s2 := nv.NoiseVariance(); s2 > 0 && !math.IsInf(s2, 0) {
			return s2, nil
		}
	}
	return 0, fieldError("CG.PrecondNoise", "CG.PrecondNoise is 0 and the operator (%T) does not report its noise variance (NoiseVariancer): set PrecondNoise to σ² of H = K + σ²I", op)
}

// Start returns a CG solver; see Method.
func (m CG) Start(op Operator, B, V0 *mat.Dense, s Settings) (Solver, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	n, err := checkOperator(op)
	if err != nil {
		return nil, err
	}
	b, st, err := begin(m.Name(), n, B, V0, s, defaultCGMaxIter, n)
	if err != nil {
		return nil, err
	}
	st.CG = &CGState{P: make([]float64, n*st.M), RZ: make([]float64, st.M)}
	c, err := newCGSolver(op, b, st, m)
	if err != nil {
		return nil, err
	}
	// p = z = M⁻¹r for every column.
	if err := c.finishStart(V0 == nil, func() error { return c.restart(c.all) }); err != nil {
		return nil, err
	}
	return c, nil
}

func (m CG) resume(op Operator, b *mat.Dense, st *State) (Solver, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if cs := st.CG; cs == nil || len(cs.P) != st.N*st.M || len(cs.RZ) != st.M || (cs.Failed != nil && (len(cs.Failed) != st.M || len(cs.Stalls) != st.M)) {
		return nil, fmt.Errorf("%w: state has no valid CG part: it was not saved from a CG solver", ErrShape)
	}
	return newCGSolver(op, b, st, m)
}

type cgSolver struct {
	core
	m   CG
	pre *precond // nil without a preconditioner

	p     Block // search directions P
	z     Block // M⁻¹R (R itself without a preconditioner)
	q     Block // H·P: core.tmp, free again once V and R are updated
	act   []int
	cand  []int
	again []int
	pq    []float64 // pᵀHp, then rᵀz, per active column
	rr    []float64 // rᵀr per active column, with a preconditioner
	alpha []float64
}

// newCGSolver sets up the space (B, V, R, P and scratch) and the
// preconditioner, which is rebuilt from the operator on Resume.
func newCGSolver(op Operator, b *mat.Dense, st *State, m CG) (*cgSolver, error) {
	n, nc := st.N, st.M
	c := &cgSolver{
		m:     m,
		act:   make([]int, 0, nc),
		cand:  make([]int, 0, nc),
		again: make([]int, 0, nc),
		pq:    make([]float64, nc),
		rr:    make([]float64, nc),
		alpha: make([]float64, nc),
	}
	if err := c.init(op, b, st); err != nil {
		return nil, err
	}
	err := c.setIterationRows(n) // every iteration multiplies by all of H
	if err == nil {
		err = c.bind(&c.p, st.CG.P, n, nc)
	}
	if err == nil {
		err = c.setupPrecond()
	}
	if err != nil {
		_ = c.sp.Close()
		return nil, err
	}
	c.q = c.tmp
	return c, nil
}

func (c *cgSolver) setupPrecond() error {
	c.z = c.r
	if c.m.PrecondRank == 0 {
		c.st.CG.PrecondRank = 0
		return nil
	}
	noise, err := c.m.precondNoise(c.op)
	if err != nil {
		return err
	}
	rank, auto := c.m.PrecondRank, c.m.PrecondRank == PrecondRankAuto
	if auto {
		rank = AutoRankCap(c.st.N)
	}
	c.st.CG.PrecondRank = 0
	pc, err := newPivChol(c.op, rank, auto, noise, c.m.PrecondDiagonal, &c.st.Work)
	if err != nil || pc == nil {
		return err
	}
	if c.pre, err = pc.upload(c.sp, c.st.M); err != nil {
		return err
	}
	c.st.CG.PrecondRank = pc.k
	c.z, err = c.sp.NewBlock(c.st.N, c.st.M)
	return err
}

// precondCols sets Z[:,cols] = M⁻¹R[:,cols] (nothing to do without a
// preconditioner: Z is R).
func (c *cgSolver) precondCols(cols []int) {
	if c.pre == nil {
		return
	}
	c.pre.apply(c.sp, c.z, c.r, cols)
}

// restart sets P[:,j] = M⁻¹R[:,j] and RZ[j] = rᵀM⁻¹r for j in cols.
func (c *cgSolver) restart(cols []int) error {
	if len(cols) == 0 {
		return nil
	}
	c.precondCols(cols)
	c.sp.Copy(c.p, c.z, cols)
	rz, err := c.dots(c.r, c.z, cols)
	if err != nil {
		return err
	}
	for a, j := range cols {
		c.st.CG.RZ[j] = rz[a]
	}
	return nil
}

// active appends to dst[:0] the columns the next iteration works on: the
// unconverged ones (FreezeColumn), or every column but those solved
// exactly (FreezeJoint: a zero residual has no search direction left).
func (c *cgSolver) active(dst []int) []int {
	if c.st.Settings.Freeze != FreezeJoint {
		return activeCols(dst, c.st.ColumnConverged)
	}
	dst = dst[:0]
	for j, rz := range c.st.CG.RZ {
		if rz != 0 {
			dst = append(dst, j)
		}
	}
	return dst
}

// update does the rest of the iteration's arithmetic once Q = H·P: α = rᵀz/pᵀHp,
// V and R, z = M⁻¹r, β and P, and returns the k active columns' rᵀr. A
// Space that implements CGStepper does it in one call when there is no
// preconditioner.
func (c *cgSolver) update(k int) ([]float64, error) {
	cs := c.st.CG
	pq := c.pq[:k]
	if fs, ok := c.sp.(CGStepper); ok && c.pre == nil {
		rzOld, rz := c.alpha[:k], c.rr[:k]
		for a, j := range c.act {
			rzOld[a] = cs.RZ[j]
		}
		if err := fs.CGStep(pq, rz, c.v, c.r, c.p, c.q, rzOld, c.act); err != nil {
			return nil, fmt.Errorf("solvers: CG: the operator's space failed: %w", err)
		}
		if err := c.checkPQ(pq); err != nil {
			return nil, err
		}
		for a, j := range c.act {
			cs.RZ[j] = rz[a]
		}
		return rz, nil
	}
	if err := c.sp.Dots(pq, c.p, c.q, c.act, nil); err != nil {
		return nil, fmt.Errorf("solvers: CG: the operator's space failed: %w", err)
	}
	if err := c.checkPQ(pq); err != nil {
		return nil, err
	}
	alpha := c.alpha[:k]
	for a, j := range c.act {
		alpha[a] = cs.RZ[j] / pq[a]
	}
	c.sp.Axpy(c.v, alpha, c.p, c.act)
	for a := range alpha {
		alpha[a] = -alpha[a]
	}
	c.sp.Axpy(c.r, alpha, c.q, c.act)
	// z = M⁻¹r, β = r'z'/rz, p = z + βp.
	c.precondCols(c.act)
	rz := c.pq[:k] // reuse
	if err := c.sp.Dots(rz, c.r, c.z, c.act, nil); err != nil {
		return nil, fmt.Errorf("solvers: CG: the operator's space failed: %w", err)
	}
	rr := rz // without a preconditioner z = r
	if c.pre != nil {
		rr = c.rr[:k]
		if err := c.sp.Dots(rr, c.r, c.r, c.act, nil); err != nil {
			return nil, fmt.Errorf("solvers: CG: the operator's space failed: %w", err)
		}
	}
	beta := alpha // reuse
	for a, j := range c.act {
		beta[a] = rz[a] / cs.RZ[j]
		cs.RZ[j] = rz[a]
	}
	c.sp.Xpby(c.p, c.z, beta, c.act)
	return rr, nil
}

// checkPQ checks the active columns' pᵀHp: finite (a NaN or Inf anywhere
// in H·p makes it NaN or Inf, since 0·Inf is NaN, so this checks the
// product) and positive.
func (c *cgSolver) checkPQ(pq []float64) error {
	it := c.st.Iteration + 1
	if !allFinite(pq) {
		return fmt.Errorf("%w: CG: the operator returned NaN or Inf for H·p at iteration %d: check the hyperparameters; %s", ErrNotFinite, it, pdAdvice)
	}
	for a, j := range c.act {
		if !(pq[a] > 0) {
			return fmt.Errorf("%w: CG: pᵀHp = %v ≤ 0 for column %d at iteration %d; %s", ErrNotPositiveDefinite, pq[a], j, it, pdAdvice)
		}
	}
	return nil
}

// Iterate does one CG step on every unconverged column (every column under
// FreezeJoint).
func (c *cgSolver) Iterate() error {
	if err := c.stopped(); err != nil {
		return err
	}
	if c.Done() {
		return nil
	}
	st, cs := c.st, c.st.CG
	c.act = c.active(c.act)
	k := len(c.act)
	c.sp.Mul(c.q, c.p, c.act)
	st.Work.OperatorProducts += k
	rr, err := c.update(k)
	if err != nil {
		return c.fail(err)
	}
	// Candidates for convergence get their true residual checked: the
	// columns that met their tolerance by the recurrence (those that then
	// freeze, under FreezeColumn), and every active column once the whole
	// rule is met by the recurrence (under the default rules these are the
	// same columns).
	c.setResiduals(rr, c.act, false)
	joint := st.Settings.Freeze == FreezeJoint
	whole := c.met()
	c.cand = c.cand[:0]
	for _, j := range c.act {
		if whole || (!joint && st.RelResiduals[j] < st.Settings.tol(j)) {
			c.cand = append(c.cand, j)
		}
	}
	verifiedAll := len(c.cand) == len(c.act)
	if len(c.cand) > 0 {
		sq, err := c.trueResidual(c.cand)
		if err != nil {
			return c.fail(err)
		}
		c.setResiduals(sq, c.cand, false)
		done := verifiedAll && c.met()
		c.again = c.again[:0]
		for _, j := range c.cand {
			ok := st.RelResiduals[j] < st.Settings.tol(j)
			if !joint {
				st.ColumnConverged[j] = ok
			}
			if !ok && !done && cs.checkFailed(j, st.RelResiduals[j]) {
				st.Stalled = true
			}
			// A column whose R was replaced by its true residual and that
			// keeps iterating restarts its recurrence from it.
			if !done && (joint || !ok) {
				c.again = append(c.again, j)
			}
		}
		if err := c.restart(c.again); err != nil {
			return c.fail(err)
		}
	}
	if joint {
		for _, j := range c.act {
			st.ColumnConverged[j] = st.RelResiduals[j] < st.Settings.tol(j)
		}
	}
	if !allFinite(st.RelResiduals) {
		return c.fail(fmt.Errorf("%w: CG: residual became NaN or Inf at iteration %d; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	st.Iteration++
	st.Rows += st.N
	st.Converged = verifiedAll && c.met()
	// At a budget stop the recurrence residuals of the unconverged columns
	// are replaced by true ones: they are what the caller reports.
	if err := c.budgetStop(true); err != nil {
		return c.fail(err)
	}
	c.record()
	return nil
}
