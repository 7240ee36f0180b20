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
	// k columns of H (RowEvaluations) and is redone on Resume.
	PrecondRank int `json:"precond_rank,omitempty"`
	// PrecondNoise is σ_p², the variance on the preconditioner's diagonal,
	// normally the noise variance σ² of H = K + σ²I (at most min_i H_ii).
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
}

func (s *CGState) clone() *CGState {
	return &CGState{P: append([]float64(nil), s.P...), RZ: append([]float64(nil), s.RZ...)}
}

// Name returns "cg".
func (CG) Name() string { return "cg" }

const defaultCGMaxIter = 1000

func (m CG) check() error {
	if m.PrecondRank < 0 {
		return fmt.Errorf("%w: CG.PrecondRank is %d: use 0 (no preconditioner) or a rank > 0", ErrSettings, m.PrecondRank)
	}
	if m.PrecondRank > 0 && (m.PrecondNoise < 0 || math.IsNaN(m.PrecondNoise) || math.IsInf(m.PrecondNoise, 0)) {
		return fmt.Errorf("%w: CG.PrecondNoise is %v: with PrecondRank > 0 set it to the noise variance σ² (> 0) of H = K + σ²I, or 0 to take it from the operator", ErrSettings, m.PrecondNoise)
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
	return 0, fmt.Errorf("%w: CG.PrecondNoise is 0 and the operator (%T) does not report its noise variance (NoiseVariancer): set PrecondNoise to σ² of H = K + σ²I", ErrSettings, op)
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
	b, st, err := begin(m.Name(), n, B, V0, s, defaultCGMaxIter)
	if err != nil {
		return nil, err
	}
	st.CG = &CGState{P: make([]float64, n*st.M), RZ: make([]float64, st.M)}
	c := &cgSolver{core: newCore(op, b, st), m: m}
	if err := c.setup(); err != nil {
		return nil, err
	}
	if V0 == nil {
		copy(st.R, b.RawMatrix().Data)
	} else if err := c.trueResidual(nil); err != nil {
		return nil, err
	}
	c.updateResiduals(true)
	// p = z = M⁻¹r for every column.
	all := activeCols(nil, make([]bool, st.M))
	c.restart(all)
	st.Converged = c.allConverged()
	c.record()
	return c, nil
}

func (m CG) resume(op Operator, b *mat.Dense, st *State) (Solver, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if st.CG == nil || len(st.CG.P) != st.N*st.M || len(st.CG.RZ) != st.M {
		return nil, fmt.Errorf("%w: state has no valid CG part: it was not saved from a CG solver", ErrShape)
	}
	c := &cgSolver{core: newCore(op, b, st), m: m}
	if err := c.setup(); err != nil {
		return nil, err
	}
	return c, nil
}

type cgSolver struct {
	core
	m   CG
	pre *pivChol // nil without a preconditioner

	act        []int
	cand       []int
	pa, qa, za []float64 // n×k gathers of P, H·P, M⁻¹R
	pq, alpha  []float64
}

func (c *cgSolver) setup() error {
	n, m := c.st.N, c.st.M
	c.pa = make([]float64, n*m)
	c.qa = make([]float64, n*m)
	c.za = make([]float64, n*m)
	c.pq = make([]float64, m)
	c.alpha = make([]float64, m)
	if c.m.PrecondRank > 0 {
		noise, err := c.m.precondNoise(c.op)
		if err != nil {
			return err
		}
		pre, err := newPivChol(c.op, c.m.PrecondRank, noise, c.m.PrecondDiagonal, &c.st.Work)
		if err != nil {
			return err
		}
		c.pre = pre
	}
	return nil
}

// precondCols sets za (n×k, contiguous) = M⁻¹R[:,cols].
func (c *cgSolver) precondCols(cols []int) []float64 {
	n, m, k := c.st.N, c.st.M, len(cols)
	z := c.za[:n*k]
	gatherCols(z, c.st.R, n, m, cols)
	if c.pre != nil {
		c.pre.apply(z, k)
	}
	return z
}

// restart sets P[:,j] = M⁻¹R[:,j] and RZ[j] = rᵀM⁻¹r for j in cols.
func (c *cgSolver) restart(cols []int) {
	n, m, k := c.st.N, c.st.M, len(cols)
	if k == 0 {
		return
	}
	z := c.precondCols(cols)
	cs := c.st.CG
	for _, j := range cols {
		cs.RZ[j] = 0
	}
	for i := 0; i < n; i++ {
		for a, j := range cols {
			cs.P[i*m+j] = z[i*k+a]
			cs.RZ[j] += c.st.R[i*m+j] * z[i*k+a]
		}
	}
}

// Iterate does one CG step on every unconverged column.
func (c *cgSolver) Iterate() error {
	if c.err != nil {
		return c.err
	}
	if c.Done() {
		return nil
	}
	st, cs := c.st, c.st.CG
	n, m := st.N, st.M
	c.act = activeCols(c.act, st.ColumnConverged)
	k := len(c.act)
	pa, qa := c.pa[:n*k], c.qa[:n*k]
	gatherCols(pa, cs.P, n, m, c.act)
	c.op.MulTo(mat.NewDense(n, k, qa), mat.NewDense(n, k, pa))
	st.Work.OperatorProducts += k
	if !allFinite(qa) {
		return c.fail(fmt.Errorf("%w: CG: the operator returned NaN or Inf for H·p at iteration %d: check the hyperparameters; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	pq := c.pq[:k]
	for a := range pq {
		pq[a] = 0
	}
	for i := 0; i < n; i++ {
		for a := range pq {
			pq[a] += pa[i*k+a] * qa[i*k+a]
		}
	}
	alpha := c.alpha[:k]
	for a, j := range c.act {
		if !(pq[a] > 0) {
			if math.IsNaN(pq[a]) || math.IsInf(pq[a], 0) {
				return c.fail(fmt.Errorf("%w: CG: pᵀHp is %v for column %d at iteration %d; %s", ErrNotFinite, pq[a], j, st.Iteration+1, pdAdvice))
			}
			return c.fail(fmt.Errorf("%w: CG: pᵀHp = %v ≤ 0 for column %d at iteration %d; %s", ErrNotPositiveDefinite, pq[a], j, st.Iteration+1, pdAdvice))
		}
		alpha[a] = cs.RZ[j] / pq[a]
	}
	for i := 0; i < n; i++ {
		for a, j := range c.act {
			st.V[i*m+j] += alpha[a] * pa[i*k+a]
			st.R[i*m+j] -= alpha[a] * qa[i*k+a]
		}
	}
	// z = M⁻¹r, β = r'z'/rz, p = z + βp.
	z := c.precondCols(c.act)
	rz := c.pq[:k] // reuse
	for a := range rz {
		rz[a] = 0
	}
	for i := 0; i < n; i++ {
		for a, j := range c.act {
			rz[a] += st.R[i*m+j] * z[i*k+a]
		}
	}
	for a, j := range c.act {
		beta := rz[a] / cs.RZ[j]
		cs.RZ[j] = rz[a]
		alpha[a] = beta // reuse
	}
	for i := 0; i < n; i++ {
		for a, j := range c.act {
			cs.P[i*m+j] = z[i*k+a] + alpha[a]*cs.P[i*m+j]
		}
	}
	// Candidates for convergence get their true residual checked.
	c.cand = c.cand[:0]
	for _, j := range c.act {
		st.RelResiduals[j] = c.relResidual(j)
		if st.RelResiduals[j] < st.Settings.tol(j) {
			c.cand = append(c.cand, j)
		}
	}
	if len(c.cand) > 0 {
		if err := c.trueResidual(c.cand); err != nil {
			return c.fail(err)
		}
		var again []int
		for _, j := range c.cand {
			st.RelResiduals[j] = c.relResidual(j)
			if st.RelResiduals[j] < st.Settings.tol(j) {
				st.ColumnConverged[j] = true
			} else {
				again = append(again, j)
			}
		}
		c.restart(again)
	}
	if !allFinite(st.RelResiduals) {
		return c.fail(fmt.Errorf("%w: CG: residual became NaN or Inf at iteration %d; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	st.Iteration++
	st.Converged = c.allConverged()
	c.record()
	return nil
}
