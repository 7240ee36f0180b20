package solvers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/enum"
)

// Defaults of SGD.
const (
	DefaultBatchSize    = 1000 // the paper's mini-batch size (appendix B)
	DefaultMomentum     = 0.9  // the paper's momentum
	DefaultLearningRate = 1.0  // this package's normalised step; see SGD
	// pcgStream is the second PCG seed word; the first is SGD.Seed.
	pcgStream = 0x9e3779b97f4a7c15
	// sgdDivergence: an estimated relative residual above this is an error.
	sgdDivergence = 1e8
)

// SGD is stochastic gradient descent on the paper's quadratic ½uᵀHu − uᵀb
// in block-coordinate form (Lin et al. 2023, 2024): each iteration draws a
// batch I of BatchSize distinct rows, evaluates g_I = H[I,:]V − B[I,:]
// (RowsMulTo) and moves only those coordinates, with heavy-ball momentum ρ
// and no averaging:
//
//	vel ← ρ·vel;  vel[I,:] −= η_I·g_I;  V += vel
//
// The batches come from a PCG generator seeded by Seed, so a seed fixes the
// solve. The step is normalised by the batch's curvature, so that one
// LearningRate suits H of any scale:
//
//	η_I = LearningRate · min((1−ρ)/max_{i∈I} H_ii, 1/λ̂_I),
//	λ̂_I = max_{i∈I} Σ_{j∈I} |H_ij| ≥ λ_max(H[I,I])  (Gershgorin; BlockTo)
//
// RawLearningRate instead takes the paper's unnormalised rates, η_I =
// RawLearningRate/|I| for every batch. A step too large is ErrDiverged.
//
// R is an estimate of the residual: B − H·V0 at Start (B under ResidualB),
// then −g_I on each batch's rows, so it mixes recent iterates. A stop that
// the estimates allow (the rule, MaxIterations or the budget) is confirmed
// with one product, b − H·V, unless NoVerify, so Converged refers to true
// residuals; columns that fail it iterate on. Settings.Freeze says whether
// a column that meets its tolerance stops, its momentum dropped, or
// iterates with the others (DESIGN.md says why that matters for SGD). A
// solve without progress for StallEpochs epochs is checked and may stop
// Stalled. Trace holds the estimates, and true residuals in a row that
// ends in a check.
type SGD struct {
	// BatchSize is |I|; 0 means DefaultBatchSize (1000). Capped at n.
	BatchSize int `json:"batch_size,omitempty"`
	// LearningRate is the normalised step (see above); 0 means
	// DefaultLearningRate (1.0). Setting it and RawLearningRate is
	// ErrSettings.
	LearningRate float64 `json:"learning_rate,omitempty"`
	// RawLearningRate, when > 0, is the paper's unnormalised learning rate:
	// each iteration moves the batch's coordinates by RawLearningRate/|I|
	// times their gradient (see above). 0 means the normalised step.
	RawLearningRate float64 `json:"raw_learning_rate,omitempty"`
	// Momentum ρ ∈ [0,1); 0 means DefaultMomentum (0.9). A negative value
	// turns momentum off (ρ = 0).
	Momentum float64 `json:"momentum,omitempty"`
	// Seed seeds the mini-batch sampler.
	Seed uint64 `json:"seed,omitempty"`
	// ResidualStart is where the residual estimate R starts: the true
	// residual B − H·V0 (ResidualTrue, the default) or B whatever V0
	// (ResidualB, as the authors' code does: no product, but a warm start
	// then begins with every estimate at 1 and nothing frozen).
	ResidualStart SGDResidualStart `json:"residual_start,omitempty"`
	// NoVerify stops on the estimated residuals, as the authors' code does,
	// without the true-residual product that otherwise confirms the stop
	// (and at MaxIterations replaces R); Converged then refers to the
	// estimates.
	NoVerify bool `json:"no_verify,omitempty"`
}

// SGDResidualStart is where SGD's residual estimate starts.
type SGDResidualStart int

