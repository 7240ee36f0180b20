package solvers

import (
	"fmt"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// CholeskyMaxN is the largest n Cholesky accepts: it holds H in 8n² bytes
// (3.2 GB at n = 20000) and factorises it in n³/3 flops.
const CholeskyMaxN = 20000

// Cholesky is the exact reference solver with the iterative solvers'
// interface: its single Iterate builds H (BlockTo over all indices),
// factorises it in place (LAPACK potrf) and solves every column. The
// residual B − HV is then computed with one operator product, so it is
// true up to rounding. Start refuses n > CholeskyMaxN.
type Cholesky struct{}

// CholeskyState is Cholesky's method-specific state: nothing is kept
// between iterations, since there is only one.
type CholeskyState struct{}

// Name returns "cholesky".
func (Cholesky) Name() string { return "cholesky" }

// Start returns a Cholesky solver; see Method. V0 is accepted for
// uniformity and only sets the initial residual in the trace.
func (m Cholesky) Start(op Operator, B, V0 *mat.Dense, s Settings) (Solver, error) {
	n, err := checkOperator(op)
	if err != nil {
		return nil, err
	}
	if n > CholeskyMaxN {
		return nil, fmt.Errorf("%w: Cholesky: n = %d exceeds CholeskyMaxN = %d (it needs 8n² bytes): use an iterative solver (cg, ap, sgd) or a subset of the data", ErrSettings, n, CholeskyMaxN)
	}
	s.MaxEpochs = 0 // one iteration, whatever the cap
	b, st, err := begin(m.Name(), n, B, V0, s, 1, n)
	if err != nil {
		return nil, err
	}
	st.Cholesky = &CholeskyState{}
	c := &cholSolver{}
	if err := c.init(op, b, st); err != nil {
		return nil, err
	}
	if err := c.finishStart(V0 == nil, nil); err != nil {
		return nil, err
	}
	return c, nil
}

func (m Cholesky) resume(op Operator, b *mat.Dense, st *State) (Solver, error) {
	if st.N > CholeskyMaxN {
		return nil, fmt.Errorf("%w: Cholesky: n = %d exceeds CholeskyMaxN = %d", ErrSettings, st.N, CholeskyMaxN)
	}
	if st.Cholesky == nil {
		st.Cholesky = &CholeskyState{}
	}
	c := &cholSolver{}
	if err := c.init(op, b, st); err != nil {
		return nil, err
	}
	return c, nil
}

type cholSolver struct{ core }

// Iterate builds, factorises and solves, on the host, and uploads the
// solution to the space (Cholesky is the reference, not a GPU method).
func (c *cholSolver) Iterate() error {
	if err := c.stopped(); err != nil {
		return err
	}
	if c.Done() {
		return nil
	}
	st := c.st
	n, m := st.N, st.M
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	h := mat.NewSymDense(n, nil)
	c.op.BlockTo(h, idx)
	st.Work.BlockEntries += n * n
	st.Work.RowEvaluations += n
	hr := h.RawSymmetric()
	for i := 0; i < n; i++ {
		if !allFinite(hr.Data[i*n+i : (i+1)*n]) {
			return c.fail(fmt.Errorf("%w: Cholesky: row %d of H is not finite: check the hyperparameters", ErrNotFinite, i))
		}
	}
	tri, ok := lapack64.Potrf(hr)
	if !ok {
		return c.fail(fmt.Errorf("%w: Cholesky factorisation of H failed; %s", ErrNotPositiveDefinite, pdAdvice))
	}
	st.Work.BlockFactorisations++
	sol := blas64.General{Rows: n, Cols: m, Stride: m, Data: append([]float64(nil), c.b.RawMatrix().Data...)}
	lapack64.Potrs(tri, sol)
	if !allFinite(sol.Data) {
		return c.fail(fmt.Errorf("%w: Cholesky solve produced NaN or Inf; %s", ErrNotFinite, pdAdvice))
	}
	if err := c.sp.Upload(c.v, sol.Data); err != nil {
		return c.fail(fmt.Errorf("solvers: Cholesky: the operator's space failed: %w", err))
	}
	// R = B − H·V with one operator product (H itself was overwritten by
	// its factor; keeping a copy would double the memory).
	sq, err := c.trueResidual(nil)
	if err != nil {
		return c.fail(err)
	}
	c.setResiduals(sq, nil, true)
	st.Iteration++
	// Converged refers to the true residual, like every method: an
	// ill-conditioned H can leave the exact solve above tolerance.
	st.Converged = c.met()
	c.record()
	return nil
}
