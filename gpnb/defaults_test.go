package gpnb

import (
	"context"
	"math"
	"testing"

	"github.com/gpnb/gpnb/solvers"
)

// TestSGDDefaultsConverge: issue 60's two commands, `gpnb train --data pol
// --split 0 --subset 1500 --solver sgd [--warm-start] --steps 30 --seed 3`
// (steps at the 50 000-iteration cap) and the same on elevators with seed
// 5 (died diverged at step 28), in a smaller case of the same shape: 600
// points, batches of 400 (two thirds of n, as 1000 of 1500), 30 steps, every
// other setting gpnb's default (the authors' stopping rules, SGD's
// normalised rate: Config's zero values, which gpnb train gives on a
// subset). Cold and warm finish every step converged: no cap, no stall, no
// restart at a lower rate. Warm start needs at least 1.5× fewer
// iterations, at a test log-likelihood within 0.01 of the cold run's: the
// issue's bar, which the ratios measured (the log) clear by far more than
// BLAS rounding, which moves an iteration count by a few, could change.
func TestSGDDefaultsConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("four 30-step SGD runs on n = 600 (tens of seconds)")
	}
	for _, c := range []struct {
		data string
		seed uint64
	}{{"pol", 3}, {"elevators", 5}} {
		ds := uciSubset(t, c.data, 600)
		var iters [2]int
		var llh [2]float64
		for w, warm := range []bool{false, true} {
			o, err := NewOptimiser(ds, Config{Solver: solvers.SGD{BatchSize: 400, Seed: c.seed}, Seed: c.seed, WarmStart: warm, DropResidualTraces: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background(), 30); err != nil {
				t.Fatalf("%s warm %v: %v", c.data, warm, err)
			}
			h := o.History()
			most := 0
			for _, r := range h {
				most = max(most, r.SolverIterations)
				if !r.SolverConverged || r.SolverStalled || r.RateBackoffs > 0 {
					t.Errorf("%s warm %v: step %d: %d iterations, converged %v, stalled %v, %d restarts at half the rate", c.data, warm, r.Step, r.SolverIterations, r.SolverConverged, r.SolverStalled, r.RateBackoffs)
				}
			}
			ev, err := o.Evaluate()
			if err != nil {
				t.Fatal(err)
			}
			iters[w], llh[w] = h.TotalSolverIterations(), ev.TestLLH
			t.Logf("%s (n %d) seed %d warm %v: %d iterations (at most %d a step), test LLH %.4f", c.data, ds.NTrain(), c.seed, warm, iters[w], most, llh[w])
		}
		if ratio := float64(iters[0]) / float64(iters[1]); ratio < 1.5 || math.Abs(llh[0]-llh[1]) > 0.01 {
			t.Errorf("%s: warm start needs %.2f× fewer iterations (want ≥ 1.5×), test LLH cold %.4f warm %.4f (want within 0.01)", c.data, ratio, llh[0], llh[1])
		}
	}
}

// TestSGDPaperRateOnSubset: the paper's raw rate for elevators (20), which
// diverges on 500 points at step 23 whatever the seed (issue 60), is a
// user's explicit choice gpnb keeps, but a step whose solve diverges
// starts it again at half the rate: the run finishes every step, and the
// records say which steps backed off.
func TestSGDPaperRateOnSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30-step SGD run on n = 500")
	}
	ds := uciSubset(t, "elevators", 500)
	o, err := NewOptimiser(ds, Config{Solver: solvers.SGD{RawLearningRate: PaperSGDLearningRates()["elevators"], Seed: 5}, Seed: 5, DropResidualTraces: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	h := o.History()
	steps, restarts := h.BackoffSteps()
	t.Logf("%d of %d steps backed off (%d restarts), %d iterations, %d unconverged", steps, len(h), restarts, h.TotalSolverIterations(), h.UnconvergedSteps())
	if steps == 0 || h.UnconvergedSteps() > 0 || len(h) != 30 {
		t.Errorf("%d steps done, %d backed off, %d unconverged: want 30, at least one, none", len(h), steps, h.UnconvergedSteps())
	}
	if PaperSGDRate("elevators", ds.NTrain(), 0) != 0 || PaperSGDRate("elevators", 14939, 0) != 20 || PaperSGDRate("elevators", 14939, 500) != 0 {
		t.Error("PaperSGDRate: want the paper's rate only for all of the split with batches of 1000")
	}
}
