package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Default tolerances of the paper (appendix B): ‖H v − b‖/‖b‖ < 0.01 for the
// mean system (column 0) and < 0.1 for the probe systems (columns ≥ 1).
const (
	DefaultRelTolMean   = 0.01
	DefaultRelTolProbes = 0.1
)

// DefaultMaxIterations returns the iteration cap a method uses when
// Settings.MaxIterations is 0 (cg 1000, ap 20000 block updates, sgd 50000
// mini-batches, cholesky 1), and false for an unknown method name.
func DefaultMaxIterations(method string) (int, bool) {
	switch method {
	case "cg":
		return defaultCGMaxIter, true
	case "ap":
		return defaultAPMaxIter, true
	case "sgd":
		return defaultSGDMaxIter, true
	case "cholesky":
		return 1, true
	}
	return 0, false
}

// Sentinel errors. Solver errors wrap one of these, so callers can test them
// with errors.Is; the wrapping message says what to do.
var (
	// ErrNotPositiveDefinite: the operator is not (numerically) symmetric
	// positive definite: a Cholesky factorisation failed or CG met a
	// direction with pᵀHp ≤ 0. Increase the noise σ (or add jitter).
	ErrNotPositiveDefinite = errors.New("solvers: operator is not positive definite")
	// ErrNotFinite: a NaN or Inf appeared in the input or in the iteration.
	ErrNotFinite = errors.New("solvers: value is not finite")
	// ErrDiverged: SGD's residual grew without bound; lower the learning rate.
	ErrDiverged = errors.New("solvers: iteration diverged")
	// ErrShape: an input has the wrong dimensions, or a State does not fit
	// the operator, right-hand sides or method it is resumed with.
	ErrShape = errors.New("solvers: dimension mismatch")
	// ErrSettings: a Settings or Method field is out of range.
	ErrSettings = errors.New("solvers: invalid settings")
	// ErrClosed: Iterate was called after Close.
	ErrClosed = errors.New("solvers: the solver is closed")
)

// FieldError is the ErrSettings error of a field with a bad value: Field
// names it, with its method's name for a method's parameter ("RelTolMean",
// "SGD.Momentum"). errors.Is(err, ErrSettings) holds.
type FieldError struct {
	Field string
	msg   string
}

func (e *FieldError) Error() string { return ErrSettings.Error() + ": " + e.msg }

// Is reports whether target is ErrSettings.
func (e *FieldError) Is(target error) bool { return target == ErrSettings }

// fieldError returns a FieldError about field whose message is format's.
func fieldError(field, format string, a ...any) error {
	return &FieldError{Field: field, msg: fmt.Sprintf(format, a...)}
}

const pdAdvice = "increase the noise σ (or add jitter to the diagonal) so that H = K + σ²I is well conditioned"

// Settings are the stopping rules shared by every method. The zero value
// means the paper's defaults.
type Settings struct {
	// RelTolMean is the relative residual tolerance ‖H v_0 − b_0‖/‖b_0‖ of
	// column 0, the mean system. 0 means DefaultRelTolMean (0.01).
	RelTolMean float64 `json:"rel_tol_mean,omitempty"`
	// RelTolProbes is the tolerance of columns 1..m−1, the probe systems.
	// 0 means DefaultRelTolProbes (0.1).
	RelTolProbes float64 `json:"rel_tol_probes,omitempty"`
	// MaxIterations bounds the number of Iterate calls. 0 means the
	// method's default: CG 1000, AP 20000 block updates, SGD 50000
	// mini-batches, Cholesky 1. When it is reached before convergence the
	// solver is Done but not Converged.
	MaxIterations int `json:"max_iterations,omitempty"`
	// MaxEpochs, when > 0, sets the cap in passes over the data instead,
	// as the authors' code does (max_epochs, 1000 there): ⌈MaxEpochs·n/b⌉
	// iterations, b the rows of H one iteration touches (CG n, so epochs
	// are iterations; AP its block size; SGD its batch size). The solver
	// computes it at Start, when n is known, and stores it in the State's
	// MaxIterations. Set MaxIterations or MaxEpochs, not both.
	MaxEpochs float64 `json:"max_epochs,omitempty"`
	// ProbeRule applies RelTolProbes to every probe column (ProbeEach, the
	// default: the paper's "all linear systems") or to their mean
	// (ProbeMean, the authors' code).
	ProbeRule ProbeRule `json:"probe_rule,omitempty"`
	// Freeze says whether CG and SGD stop working on a column once it meets
	// its tolerance (FreezeColumn, the default) or iterate every column
	// until the whole rule is met (FreezeJoint, the authors' code).
	Freeze Freeze `json:"freeze,omitempty"`
	// Budget bounds the work of one solve in epochs, passes over the rows
	// of H (State.Epochs: a CG iteration 1, an AP block or SGD batch
	// |I|/n; Lin et al. 2024's "solver epochs"). The solver stops before
	// an iteration that would exceed it, Done but not Converged, with
	// State.BudgetSpent set: a planned stop, unlike the MaxEpochs cap.
	// Products that only check a solution are not charged. 0 means none; a
	// budget below one iteration is ErrSettings at Start.
	Budget float64 `json:"budget,omitempty"`
}

