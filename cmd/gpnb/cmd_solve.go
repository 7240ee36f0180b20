package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

func init() {
	register(&command{
		name:  "solve",
		short: "solve H[v_y, v_1..v_s] = [y, z_1..z_s] with cg, ap, sgd or cholesky",
		run:   runSolve,
	})
}

// solveCholeskyLimit is the largest n for which solve compares with an
// exact Cholesky solution (8n² bytes, n³/3 flops).
const solveCholeskyLimit = 6000

// solveProbeStream is the second PCG seed word of the probe generator.
const solveProbeStream = 0x5eed_9a0b

// solveResult is the JSON that "gpnb solve" prints: the problem, where the
// solve ended (solvers.Progress) and its error against Cholesky.
type solveResult struct {
	Dataset string `json:"dataset"`
	Solver  string `json:"solver"`
	N       int    `json:"n"`
	D       int    `json:"d"`
	Kernel  string `json:"kernel"`
	Probes  int    `json:"probes"`
	solvers.Progress
	// RelErrorVsCholesky is max_j ‖v_j − v*_j‖/‖v*_j‖ against the exact
	// solution, null when n > 6000.
	RelErrorVsCholesky *float64 `json:"rel_error_vs_cholesky"`
	Seconds            float64  `json:"seconds"`
	// StartSeconds is the part of Seconds spent in the solver's Start
	// (building CG's preconditioner, where there is one).
	StartSeconds float64 `json:"start_seconds"`
	// PrecondRank is the rank of CG's preconditioner (the one
	// --precond-rank auto chose), 0 without one.
	PrecondRank int    `json:"precond_rank,omitempty"`
	Operator    string `json:"operator"`
}

func runSolve(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("solve", "--data D [--solver cg|ap|sgd|cholesky] [flags]\n\nSolves H[v_y, v_1..v_s] = [y, z_1..z_s] once at the initial θ; compares with Cholesky up to n = 6000.", stderr)
	var df dataFlags
	var rf runFlags
	df.register(fs, stderr)
	rf.register(fs, stderr, defaultTarget(), func(name string) bool {
		return only("kernel", "noise", "signal", "lengthscales", "solver", "seed", "tol-mean", "tol-probes", "max-iterations", "operator", "memory-budget", "precision", "workers")(name) ||
			slices.ContainsFunc([][]string{methodFlags["cg"], methodFlags["ap"], methodFlags["sgd"]}, func(fl []string) bool { return slices.Contains(fl, name) })
	})
	nprobes := fs.Int("probes", 16, "Gaussian probe vectors z_j (0: y alone)")
	jsonPath := fs.String("json", "", "write the result to `FILE` (-: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *nprobes < 0 {
		return fmt.Errorf("--probes %d: use 0 or more", *nprobes)
	}
	ds, cfg, k, err := loadRun(&df, &rf)
	if err != nil {
		return err
	}
	method, probes, seed := cfg.Solver, *nprobes, cfg.Seed
	op, err := kernel.NewOperator(ds.XTrain, k, cfg.Operator)
	if err != nil {
		return err
	}
	n := ds.NTrain()
	b := solveRHS(ds.YTrain, probes, seed)
	settings := cfg.Settings

	start := time.Now()
	sv, err := method.Start(op, b, nil, settings)
	if err != nil {
		return fmt.Errorf("solve: %w", err)
	}
	startSecs := time.Since(start).Seconds()
	if err := solvers.Run(context.Background(), sv); err != nil {
		return fmt.Errorf("solve: %w", err)
	}
	secs := time.Since(start).Seconds()
	st := sv.State()
	res := solveResult{
		Dataset: ds.Name, Solver: method.Name(), N: n, D: ds.D(), Kernel: k.Family.String(), Probes: probes,
		Progress: st.Progress(), Seconds: secs, StartSeconds: startSecs, Operator: op.Storage(),
	}
	if st.CG != nil {
		res.PrecondRank = st.CG.PrecondRank
	}
	if n <= solveCholeskyLimit {
		e, err := solveRelError(op, b, sv.Solution())
		if err != nil {
			return err
		}
		res.RelErrorVsCholesky = &e
	}
	if *jsonPath == "" {
		fmt.Fprintf(stdout, "%s: %s, n = %d, %d right-hand sides\n", ds, method.Name(), n, 1+probes)
		fmt.Fprintf(stdout, "%d iterations, converged %v, %.3f s (%.3f s to start)\n", res.Iteration, res.Converged, res.Seconds, res.StartSeconds)
		if res.PrecondRank > 0 {
			fmt.Fprintf(stdout, "preconditioner rank %d\n", res.PrecondRank)
		}
		fmt.Fprintf(stdout, "relative residual: mean %.3g, probes max %.3g\n", res.RelResiduals[0], maxOf(res.RelResiduals[1:]))
		if res.RelErrorVsCholesky != nil {
			fmt.Fprintf(stdout, "relative error vs Cholesky: %.3g\n", *res.RelErrorVsCholesky)
		}
		return nil
	}
	return writeJSON(*jsonPath, res, stdout)
}

// solveRHS returns B = [y, z_1..z_s] with standard Gaussian probes from a
// PCG generator seeded by (seed, solveProbeStream), drawn row by row.
func solveRHS(y []float64, probes int, seed uint64) *mat.Dense {
	n, m := len(y), 1+probes
	rng := rand.New(rand.NewPCG(seed, solveProbeStream))
	b := mat.NewDense(n, m, nil)
	for i := 0; i < n; i++ {
		row := b.RawRowView(i)
		row[0] = y[i]
		for j := 1; j < m; j++ {
			row[j] = rng.NormFloat64()
		}
	}
	return b
}

// solveRelError returns max_j ‖v_j − v*_j‖/‖v*_j‖ with v* from Cholesky.
func solveRelError(op solvers.Operator, b, v *mat.Dense) (float64, error) {
	ref, err := solvers.Solve(context.Background(), op, solvers.Cholesky{}, b, nil, solvers.Settings{})
	if err != nil {
		return 0, fmt.Errorf("the Cholesky reference solve: %w", err)
	}
	vs := ref.Solution()
	_, m := b.Dims()
	worst := 0.0
	for j := 0; j < m; j++ {
		var d mat.VecDense
		d.SubVec(v.ColView(j), vs.ColView(j))
		den := mat.Norm(vs.ColView(j), 2)
		if den == 0 {
			continue
		}
		worst = math.Max(worst, mat.Norm(&d, 2)/den)
	}
	return worst, nil
}

func maxOf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, v)
	}
	return m
}
