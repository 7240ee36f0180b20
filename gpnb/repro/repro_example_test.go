package repro_test

import (
	"fmt"

	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/solvers"
)

// A grid expands into jobs in run order: each solver cold then warm, then the
// exact Cholesky reference where n is small enough.
func ExampleGrid_Jobs() {
	splits, _ := repro.ParseSplits("0-1")
	g := repro.Grid{Datasets: []string{"synthetic-500-4-1"}, Splits: splits, Solvers: []string{"cg", "ap"},
		Steps: 100}
	jobs, err := g.Jobs()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		fmt.Println(j.ID())
	}
	// Output:
	// synthetic-500-4-1-s0-cg-cold
	// synthetic-500-4-1-s0-cg-warm
	// synthetic-500-4-1-s0-ap-cold
	// synthetic-500-4-1-s0-ap-warm
	// synthetic-500-4-1-s0-cholesky-exact
	// synthetic-500-4-1-s1-cg-cold
	// synthetic-500-4-1-s1-cg-warm
	// synthetic-500-4-1-s1-ap-cold
	// synthetic-500-4-1-s1-ap-warm
	// synthetic-500-4-1-s1-cholesky-exact
}

// The paper tuned SGD's learning rate per dataset (appendix B) for all of
// each training split; a grid takes those rates, in the paper's units,
// where its jobs are the paper's runs (SGDRatesAuto, the default, as gpnb
// reproduce's), and SGD's normalised rate (0 here) on subsets.
func ExampleGrid_paperSGDRates() {
	for _, subset := range []int{0, 1500} {
		g := repro.Grid{Datasets: []string{"pol", "elevators"}, Splits: []int{0}, Solvers: []string{"sgd"},
			Steps: 100, Exact: repro.ExactNever, Modes: []string{"cold"}, Subset: subset}
		jobs, err := g.Jobs()
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, j := range jobs {
			fmt.Println(j.ID(), "subset", j.Subset, "raw rate", j.Config.Solver.(solvers.SGD).RawLearningRate)
		}
	}
	// Output:
	// pol-s0-sgd-cold subset 0 raw rate 90
	// elevators-s0-sgd-cold subset 0 raw rate 20
	// pol-s0-sgd-cold subset 1500 raw rate 0
	// elevators-s0-sgd-cold subset 1500 raw rate 0
}