// Resolve returns s as method m will apply it: zero fields replaced by
// their defaults (the tolerances' and m's MaxIterations, see
// DefaultMaxIterations; MaxIterations stays 0 when MaxEpochs is set, as
// the cap then depends on n), or the ErrSettings error that m's Start would
// return. Resolving a resolved Settings changes nothing.
func (s Settings) Resolve(m Method) (Settings, error) {
	if m == nil {
		return s, fmt.Errorf("%w: no method to resolve the settings for: pass CG, AP, SGD or Cholesky", ErrSettings)
	}
	if err := s.checkCap(); err != nil {
		return s, err
	}
	if s.MaxEpochs > 0 { // the cap is ⌈MaxEpochs·n/b⌉, known at Start
		r, err := s.withDefaults(1)
		r.MaxIterations = 0
		return r, err
	}
	max, ok := DefaultMaxIterations(m.Name())
	if !ok {
		if s.MaxIterations == 0 {
			return s, fieldError("MaxIterations", "method %q has no default MaxIterations: set one", m.Name())
		}
		max = s.MaxIterations
	}
	return s.withDefaults(max)
}

// withDefaults validates s and fills in zero values.
func (s Settings) withDefaults(defaultMax int) (Settings, error) {
	if s.RelTolMean == 0 {
		s.RelTolMean = DefaultRelTolMean
	}
	if s.RelTolProbes == 0 {
		s.RelTolProbes = DefaultRelTolProbes
	}
	if s.MaxIterations == 0 {
		s.MaxIterations = defaultMax
	}
	if !(s.RelTolMean > 0) || math.IsInf(s.RelTolMean, 0) {
		return s, fieldError("RelTolMean", "RelTolMean is %v: use a finite value > 0 (0 means the default %v)", s.RelTolMean, DefaultRelTolMean)
	}
	if !(s.RelTolProbes > 0) || math.IsInf(s.RelTolProbes, 0) {
		return s, fieldError("RelTolProbes", "RelTolProbes is %v: use a finite value > 0 (0 means the default %v)", s.RelTolProbes, DefaultRelTolProbes)
	}
	if s.MaxIterations < 0 {
		return s, fieldError("MaxIterations", "MaxIterations is %d: use a value ≥ 1 (0 means the method's default)", s.MaxIterations)
	}
	if !(s.Budget >= 0) || math.IsInf(s.Budget, 0) {
		return s, fieldError("Budget", "Budget is %v: use a finite number of epochs ≥ 0 (0 means no budget)", s.Budget)
	}
	return s, s.checkRules()
}

// tol returns the tolerance of column j.
func (s Settings) tol(j int) float64 {
	if j == 0 {
		return s.RelTolMean
	}
	return s.RelTolProbes
}

// Method is a solver's configuration: a plain-data value (CG, AP, SGD or
// Cholesky) that serialises with encoding/json and encoding/gob.
type Method interface {
	// Name is the method's name as ParseMethod and State.Method spell it.
	Name() string
	// Start validates the inputs and returns a solver for H V = B, with
	// op = H, B n×m and initial guess V0 (nil means zeros; a warm start
	// passes the previous solution). Start does no iterations, but it
	// computes the initial residual B − H·V0 (one product with H unless V0
	// is nil). Start copies B and V0; the caller may reuse them.
	Start(op Operator, B, V0 *mat.Dense, s Settings) (Solver, error)
}

// resumer is implemented by every method of this package.
type resumer interface {
	resume(op Operator, b *mat.Dense, st *State) (Solver, error)
}

// Solver iterates towards the solution of H V = B. It is a step-wise object:
// every Iterate leaves it at an iteration boundary whose whole state is the
// exported State, so a solve can be stopped, saved and continued by Resume.
//
// A solver keeps its vectors (V, R and the method's own) in a Space: host
// memory for most operators, device memory for a SpaceOperator such as a
// GPU backend. Iterating moves only scalars between the space and the
// solver; State and Solution download the vectors when they are called, and
// Progress reads the scalars without touching the vectors.
type Solver interface {
	// Iterate does one iteration: a CG step over the unconverged columns,
	// one AP block update, one SGD mini-batch, or the Cholesky solve. After
	// Done it does nothing and returns nil. An error (ErrNotPositiveDefinite,
	// ErrNotFinite, ErrDiverged) makes Done true and is returned again by
	// later calls; failures found before the update (a non-finite operator
	// product, pᵀHp ≤ 0, a failed factorisation) leave the state of the last
	// good iteration. After Close it returns ErrClosed.
	Iterate() error
	// Done reports whether iterating is over: converged, MaxIterations
	// reached, failed, or closed.
	Done() bool
	// Converged reports whether the stopping rule is met (see Settings):
	// under the default rules, every column met its tolerance.
	Converged() bool
	// State brings the solver's State up to date and returns it: the
	// scalars are always current, the vectors are downloaded from the
	// space (on the host space they are the solver's own storage, so
	// nothing is copied). The solver keeps updating the same value: call
	// State again after Iterate to see the new vectors, and use
	// State().Clone() for a snapshot. A failure to download fails the
	// solver (Iterate returns it).
	State() *State
	// Solution returns V (n×m), a view of State().V brought up to date.
	Solution() *mat.Dense
	// Progress returns the scalars of the state, without downloading any
	// vector: what a progress display or a per-iteration hook needs.
	Progress() Progress
	// Close brings the State up to date (as State does) and releases what
	// the solver holds in its space (device memory of a GPU operator), and
	// returns a failure to do either. State, Solution and Progress keep
	// working afterwards; Iterate returns ErrClosed (or the error that had
	// stopped the solver). Closing twice does nothing. On the host space
	// nothing needs releasing, so a solver that is not closed costs only
	// garbage.
	Close() error
}

