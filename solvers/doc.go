// Package solvers solves batches of linear systems H V = B with a symmetric
// positive-definite Operator H: level 3 of the paper's hierarchy
// (optimiser → gradient estimator → linear system solver). It knows nothing
// about Gaussian processes; in gpnb, H = K_θ(X,X) + σ²I and B = [y, z_1..z_s]
// (column 0 the mean system, columns 1..s the Hutchinson probes).
//
// Four methods share one interface:
//
//	CG        conjugate gradients, batched over columns (optionally with a
//	          pivoted-Cholesky preconditioner)
//	AP        alternating projections (block Gauss–Seidel, greedy blocks)
//	SGD       stochastic gradient descent with momentum on mini-batches of rows
//	Cholesky  the exact reference
//
// A Method is plain configuration; Method.Start returns a Solver, a
// step-wise object: each Iterate is one iteration, and the whole state is the
// exported, serialisable State. A solve can therefore be stopped between
// iterations (Run honours context cancellation), saved with encoding/gob or
// encoding/json, and continued later by Resume with bit-identical results.
//
// Warm starts, the paper's proposal, are the V0 argument of Start: pass the
// previous step's solution instead of nil (zeros).
//
// Stopping follows appendix B of the paper: a column is converged when
// ‖H v_j − b_j‖/‖b_j‖ is below Settings.RelTolMean (0.01) for column 0 and
// Settings.RelTolProbes (0.1) for the others. Convergence is judged on true
// residuals (CG, AP and SGD confirm a claimed convergence with one extra
// product, unless SGD.NoVerify). The zero values of the rule fields are the
// paper's text; Rules names them and the authors' code's rules as sets
// (gpnb's default is the authors'). Reaching Settings.MaxIterations makes a
// solver Done but not Converged; so does a stall, a solve whose true
// residual stopped falling (State.Stalled, StallEpochs). State.Trace records
// every column's relative residual after every iteration, and State.Work
// counts the work in units comparable across methods.
//
// Errors are values wrapping ErrNotPositiveDefinite, ErrNotFinite,
// ErrDiverged, ErrShape or ErrSettings, with a message saying what to do.
//
// Each method is written once against a Space, which holds the vectors
// (V, R, CG's directions, SGD's velocity) and does all the O(n·m) work on
// them; the solver keeps only scalars. On an ordinary Operator the space
// is HostSpace, the CPU's (golden_test.go pins its bits). An operator that implements SpaceOperator (a GPU
// backend) provides its own, so that a solve stays in device memory and
// only scalars cross per iteration: Solver.State downloads the vectors when
// called, Solver.Progress reads the scalars only, and Solver.Close releases
// the space.
//
// DenseOperator wraps an explicit matrix for tests, notebooks and small
// problems; package gpnb/kernel provides the kernel operator.
package solvers