const (
	// ResidualTrue starts the estimate at the true residual B − H·V0 (one
	// product when V0 is given). The default.
	ResidualTrue SGDResidualStart = iota
	// ResidualB starts it at B, whatever V0, as the authors' code does.
	ResidualB
)

var residualStartNames = enum.Enum[SGDResidualStart]{Type: "SGDResidualStart", What: "SGD residual start", Err: ErrSettings, Names: []string{"true", "b"}}

// String returns "true" or "b".
func (r SGDResidualStart) String() string { return residualStartNames.Name(r) }

// MarshalText returns String(), or an error for an unknown value.
func (r SGDResidualStart) MarshalText() ([]byte, error) { return residualStartNames.Marshal(r) }

// UnmarshalText parses true or b (case-insensitive).
func (r *SGDResidualStart) UnmarshalText(b []byte) error { return residualStartNames.Unmarshal(r, b) }

// SGDState is SGD's method-specific state.
type SGDState struct {
	Velocity      []float64 // momentum buffer, row-major N×M
	RNG           []byte    // PCG state (MarshalBinary)
	Perm          []int     // the sampler's permutation of 0..N−1
	Verifications int       // true-residual checks done
}

func (s *SGDState) clone() *SGDState {
	return &SGDState{
		Velocity:      append([]float64(nil), s.Velocity...),
		RNG:           append([]byte(nil), s.RNG...),
		Perm:          append([]int(nil), s.Perm...),
		Verifications: s.Verifications,
	}
}

// Name returns "sgd".
func (SGD) Name() string { return "sgd" }

const defaultSGDMaxIter = 50000

// Resolve returns m as it runs on an n×n operator, with every field
// explicit: BatchSize the effective batch (default filled in, capped at n),
// LearningRate the default when neither rate was set, Momentum the default
// when it was 0 (a negative value, no momentum, is kept). It returns the
// ErrSettings error that Start would return for invalid fields. Resolving
// a resolved SGD changes nothing.
func (m SGD) Resolve(n int) (SGD, error) {
	bs, lr, mom, err := m.resolved(n)
	if err != nil {
		return m, err
	}
	m.BatchSize = bs
	if m.RawLearningRate == 0 {
		m.LearningRate = lr
	}
	if m.Momentum == 0 {
		m.Momentum = mom
	}
	return m, nil
}

// HalfRate returns m with half its learning rate: RawLearningRate halved
// when it is set, LearningRate (its default filled in) otherwise. A solve
// that diverged (ErrDiverged) can be started again with it; gpnb does so
// on its own (gpnb.MaxRateBackoffs).
func (m SGD) HalfRate() SGD {
	switch {
	case m.RawLearningRate != 0:
		m.RawLearningRate /= 2
	case m.LearningRate != 0:
		m.LearningRate /= 2
	default:
		m.LearningRate = DefaultLearningRate / 2
	}
	return m
}