// Progress is the scalar part of a solver's State, as Solver.Progress
// returns it. Its slices are views of the State's, valid until the next
// Iterate: copy them to keep them.
type Progress struct {
	Iteration       int       `json:"iteration"`        // completed iterations
	RelResiduals    []float64 `json:"rel_residuals"`    // ‖R[:,j]‖/‖b_j‖ (see State)
	ColumnConverged []bool    `json:"column_converged"` // columns that met their tolerance
	Converged       bool      `json:"converged"`        // the stopping rule is met
	Work            Work      `json:"work"`             // cost so far
}

// Work counts what a solve has cost so far, in units that compare across
// methods. A product of H with a batch of k columns counts k
// OperatorProducts; one row (or, by symmetry, one column) of H multiplied
// into any number of columns counts one RowEvaluation. Work actually done is
// counted: resuming counts again what must be recomputed (AP's block
// factors, CG's preconditioner).
type Work struct {
	OperatorProducts    int `json:"operator_products"`    // column-products with the full H (MulTo)
	RowEvaluations      int `json:"row_evaluations"`      // rows or columns of H used (RowsMulTo, ColsMulTo)
	BlockEntries        int `json:"block_entries"`        // entries of H evaluated by BlockTo
	BlockFactorisations int `json:"block_factorisations"` // Cholesky factorisations (AP blocks, Cholesky)
}

// Plus returns the work of w and o together.
func (w Work) Plus(o Work) Work {
	return Work{
		OperatorProducts:    w.OperatorProducts + o.OperatorProducts,
		RowEvaluations:      w.RowEvaluations + o.RowEvaluations,
		BlockEntries:        w.BlockEntries + o.BlockEntries,
		BlockFactorisations: w.BlockFactorisations + o.BlockFactorisations,
	}
}

// State is the whole state of a solve, as plain exported data: it
// serialises with encoding/gob and encoding/json, and Resume continues from
// it with bit-identical results.
type State struct {
	Method    string // "cg", "ap", "sgd" or "cholesky"
	N, M      int    // H is N×N; V, R and B are N×M
	Iteration int    // number of completed iterations

	V []float64 // current solution, row-major N×M
	// R is the residual B − H·V, row-major N×M: true (up to rounding) for
	// CG, AP and Cholesky; SGD keeps an estimate (see SGD).
	R []float64
	// BNorms[j] = ‖b_j‖₂, kept to check that Resume gets the same B.
	BNorms []float64

	// RelResiduals[j] = ‖R[:,j]‖/‖b_j‖, current (0 for a zero column).
	RelResiduals []float64
	// ColumnConverged[j] reports whether column j met its tolerance; CG and
	// SGD spend no more work on such columns (Settings.Freeze FreezeColumn).
	ColumnConverged []bool
	// Trace[t][j] is column j's relative residual after iteration t;
	// Trace[0] is the initial guess's.
	Trace [][]float64

	Converged bool // the stopping rule is met (true residuals but for SGD.NoVerify)
	Work      Work
	Settings  Settings // with defaults filled in

	// Rows counts the rows of H the iterations have read (n per CG
	// iteration, |I| per AP block update or SGD mini-batch), the spending
	// that Settings.Budget bounds; Epochs is Rows/N. Unlike Work it
	// counts iterations, not products, so it is the same on resume.
	Rows int
	// BudgetSpent reports that the solve stopped, not converged, because
	// its next iteration would have taken it past Settings.Budget. Its
	// RelResiduals (and the last Trace row) are then true residuals
	// b − Hv: computed with one product for CG and SGD, whose running
	// residuals are a recurrence and an estimate; AP's is exact.
	BudgetSpent bool `json:",omitempty"`
	// Stalled reports that the solve stopped, not converged, because its
	// true residual stopped falling (R and RelResiduals are then true
	// residuals). CG and AP: three failed checks of b − Hv in a row, each
	// above 0.9 times the one before, the products' rounding being the
	// floor. SGD and AP: no progress for StallEpochs epochs (see there).
	// DESIGN.md lists the causes and what helps.
	Stalled bool `json:",omitempty"`
	// Watch is SGD's and AP's record of their progress, which detects a
	// stall; nil for CG and Cholesky, and in states saved before it was
	// kept (it then starts afresh on Resume).
	Watch *StallWatch `json:",omitempty"`

	// Method-specific state; only the one of Method is non-nil.
	CG       *CGState       `json:",omitempty"`
	AP       *APState       `json:",omitempty"`
	SGD      *SGDState      `json:",omitempty"`
	Cholesky *CholeskyState `json:",omitempty"`
}

