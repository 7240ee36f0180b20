package gpnb

import (
	"errors"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// The presets: "paper" is Paper; "fast" is Paper with the fast choices,
// mixed precision only where the vectorised kernel exists; other names are
// ErrConfig.
func TestPresets(t *testing.T) {
	for _, solver := range []string{"cg", "ap", "sgd", "cholesky"} {
		paper, err := Paper(solver, "pol")
		if err != nil {
			t.Fatal(err)
		}
		got, err := Preset("paper", solver, "pol")
		if err != nil {
			t.Fatal(err)
		}
		if diff := got.Differences(paper, false); len(diff) > 0 {
			t.Errorf("%s: the paper preset differs from Paper in %v", solver, diff)
		}
		fast, err := Preset("Fast", solver, "pol")
		if err != nil {
			t.Fatal(err)
		}
		want := paper
		want.WarmStart, want.Probes, want.Param, want.Until, want.Rules = true, FastProbes, ParamLog, UntilConverged, solvers.RulesPaperText
		want.NoiseMin, want.ExactSubset, want.ExactStarts = FastNoiseMin, FastExactSubset, FastExactStarts
		want.ExactUpTo, want.ExactWorkUpTo, want.FinishExactUpTo, want.FinishConvergedUpTo = FastExactUpTo, FastExactWorkUpTo, FastFinishExactUpTo, FastFinishConvergedUpTo
		if kernel.MixedKernel() != "" {
			want.Operator.Precision = kernel.Mixed
		}
		if solver == "cg" {
			want.Solver = solvers.CG{PrecondRank: solvers.PrecondRankAuto}
		}
		if diff := fast.Differences(want, false); len(diff) > 0 {
			t.Errorf("%s: the fast preset differs from what it says in %v", solver, diff)
		}
		if _, err := fast.Resolve(3); err != nil {
			t.Errorf("%s: the fast preset does not resolve: %v", solver, err)
		}
	}
	if diff := Fast().Differences(must(Preset("fast", "cg", "")), false); len(diff) > 0 {
		t.Errorf("Fast() differs from Preset(fast, cg) in %v", diff)
	}
	if _, err := Preset("quick", "cg", "pol"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown preset: %v, want ErrConfig", err)
	}
}

func must(c Config, err error) Config {
	if err != nil {
		panic(err)
	}
	return c
}