// resolved returns batch size, learning rate and momentum with defaults.
func (m SGD) resolved(n int) (int, float64, float64, error) {
	bs, lr, mom := m.BatchSize, m.LearningRate, m.Momentum
	if bs < 0 {
		return 0, 0, 0, fieldError("SGD.BatchSize", "SGD.BatchSize is %d: use a value > 0 (0 means %d)", bs, DefaultBatchSize)
	}
	if bs == 0 {
		bs = DefaultBatchSize
	}
	if bs > n {
		bs = n
	}
	if lr == 0 {
		lr = DefaultLearningRate
	}
	if !(lr > 0) || math.IsInf(lr, 0) {
		return 0, 0, 0, fieldError("SGD.LearningRate", "SGD.LearningRate is %v: use a finite value > 0 (0 means %v)", m.LearningRate, DefaultLearningRate)
	}
	if raw := m.RawLearningRate; raw != 0 {
		if !(raw > 0) || math.IsInf(raw, 0) {
			return 0, 0, 0, fieldError("SGD.RawLearningRate", "SGD.RawLearningRate is %v: use a finite value > 0 (the paper's per-dataset rates are 20-100), or 0 for the normalised LearningRate", raw)
		}
		if m.LearningRate != 0 {
			return 0, 0, 0, fieldError("SGD.LearningRate", "SGD has both LearningRate (%v) and RawLearningRate (%v): set one of them", m.LearningRate, raw)
		}
	}
	switch {
	case mom == 0:
		mom = DefaultMomentum
	case mom < 0:
		mom = 0
	}
	if m.ResidualStart != ResidualTrue && m.ResidualStart != ResidualB {
		return 0, 0, 0, fieldError("SGD.ResidualStart", "SGD.ResidualStart is %d: use ResidualTrue or ResidualB", int(m.ResidualStart))
	}
	if !(mom < 1) {
		return 0, 0, 0, fieldError("SGD.Momentum", "SGD.Momentum is %v: use a value in [0,1) (0 means %v, negative means none)", m.Momentum, DefaultMomentum)
	}
	return bs, lr, mom, nil
}

// Start returns an SGD solver; see Method.
func (m SGD) Start(op Operator, B, V0 *mat.Dense, s Settings) (Solver, error) {
	n, err := checkOperator(op)
	if err != nil {
		return nil, err
	}
	bs, _, _, err := m.resolved(n)
	if err != nil {
		return nil, err
	}
	b, st, err := begin(m.Name(), n, B, V0, s, defaultSGDMaxIter, bs)
	if err != nil {
		return nil, err
	}
	pcg := rand.NewPCG(m.Seed, pcgStream)
	rng, _ := pcg.MarshalBinary()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	st.SGD = &SGDState{Velocity: make([]float64, n*st.M), RNG: rng, Perm: perm}
	g, err := newSGDSolver(op, b, st, m)
	if err != nil {
		return nil, err
	}
	if err := g.finishStart(V0 == nil || m.ResidualStart == ResidualB, nil); err != nil {
		return nil, err
	}
	return g, nil
}

func (m SGD) resume(op Operator, b *mat.Dense, st *State) (Solver, error) {
	if st.SGD == nil || len(st.SGD.Velocity) != st.N*st.M || len(st.SGD.Perm) != st.N {
		return nil, fmt.Errorf("%w: state has no valid SGD part: it was not saved from an SGD solver", ErrShape)
	}
	seen := make([]bool, st.N)
	for _, p := range st.SGD.Perm {
		if p < 0 || p >= st.N || seen[p] {
			return nil, fmt.Errorf("%w: state's SGD permutation is not a permutation of 0..%d", ErrShape, st.N-1)
		}
		seen[p] = true
	}
	return newSGDSolver(op, b, st, m)
}

type sgdSolver struct {
	core
	bs      int
	lr, mom float64
	raw     float64 // RawLearningRate; 0: normalised step lr
	joint   bool    // Settings.Freeze FreezeJoint
	verify  bool    // !SGD.NoVerify
	pcg     *rand.PCG
	rng     *rand.Rand
	act     []int
	idx     []int
	batch   Index // idx in the space
	vel     Block // momentum buffer
	g       Block // bs×m: H[I,:]V, then B[I,:] − H[I,:]V
	bi      Block // bs×m: B[I,:]
	frozen  []int
	sym     *mat.SymDense // H[I,I] and its row sums: normalised step only,
	rowsum  []float64     // allocated by the first curvature call
}