// StallEpochs is how many epochs (passes over the rows of H, see
// State.Epochs) an SGD or AP solve may run without its measure of the
// distance to the stopping rule (the largest residual over its tolerance;
// for SGD of the estimated residuals) reaching a new low before its true
// residual is checked: one product for SGD, none for AP, whose residual is
// exact. A check that finds the true measure no lower than at every earlier
// check of the solve is a miss, and stallMisses misses in a row stop the
// solve as Stalled. A solve that converges, however slowly, keeps reaching
// new lows (or, at its checks, lower true residuals); one whose residual
// only fluctuates does not.
const StallEpochs = 50

// stallMisses is the number of stall checks in a row that must find no
// progress before an SGD or AP solve stops as Stalled (see StallEpochs).
const stallMisses = 2

// StallWatch is what SGD and AP remember of their progress (see
// StallEpochs).
type StallWatch struct {
	Low     float64 // the lowest measure reached (SGD: of the estimates); 0 before the first iteration
	LowRows int     // State.Rows when Low was reached, or at the last check
	Checked float64 // the lowest true measure found by a check; 0 before the first check
	Misses  int     // checks in a row that found no true measure below Checked
}

// Clone returns a deep copy of st.
func (st *State) Clone() *State {
	c := *st
	if st.Watch != nil {
		w := *st.Watch
		c.Watch = &w
	}
	c.V = append([]float64(nil), st.V...)
	c.R = append([]float64(nil), st.R...)
	c.BNorms = append([]float64(nil), st.BNorms...)
	c.RelResiduals = append([]float64(nil), st.RelResiduals...)
	c.ColumnConverged = append([]bool(nil), st.ColumnConverged...)
	c.Trace = make([][]float64, len(st.Trace))
	for i, t := range st.Trace {
		c.Trace[i] = append([]float64(nil), t...)
	}
	if st.CG != nil {
		c.CG = st.CG.clone()
	}
	if st.AP != nil {
		c.AP = st.AP.clone()
	}
	if st.SGD != nil {
		c.SGD = st.SGD.clone()
	}
	if st.Cholesky != nil {
		ch := *st.Cholesky
		c.Cholesky = &ch
	}
	return &c
}

// Epochs returns the epochs (passes over the rows of H) the iterations of
// the solve have cost: Rows/N. See Settings.Budget.
func (st *State) Epochs() float64 {
	if st.N == 0 {
		return 0
	}
	return float64(st.Rows) / float64(st.N)
}

// ParseMethod returns the method with default configuration for a name:
// "cg", "ap", "sgd" or "cholesky" (case-insensitive).
func ParseMethod(name string) (Method, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "cg":
		return CG{}, nil
	case "ap":
		return AP{}, nil
	case "sgd":
		return SGD{}, nil
	case "cholesky", "chol", "exact":
		return Cholesky{}, nil
	}
	return nil, fmt.Errorf("solvers: unknown solver %q: use one of cg, ap, sgd, cholesky", name)
}

// Resume continues the solve saved in st, with the operator, method and
// right-hand sides it was started with. It checks that shapes, method name
// and ‖b_j‖ agree with st, recomputes what is not stored (block factors,
// preconditioner), and takes st over: the solver updates it in place. To
// allow more iterations, raise st.Settings.MaxIterations before resuming.
func Resume(op Operator, m Method, B *mat.Dense, st *State) (Solver, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil Method: pass the method the solve was started with (%s)", ErrSettings, stMethod(st))
	}
	if st == nil {
		return nil, fmt.Errorf("%w: nil State: pass a State saved from a solver", ErrShape)
	}
	if st.Method != m.Name() {
		return nil, fmt.Errorf("%w: state is of method %q, not %q: resume with the method that started it", ErrShape, st.Method, m.Name())
	}
	r, ok := m.(resumer)
	if !ok {
		return nil, fmt.Errorf("solvers: method %T cannot resume", m)
	}
	n, err := checkOperator(op)
	if err != nil {
		return nil, err
	}
	if st.N != n {
		return nil, fmt.Errorf("%w: state has n = %d but the operator has n = %d", ErrShape, st.N, n)
	}
	b, err := checkB(B, n)
	if err != nil {
		return nil, err
	}
	if _, mm := b.Dims(); mm != st.M {
		return nil, fmt.Errorf("%w: state has %d right-hand sides but B has %d columns", ErrShape, st.M, mm)
	}
	nm := st.N * st.M
	if len(st.V) != nm || len(st.R) != nm || len(st.BNorms) != st.M || len(st.RelResiduals) != st.M || len(st.ColumnConverged) != st.M || len(st.Trace) != st.Iteration+1 {
		return nil, fmt.Errorf("%w: state is inconsistent (V %d, R %d, BNorms %d, RelResiduals %d, ColumnConverged %d values for %d×%d; %d trace rows for %d iterations): it was not saved from a solver", ErrShape, len(st.V), len(st.R), len(st.BNorms), len(st.RelResiduals), len(st.ColumnConverged), st.N, st.M, len(st.Trace), st.Iteration)
	}
	norms := colNorms(b)
	for j, v := range norms {
		if v != st.BNorms[j] {
			return nil, fmt.Errorf("%w: column %d of B has norm %v but the state was started with norm %v: resume with the same right-hand sides", ErrShape, j, v, st.BNorms[j])
		}
	}
	if _, err := st.Settings.withDefaults(1); err != nil {
		return nil, err
	}
	if err := checkFinite(st.V, "state V"); err != nil {
		return nil, err
	}
	return r.resume(op, b, st)
}

