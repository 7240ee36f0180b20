package results_test

import (
	"fmt"
	"os"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// Table 1 from two training runs' results: the speed-up is the ratio of the
// mean total runtimes, cold over warm.
func ExampleSummary_Table1() {
	run := func(warm bool, seconds float64, iters int) gpnb.Result {
		c, _ := gpnb.Paper("cg", "pol")
		c.WarmStart = warm
		return gpnb.Result{Dataset: "pol", NTrain: 13500, D: 26, Solver: "cg", WarmStart: warm, StepsDone: 1, TotalSeconds: seconds,
			Test: &gpnb.Eval{TestLLH: 1.27}, History: gpnb.History{{Step: 1, SolverIterations: iters}}, Config: &c}
	}
	recs, err := results.FromResults([]gpnb.Result{run(false, 471.6, 9000), run(true, 120.2, 2500)})
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := results.Summarise(recs)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := sum.Table1(results.Minutes)
	t.Notes, t.Caption = nil, "(caption)"
	t.Markdown(os.Stdout)
	// Output:
	// ### Table 1: test log-likelihood, total runtime and average warm-start speed-up
	//
	// (caption)
	//
	// | Solver | Test LLH pol | Total runtime (min) pol | Average speed-up | Average iteration ratio |
	// |---|--:|--:|--:|--:|
	// | CG | 1.27 | 7.86 | — | — |
	// | + ws | 1.27 | 2.00 | 3.9× | 3.6× |
}