func newSGDSolver(op Operator, b *mat.Dense, st *State, m SGD) (*sgdSolver, error) {
	bs, lr, mom, err := m.resolved(st.N)
	if err != nil {
		return nil, err
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(st.SGD.RNG); err != nil {
		return nil, fmt.Errorf("%w: state's SGD generator state is invalid: %v", ErrShape, err)
	}
	s := &sgdSolver{
		bs:     bs,
		lr:     lr,
		raw:    m.RawLearningRate,
		joint:  st.Settings.Freeze == FreezeJoint,
		verify: !m.NoVerify,
		mom:    mom,
		pcg:    pcg,
		rng:    rand.New(pcg),
		act:    make([]int, 0, st.M),
		idx:    make([]int, 0, bs),
		frozen: make([]int, 0, st.M),
	}
	if err := s.init(op, b, st); err != nil {
		return nil, err
	}
	err = s.setIterationRows(bs)
	if err == nil {
		err = s.bind(&s.vel, st.SGD.Velocity, st.N, st.M)
	}
	if err == nil {
		s.g, err = s.sp.NewBlock(bs, st.M)
	}
	if err == nil {
		s.bi, err = s.sp.NewBlock(bs, st.M)
	}
	if err == nil {
		// Any valid indices: sample sets the batch before every use.
		s.idx = sortedCopy(s.idx, st.SGD.Perm[:bs])
		s.batch, err = s.sp.NewIndex(s.idx)
	}
	if err != nil {
		_ = s.sp.Close()
		return nil, err
	}
	return s, nil
}

// sample draws the next mini-batch into s.idx, sorted, and sends it to the
// space.
func (s *sgdSolver) sample() error {
	perm := s.st.SGD.Perm
	n := len(perm)
	for i := 0; i < s.bs; i++ {
		j := i + s.rng.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	s.idx = sortedCopy(s.idx, perm[:s.bs])
	return s.sp.SetIndex(s.batch, s.idx)
}

// curvature returns the Gershgorin bound max_i Σ_j |H[I,I]_ij| and the
// largest diagonal entry of H[I,I]. It reads H[I,I] through the Operator
// on the host (bs² entries), as only the normalised step needs it.
func (s *sgdSolver) curvature() (lam, dmax float64) {
	if s.sym == nil { // only the normalised step reads H[I,I]
		s.sym, s.rowsum = mat.NewSymDense(s.bs, nil), make([]float64, s.bs)
	}
	s.op.BlockTo(s.sym, s.idx)
	s.st.Work.BlockEntries += s.bs * s.bs
	raw := s.sym.RawSymmetric()
	rs := s.rowsum
	for i := range rs {
		rs[i] = 0
	}
	for i := 0; i < s.bs; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+s.bs]
		rs[i] += math.Abs(row[i])
		for j := i + 1; j < s.bs; j++ {
			a := math.Abs(row[j])
			rs[i] += a
			rs[j] += a
		}
	}
	mx, dmin := 0.0, math.Inf(1)
	for i, v := range rs {
		mx = math.Max(mx, v)
		d := raw.Data[i*raw.Stride+i]
		dmax = math.Max(dmax, d)
		dmin = math.Min(dmin, d)
	}
	if !(dmin > 0) {
		return mx, dmin // not positive definite (or NaN): the caller reports it
	}
	return mx, dmax
}

// active appends to dst[:0] the columns the next batch works on: the
// unconverged ones (FreezeColumn), or every column with a non-zero
// right-hand side (FreezeJoint).
func (s *sgdSolver) active(dst []int) []int {
	if !s.joint {
		return activeCols(dst, s.st.ColumnConverged)
	}
	dst = dst[:0]
	for j, bn := range s.st.BNorms {
		if bn != 0 {
			dst = append(dst, j)
		}
	}
	return dst
}