func stMethod(st *State) string {
	if st == nil {
		return "?"
	}
	return st.Method
}

// Run calls Iterate until the solver is Done, an error occurs, or ctx is
// cancelled; cancellation returns ctx.Err() with the state at an iteration
// boundary, ready to save and Resume. Reaching MaxIterations is not an
// error: check Converged.
func Run(ctx context.Context, s Solver) error {
	for !s.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.Iterate(); err != nil {
			return err
		}
	}
	return nil
}

// Solve is Start followed by Run: it returns the solver, whose State and
// Solution hold the result, and the first error.
func Solve(ctx context.Context, op Operator, m Method, B, V0 *mat.Dense, s Settings) (Solver, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil Method: use CG{}, AP{}, SGD{} or Cholesky{}", ErrSettings)
	}
	sv, err := m.Start(op, B, V0, s)
	if err != nil {
		return nil, err
	}
	return sv, Run(ctx, sv)
}

// checkOperator returns op.Size() or an error.
func checkOperator(op Operator) (int, error) {
	if op == nil {
		return 0, fmt.Errorf("%w: nil Operator", ErrShape)
	}
	n := op.Size()
	if n <= 0 {
		return 0, fmt.Errorf("%w: operator has size %d: it needs at least one data point", ErrShape, n)
	}
	return n, nil
}

// checkB checks B is n×m, m ≥ 1, finite, and returns a contiguous copy.
func checkB(B *mat.Dense, n int) (*mat.Dense, error) {
	if B == nil || B.IsEmpty() {
		return nil, fmt.Errorf("%w: B is empty: pass the n×m right-hand sides [y, z_1..z_s]", ErrShape)
	}
	if r, _ := B.Dims(); r != n {
		return nil, fmt.Errorf("%w: B has %d rows but the operator is %d×%d", ErrShape, B.RawMatrix().Rows, n, n)
	}
	b := mat.DenseCopyOf(B)
	if err := checkFinite(b.RawMatrix().Data, "B"); err != nil {
		return nil, err
	}
	return b, nil
}

// checkV0 returns a contiguous copy of V0 (zeros when nil).
func checkV0(V0 *mat.Dense, n, m int) ([]float64, error) {
	v := make([]float64, n*m)
	if V0 == nil {
		return v, nil
	}
	if V0.IsEmpty() {
		return nil, fmt.Errorf("%w: V0 is empty: pass nil for a zero initial guess", ErrShape)
	}
	r, c := V0.Dims()
	if r != n || c != m {
		return nil, fmt.Errorf("%w: V0 is %d×%d but B is %d×%d: a warm start needs the previous solution of the same shape", ErrShape, r, c, n, m)
	}
	for i := 0; i < n; i++ {
		copy(v[i*m:(i+1)*m], V0.RawRowView(i))
	}
	if err := checkFinite(v, "V0"); err != nil {
		return nil, err
	}
	return v, nil
}

func checkFinite(x []float64, what string) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s has %v at index %d: remove or impute non-finite values", ErrNotFinite, what, v, i)
		}
	}
	return nil
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// colNorms returns the Euclidean norm of each column of a contiguous b.
func colNorms(b *mat.Dense) []float64 {
	raw := b.RawMatrix()
	out := make([]float64, raw.Cols)
	sumSqCols(out, raw.Data, raw.Rows, raw.Cols)
	for j := range out {
		out[j] = math.Sqrt(out[j])
	}
	return out
}

// sumSqCols sets dst[j] = Σ_i x[i*m+j]² for row-major n×m x (rows summed
// in order, so the result is deterministic).
func sumSqCols(dst, x []float64, n, m int) {
	for j := range dst[:m] {
		dst[j] = 0
	}
	for i := 0; i < n; i++ {
		row := x[i*m : (i+1)*m]
		for j, v := range row {
			dst[j] += v * v
		}
	}
}

// begin validates the arguments every Method.Start shares and returns a
// contiguous copy of B and a fresh State at V0 (zeros when V0 is nil), with
// the settings' defaults filled in: MaxIterations is defaultMaxIter, or
// the cap of MaxEpochs for a method touching rows rows of H per iteration.
func begin(method string, n int, B, V0 *mat.Dense, s Settings, defaultMaxIter, rows int) (*mat.Dense, *State, error) {
	if err := s.checkCap(); err != nil {
		return nil, nil, err
	}
	if err := s.checkRules(); err != nil {
		return nil, nil, err
	}
	if s.MaxEpochs > 0 {
		defaultMaxIter = EpochIterations(s.MaxEpochs, n, rows)
	}
	b, err := checkB(B, n)
	if err != nil {
		return nil, nil, err
	}
	_, nc := b.Dims()
	v, err := checkV0(V0, n, nc)
	if err != nil {
		return nil, nil, err
	}
	s, err = s.withDefaults(defaultMaxIter)
	if err != nil {
		return nil, nil, err
	}
	return b, newState(method, n, nc, v, b, s), nil
}

// newState allocates the common part of a State.
func newState(method string, n, m int, v []float64, b *mat.Dense, s Settings) *State {
	st := &State{
		Method:          method,
		N:               n,
		M:               m,
		V:               v,
		R:               make([]float64, n*m),
		BNorms:          colNorms(b),
		RelResiduals:    make([]float64, m),
		ColumnConverged: make([]bool, m),
		Settings:        s,
	}
	// A zero right-hand side has the exact solution 0.
	for j, bn := range st.BNorms {
		if bn == 0 {
			for i := 0; i < n; i++ {
				v[i*m+j] = 0
			}
		}
	}
	return st
}

