// Package gpnb is levels 1 and 2 of the paper's hierarchy of marginal
// likelihood optimisation for iterative Gaussian processes: an Adam optimiser
// over unconstrained hyperparameters (level 1) driven by a Hutchinson gradient
// estimator (level 2, eq. 5) whose linear systems are solved by package
// solvers (level 3). Its contribution is the warm start: probes kept fixed and
// each solve started at the previous step's solution.
//
// # Levels
//
// Optimiser (NewOptimiser, Step, Run, RunTo) maximises the log marginal
// likelihood (eq. 3) with Adam (learning rate 0.1, β = (0.9, 0.999), ε =
// 1e-8) over raw parameters whose softplus (or, with Config.Param =
// ParamLog, exponential) is θ = (ℓ_1..ℓ_d, s, σ), all initialised at 1.0 as
// in the paper, for a number of steps or until the run has converged
// (Config.Until, Converged). Each step asks its Estimator (level 2, usable
// on its own through NewEstimator) for ∇L (eq. 4):
//
//   - Hutchinson (default): B = [y, z_1..z_s] with s = 16 Gaussian (or
//     Rademacher) probes; the solver returns V ≈ H⁻¹B; the gradient is one
//     fused kernel-derivative reduction of W = ½v_y v_yᵀ − (1/2s)Σ v_j z_jᵀ.
//     Config.WarmStart starts each solve at the previous V and, unless
//     Config.FixedProbes says otherwise, keeps the probes fixed (the paper's
//     method); without it probes are resampled and solves start at zero
//     (the paper's baseline).
//   - Pathwise (Lin et al., NeurIPS 2024, arXiv 2405.18457): probes
//     ξ_j = f_j(X) + σε_j ~ N(0, H) from Config.Features random-feature
//     prior samples, drawn like the probes (fixed or resampled) and
//     rescaled to each θ; the reduction uses ζ_j = H⁻¹ξ_j in place of the
//     probes. The last solve gives posterior samples at any inputs with no
//     further solve (PosteriorSamples; Evaluate's Eval.Samples).
//   - ExactGradient: a Cholesky factorisation (type Exact), for small n and
//     for reference traces.
//
// For the iterative estimators, Config.Settings.Budget stops every solve
// after a number of epochs (passes over H): by design, recorded as
// StepRecord.BudgetStop with the residuals reached, and continued at the
// next step by a warm start.
//
// Up to Config.ExactUpTo training points, or Config.ExactWorkUpTo points
// times hyperparameters, the Optimiser takes the exact path instead (Path,
// decided by NewOptimiser, Config.PathFor): L-BFGS (type LBFGS, its whole
// state exported and checkpointed, so it pauses between any two
// evaluations) over (log ℓ, log s², log σ²) on the exact log marginal
// likelihood and gradient, one Cholesky factorisation (Exact) an
// evaluation, one L-BFGS iteration a step. The fast preset takes it for
// small data (FastExactUpTo; from two starts, Config.ExactStarts) or few
// inputs (FastExactWorkUpTo; from 2000 points first on a subset,
// Config.ExactSubset). Up to Config.FinishExactUpTo a run until converged
// goes on along the exact path once σ nears its floor or σ² K's
// rounding, and up to Config.FinishConvergedUpTo also once Adam's steps
// have converged (OptimiserState.ExactFrom): the fast
// preset's runs up to FastFinishConvergedUpTo points, and its
// near-noiseless ones up to FastFinishExactUpTo, end at the exact optimum.
//
// # State, pause and resume
//
// The unit of pause is one solver iteration: Step checks its context between
// iterations and, when cancelled, keeps the in-flight solve in its state, so
// Save and Resume continue the same step exactly where it stopped. Run also
// stops on SIGINT (GoNB's interrupt) and saves Config.CheckpointPath. A
// checkpoint (magic, format version, length, gob payload, SHA-256; written
// atomically) holds θ, Adam's moments, the probes, the previous solutions,
// the pending solve, the generator state, the configuration, the data's
// fingerprint and the history, so a resumed run is bit-for-bit the run that
// was never interrupted. (A cold-start run's checkpoint leaves out what its
// later steps never read: the previous solutions, and between steps its
// resampled probes; it stays small at any n. The history's residual traces,
// one row of s+1 numbers per solver iteration, grow with the iterations
// instead: Config.DropResidualTraces leaves them out.) Resume refuses other
// data (ErrDataMismatch), an incompatible configuration (ErrConfigMismatch),
// damaged files (ErrCheckpointCorrupt) and other format versions
// (ErrCheckpointVersion).
//
// # Records
//
// Every step leaves a StepRecord (hyperparameters, gradient, solver
// iterations, work, residual trace per column unless
// Config.DropResidualTraces, timings, distances of the
// initial guess to the solution in the H-norm); History is the list.
// Predict gives the predictive distribution at new points in the data's
// units and on the z-scored scale; Evaluate is prediction at the test
// inputs (test RMSE and log-likelihood); Result assembles what `gpnb train
// --json` prints. Recorders (AddRecorder) watch a run: live
// views, progress bars and a user's own coexist.
//
// # Configuration
//
// Config is the one plain-data description of a run (JSON and gob; the
// solver method is a serialisable value of package solvers). Zero fields
// are defaults (Resolve writes them out); the presets (Preset) are named
// Configs: Paper gives the paper's settings, Fast a good model soon.
// Fields tagged resume:"change" may change on resume (WithConfig,
// WithChanges) or between steps (Optimiser.Change); the others are fixed by
// the run.
//
// The kernel operator is the CPU one of package gpnb/kernel unless
// WithBackend builds another (the GPU operator of package cuda).
//
// Results do not depend on GOMAXPROCS: the kernel operator, the solvers and
// the exact baseline partition parallel work in a fixed way.
package gpnb