// Iterate processes one mini-batch.
func (s *sgdSolver) Iterate() error {
	if err := s.stopped(); err != nil {
		return err
	}
	if s.Done() {
		return nil
	}
	st, ss := s.st, s.st.SGD
	s.act = s.active(s.act)
	k := len(s.act)
	if err := s.sample(); err != nil {
		return s.fail(fmt.Errorf("solvers: SGD: the operator's space failed: %w", err))
	}
	// g = H[I,:]V − B[I,:] is the batch's gradient; the space keeps its
	// negative, B[I,:] − H[I,:]V, the true residual of the batch's rows.
	s.sp.MulRows(s.g, s.batch, s.v, s.act)
	st.Work.RowEvaluations += s.bs
	s.sp.GatherRows(s.bi, s.batch, s.bb, s.act)
	s.sp.Xpby(s.g, s.bi, s.negOnes[:k], s.act)
	sq, err := s.dots(s.g, s.g, s.act)
	if err != nil {
		return s.fail(err)
	}
	if !allFinite(sq) {
		return s.fail(fmt.Errorf("%w: SGD: the operator returned NaN or Inf at iteration %d: check the hyperparameters; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
	}
	var eta float64
	if s.raw > 0 {
		eta = s.raw / float64(s.bs)
	} else {
		lam, dmax := s.curvature()
		if math.IsNaN(lam) || math.IsInf(lam, 0) || math.IsNaN(dmax) {
			return s.fail(fmt.Errorf("%w: SGD: the operator returned NaN or Inf at iteration %d: check the hyperparameters; %s", ErrNotFinite, st.Iteration+1, pdAdvice))
		}
		if !(dmax > 0) {
			return s.fail(fmt.Errorf("%w: SGD: a diagonal entry of H is ≤ 0 (batch of iteration %d); %s", ErrNotPositiveDefinite, st.Iteration+1, pdAdvice))
		}
		eta = s.lr * math.Min((1-s.mom)/dmax, 1/lam)
	}
	// Momentum decays everywhere (ρ = 0 clears it); the gradient lands on
	// the batch: vel[I,:] −= η·g = vel[I,:] + η·(−g).
	s.sp.Scale(s.vel, s.fill(k, s.mom), s.act)
	s.sp.ScatterRows(s.r, s.batch, s.g, s.act) // R[I,:] is the true residual of the pre-step V
	s.sp.AxpyRows(s.vel, s.batch, s.fill(k, eta), s.g, s.act)
	s.sp.Axpy(s.v, s.ones[:k], s.vel, s.act)
	st.Iteration++
	st.Rows += s.bs
	rr, err := s.dots(s.r, s.r, s.act)
	if err != nil {
		return s.fail(err)
	}
	s.setResiduals(rr, s.act, false)
	diverged := -1
	s.frozen = s.frozen[:0]
	for _, j := range s.act {
		r := st.RelResiduals[j]
		if !(r < sgdDivergence) {
			diverged = j
		}
		if r < st.Settings.tol(j) {
			st.ColumnConverged[j] = true
			if !s.joint {
				s.frozen = append(s.frozen, j)
			}
		} else if s.joint {
			st.ColumnConverged[j] = false
		}
	}
	if len(s.frozen) > 0 {
		s.sp.Scale(s.vel, s.fill(len(s.frozen), 0), s.frozen)
	}
	if diverged >= 0 {
		rate := fmt.Sprintf("LearningRate (now %v)", s.lr)
		if s.raw > 0 {
			rate = fmt.Sprintf("RawLearningRate (now %v)", s.raw)
		}
		return s.fail(fmt.Errorf("%w: SGD: estimated relative residual of column %d is %v at iteration %d: lower %s", ErrDiverged, diverged, st.RelResiduals[diverged], st.Iteration, rate))
	}
	// Under the default rules met() is "every column frozen".
	if s.verify && (s.met() || st.Iteration >= st.Settings.MaxIterations || s.outOfBudget()) {
		sq, err := s.trueResidual(nil)
		if err != nil {
			return s.fail(err)
		}
		ss.Verifications++
		s.setResiduals(sq, nil, true)
	}
	st.Converged = s.met()
	// The check above made the residuals true ones (unless NoVerify).
	if err := s.budgetStop(false); err != nil {
		return s.fail(err)
	}
	out, err := s.watch()
	if err != nil {
		return s.fail(err)
	}
	if out != watchOn {
		ss.Verifications++
	}
	ss.RNG, _ = s.pcg.AppendBinary(ss.RNG[:0])
	s.record()
	return nil
}