// core holds what every solver shares: the operator, its space, B, the
// state, and the blocks of B, V and R in the space.
type core struct {
	op  Operator
	sp  Space
	b   *mat.Dense // contiguous n×m host copy
	st  *State
	err error

	bb, v, r Block     // B, V, R in the space
	tmp      Block     // n×m scratch
	bound    []binding // what State downloads
	closed   bool

	// iterRows is the most rows of H one iteration reads (n for CG, the
	// block size for AP, the batch for SGD; 0 for Cholesky, which has no
	// budget), for the budget rule.
	iterRows int

	// checkSq and checkRel hold a stall check's true residual norms²
	// and relative residuals (see watch).
	checkSq, checkRel []float64

	sums    []float64 // m scalars from Dots
	coef    []float64 // m coefficients
	ones    []float64 // m × 1
	negOnes []float64 // m × −1
	all     []int     // 0..m−1
}

// binding is a vector of the State that lives in a block of the space: the
// block *b (a pointer, so that a solver may swap its blocks) is downloaded
// into dst when the State is asked for.
type binding struct {
	dst []float64
	b   *Block
}

// init sets up c for op, B and st: it gets the space, and uploads B, V and
// R. It must be called on the core inside its solver (bindings point into
// it). On error the space is closed.
func (c *core) init(op Operator, b *mat.Dense, st *State) error {
	sp, err := spaceFor(op)
	if err != nil {
		return fmt.Errorf("solvers: getting the operator's space: %w", err)
	}
	n, m := st.N, st.M
	c.op, c.sp, c.b, c.st = op, sp, b, st
	c.sums = make([]float64, m)
	c.coef = make([]float64, m)
	c.ones = make([]float64, m)
	c.negOnes = make([]float64, m)
	c.all = make([]int, m)
	for j := range c.ones {
		c.ones[j], c.negOnes[j], c.all[j] = 1, -1, j
	}
	if c.bb, err = c.upload(b.RawMatrix().Data, n, m); err == nil {
		if err = c.bind(&c.v, st.V, n, m); err == nil {
			if err = c.bind(&c.r, st.R, n, m); err == nil {
				c.tmp, err = sp.NewBlock(n, m)
			}
		}
	}
	if err != nil {
		_ = sp.Close()
		return err
	}
	return nil
}

// upload returns a block of the solver's space holding data (see blockOf).
func (c *core) upload(data []float64, r, cols int) (Block, error) {
	return blockOf(c.sp, data, r, cols)
}

// blockOf returns a block of sp holding the row-major r×c matrix data: on
// the host space a block over data itself, so that the solver updates it
// in place; elsewhere a new block with a copy.
func blockOf(sp Space, data []float64, r, c int) (Block, error) {
	if h, ok := sp.(*hostSpace); ok {
		return h.wrap(data, r, c), nil
	}
	bl, err := sp.NewBlock(r, c)
	if err != nil {
		return nil, err
	}
	if err := sp.Upload(bl, data); err != nil {
		return nil, err
	}
	return bl, nil
}

// bind sets *b to a block holding the State vector dst and registers it to
// be downloaded by State.
func (c *core) bind(b *Block, dst []float64, r, cols int) error {
	bl, err := c.upload(dst, r, cols)
	if err != nil {
		return err
	}
	*b = bl
	c.bound = append(c.bound, binding{dst: dst, b: b})
	return nil
}

// State brings the State's vectors up to date and returns it (see Solver).
func (c *core) State() *State {
	_ = c.sync() // a failure fails the solver: Iterate returns it
	return c.st
}

// sync downloads the bound vectors into the State. A failure of the space
// fails the solver, and is returned.
func (c *core) sync() error {
	if c.closed {
		return nil
	}
	for _, bd := range c.bound {
		if err := c.sp.Download(bd.dst, *bd.b); err != nil {
			err = fmt.Errorf("solvers: downloading the state from the operator's space: %w", err)
			if c.err == nil {
				c.err = err
			}
			return err
		}
	}
	return nil
}

// Solution returns V as a view of State().V.
func (c *core) Solution() *mat.Dense {
	_ = c.sync() // as in State
	return mat.NewDense(c.st.N, c.st.M, c.st.V)
}

// Progress returns the scalar part of the state (see Solver).
func (c *core) Progress() Progress { return c.st.Progress() }

// Progress returns the scalar part of s; its slices are views of s's.
func (s *State) Progress() Progress {
	return Progress{
		Iteration:       s.Iteration,
		RelResiduals:    s.RelResiduals,
		ColumnConverged: s.ColumnConverged,
		Converged:       s.Converged,
		Work:            s.Work,
	}
}

// Close downloads the state and releases the space (see Solver).
func (c *core) Close() error {
	if c.closed {
		return nil
	}
	serr := c.sync()
	c.closed = true
	if err := c.sp.Close(); err != nil {
		return fmt.Errorf("solvers: closing the operator's space: %w", err)
	}
	return serr
}

// Converged reports whether the stopping rule is met.
func (c *core) Converged() bool { return c.st.Converged }

// Done reports whether the solve is over: converged, out of iterations or
// out of budget, failed or closed.
func (c *core) Done() bool {
	return c.err != nil || c.closed || c.st.Converged || c.st.Stalled || c.st.Iteration >= c.st.Settings.MaxIterations || c.outOfBudget()
}

// setIterationRows records the most rows of H one iteration of the solver
// reads, and checks that the budget, if any, allows one iteration.
func (c *core) setIterationRows(rows int) error {
	c.iterRows = rows
	b := c.st.Settings.Budget
	if b > 0 && rows > 0 && float64(rows) > b*float64(c.st.N) {
		return fmt.Errorf("%w: Budget is %v epochs, less than one %s iteration (%d of %d rows of H, %.4g epochs): raise it to at least that, or use 0 for no budget",
			ErrSettings, b, c.st.Method, rows, c.st.N, float64(rows)/float64(c.st.N))
	}
	return nil
}

// outOfBudget reports whether the next iteration could take the solve past
// Settings.Budget. The comparison is in rows (integers), so that, say, 20
// iterations of |I| = n/4 fit a budget of 5 epochs exactly.
func (c *core) outOfBudget() bool {
	b := c.st.Settings.Budget
	return b > 0 && c.iterRows > 0 && float64(c.st.Rows+c.iterRows) > b*float64(c.st.N)
}

// budgetStop marks a solve that the budget has just ended (not converged):
// with verify, the unconverged columns' residuals are first replaced by
// true ones, b − Hv, with one product over those columns (counted in Work,
// not charged to the budget), and columns that turn out to meet their
// tolerances are flagged converged. It must be called before the
// iteration's trace row is recorded, so that the row holds what it sets.
func (c *core) budgetStop(verify bool) error {
	st := c.st
	if st.Converged || !c.outOfBudget() {
		return nil
	}
	if verify {
		cols := activeCols(nil, st.ColumnConverged)
		sq, err := c.trueResidual(cols)
		if err != nil {
			return err
		}
		c.setResiduals(sq, cols, true)
		st.Converged = c.met()
	}
	st.BudgetSpent = !st.Converged
	return nil
}

// stopped returns the error Iterate returns, if iterating is over for a
// reason other than convergence or the iteration budget.
func (c *core) stopped() error {
	if c.err != nil {
		return c.err
	}
	if c.closed {
		return ErrClosed
	}
	return nil
}

// dots returns Dots(x, y) over cols (nil: all) in c.sums.
func (c *core) dots(x, y Block, cols []int) ([]float64, error) {
	k := len(cols)
	if cols == nil {
		k = c.st.M
	}
	out := c.sums[:k]
	if err := c.sp.Dots(out, x, y, cols, nil); err != nil {
		return nil, fmt.Errorf("solvers: the operator's space failed: %w", err)
	}
	return out, nil
}

// trueResidual sets R[:,cols] = B[:,cols] − H·V[:,cols] with one operator
// product over those columns (all columns when cols is nil), and returns
// the columns' ‖R[:,j]‖² (in c.sums). A non-finite product leaves R as it
// was.
func (c *core) trueResidual(cols []int) ([]float64, error) {
	sq, err := c.trueResidualTmp(cols)
	if err == nil && sq != nil {
		c.sp.Copy(c.r, c.tmp, cols)
	}
	return sq, err
}

// trueResidualTmp is trueResidual with the residual left in the scratch
// block c.tmp: R is not touched.
func (c *core) trueResidualTmp(cols []int) ([]float64, error) {
	k := len(cols)
	if cols == nil {
		k = c.st.M
	}
	if k == 0 {
		return nil, nil
	}
	c.sp.Mul(c.tmp, c.v, cols)
	c.st.Work.OperatorProducts += k
	c.sp.Xpby(c.tmp, c.bb, c.negOnes[:k], cols) // B − HV
	sq, err := c.dots(c.tmp, c.tmp, cols)
	if err != nil {
		return nil, err
	}
	if !allFinite(sq) {
		return nil, fmt.Errorf("%w: the operator returned NaN or Inf for H·V: check the operator's inputs and hyperparameters", ErrNotFinite)
	}
	return sq, nil
}

// A CG column, or AP's whole rule, stalls when stallChecks failed
// true-residual checks in a row each leave its true residual above
// stallRatio times the one before: the recurrence keeps claiming progress
// that b − Hv does not show, so the products' rounding (float32 K, say) has
// become the floor of what the solve can reach.
const (
	stallRatio  = 0.9
	stallChecks = 3
)

// failedCheck records a failed true-residual check that found the residual
// (or measure) q, given the value *prev found by the last failed check (0:
// none) and the number *stalls of failed checks in a row above stallRatio
// times the one before, and reports a stall.
func failedCheck(prev *float64, stalls *int, q float64) bool {
	if *prev > 0 && q > stallRatio**prev {
		*stalls++
	} else {
		*stalls = 0
	}
	*prev = q
	return *stalls >= stallChecks
}

// watchOutcome is what a stall check found (see core.watch).
type watchOutcome int

const (
	watchOn    watchOutcome = iota // no check, or one that found progress
	watchMet                       // the true residuals meet the rule
	watchStall                     // the solve has stalled
)

// watch is the stall detection of SGD and AP (see StallEpochs), called at
// the end of an iteration that left the solve unconverged. It records a
// new low of the measure of RelResiduals; after StallEpochs epochs without
// one it checks the true residual (one product) and compares its measure
// with the earlier checks'. When the check finds the rule met, or a stall,
// the true residual replaces R and RelResiduals, and Converged or Stalled
// is set; the outcome says which (watchOn: no check, or progress).
func (c *core) watch() (watchOutcome, error) {
	st := c.st
	if st.Converged || st.BudgetSpent || st.Stalled || st.Iteration >= st.Settings.MaxIterations {
		return watchOn, nil
	}
	if st.Watch == nil {
		st.Watch = &StallWatch{}
	}
	w := st.Watch
	if q := st.Settings.excess(st.RelResiduals); w.Low == 0 || q < w.Low {
		w.Low, w.LowRows = q, st.Rows
		return watchOn, nil
	}
	if st.Rows-w.LowRows < StallEpochs*st.N {
		return watchOn, nil
	}
	w.LowRows = st.Rows // the next check comes StallEpochs epochs on
	sq, err := c.trueResidualTmp(nil)
	if err != nil {
		return watchOn, err
	}
	c.checkSq = append(c.checkSq[:0], sq...)
	c.checkRel = c.checkRel[:0]
	for j, bn := range st.BNorms {
		r := 0.0
		if bn != 0 {
			r = math.Sqrt(sq[j]) / bn
		}
		c.checkRel = append(c.checkRel, r)
	}
	out := watchOn
	switch q := st.Settings.excess(c.checkRel); {
	case st.Settings.met(c.checkRel):
		out = watchMet
	case w.Checked == 0 || q < w.Checked:
		w.Checked, w.Misses = q, 0
	default:
		if w.Misses++; w.Misses >= stallMisses {
			out = watchStall
		}
	}
	if out != watchOn {
		c.sp.Copy(c.r, c.tmp, nil)
		c.setResiduals(c.checkSq, nil, true)
		st.Converged = c.met()
		st.Stalled = out == watchStall
	}
	return out, nil
}

// initialResidual sets R = B − H·V0 (R = B when V0 was nil: no product)
// and the relative residuals and flags, at Start.
func (c *core) initialResidual(zeroStart bool) error {
	var sq []float64
	var err error
	if zeroStart {
		c.sp.Copy(c.r, c.bb, nil)
		sq, err = c.dots(c.r, c.r, nil)
	} else {
		sq, err = c.trueResidual(nil)
	}
	if err != nil {
		return err
	}
	c.setResiduals(sq, nil, true)
	return nil
}

// finishStart ends a method's Start: the initial residual (zeroStart as
// for initialResidual), then the method's own set-up when setup is not
// nil, the convergence flag and the first trace entry. On an error the
// space is closed.
func (c *core) finishStart(zeroStart bool, setup func() error) error {
	err := c.initialResidual(zeroStart)
	if err == nil && setup != nil {
		err = setup()
	}
	if err != nil {
		_ = c.sp.Close()
		return err
	}
	c.st.Converged = c.met()
	c.record()
	return nil
}

// setResiduals sets RelResiduals[j] = √sq[a]/‖b_j‖ for the a-th column j
// of cols (nil: all), and ColumnConverged from the tolerances when
// setFlags is true.
func (c *core) setResiduals(sq []float64, cols []int, setFlags bool) {
	st := c.st
	if cols == nil {
		cols = c.all
	}
	for a, j := range cols {
		if st.BNorms[j] == 0 {
			st.RelResiduals[j] = 0
		} else {
			st.RelResiduals[j] = math.Sqrt(sq[a]) / st.BNorms[j]
		}
		if setFlags {
			st.ColumnConverged[j] = st.RelResiduals[j] < st.Settings.tol(j)
		}
	}
}

// met reports whether the current relative residuals meet the stopping
// rule (under ProbeEach: whether every column is flagged converged, as the
// flags are set from the same residuals).
func (c *core) met() bool { return c.st.Settings.met(c.st.RelResiduals) }

// record appends the current relative residuals to the trace.
func (c *core) record() {
	c.st.Trace = append(c.st.Trace, append([]float64(nil), c.st.RelResiduals...))
}

// fail records err and returns it.
func (c *core) fail(err error) error {
	c.err = err
	return err
}

// fill returns c.coef[:k] set to v.
func (c *core) fill(k int, v float64) []float64 {
	out := c.coef[:k]
	for a := range out {
		out[a] = v
	}
	return out
}

// activeCols appends the indices of unconverged columns to dst[:0].
func activeCols(dst []int, conv []bool) []int {
	dst = dst[:0]
	for j, ok := range conv {
		if !ok {
			dst = append(dst, j)
		}
	}
	return dst
}

// blockRanges splits 0..n−1 into contiguous blocks of size bs (the last one
// may be smaller) and returns their start offsets, with n appended.
func blockRanges(n, bs int) []int {
	var starts []int
	for lo := 0; lo < n; lo += bs {
		starts = append(starts, lo)
	}
	return append(starts, n)
}

// sortedCopy copies idx into dst and sorts it.
func sortedCopy(dst, idx []int) []int {
	dst = append(dst[:0], idx...)
	sort.Ints(dst)
	return dst
}
