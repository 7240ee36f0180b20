package viz

import (
	"fmt"
	"math"

	"github.com/gpnb/gpnb/gpnb"
)

// stat is a mean with its standard error over runs.
type stat struct {
	mean, se float64
	n        int
}

func statOf(xs []float64) stat {
	var s stat
	for _, x := range xs {
		if finite(x) {
			s.mean += x
			s.n++
		}
	}
	if s.n == 0 {
		return stat{mean: math.NaN(), se: math.NaN()}
	}
	s.mean /= float64(s.n)
	if s.n > 1 {
		ss := 0.0
		for _, x := range xs {
			if finite(x) {
				ss += (x - s.mean) * (x - s.mean)
			}
		}
		s.se = math.Sqrt(ss / float64(s.n-1) / float64(s.n))
	}
	return s
}

func (s stat) format(prec int) string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 {
		return fmt.Sprintf("%.*f", prec, s.mean)
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, s.mean, prec, s.se)
}

// group is the runs of one dataset, solver and warm-start setting.
type group struct {
	dataset, solver string
	warm            bool
	runs            []gpnb.Result
}

func (g *group) field(f func(gpnb.Result) float64) stat {
	xs := make([]float64, len(g.runs))
	for i, r := range g.runs {
		xs[i] = f(r)
	}
	return statOf(xs)
}

func totalSeconds(r gpnb.Result) float64 {
	if r.TotalSeconds == 0 && len(r.History) > 0 {
		return r.History.TotalSeconds()
	}
	return r.TotalSeconds
}

func solverSeconds(r gpnb.Result) float64 {
	if r.SolverSeconds == 0 && len(r.History) > 0 {
		return r.History.TotalSolverSeconds()
	}
	return r.SolverSeconds
}

// groups returns the runs grouped by dataset (paper order), then solver,
// then cold before warm.
func groups(results []gpnb.Result) []*group {
	var out []*group
	for _, ds := range sortedKeys(results, datasetOf, datasetOrder) {
		for _, s := range sortedKeys(results, solverOf, solverOrder) {
			for _, warm := range []bool{false, true} {
				g := &group{dataset: ds, solver: s, warm: warm}
				for _, r := range results {
					if r.Dataset == ds && solverOf(r) == s && r.WarmStart == warm {
						g.runs = append(g.runs, r)
					}
				}
				if len(g.runs) > 0 {
					out = append(out, g)
				}
			}
		}
	}
	return out
}

func timeUnit(results []gpnb.Result) (string, float64) {
	mx := 0.0
	for _, r := range results {
		if t := totalSeconds(r); finite(t) {
			mx = math.Max(mx, t)
		}
	}
	if mx >= 120 {
		return "min", 60
	}
	return "s", 1
}

// speedup returns mean cold total time / mean warm total time for the
// dataset and solver of g, or NaN when either is missing.
func speedup(gs []*group, ds, solver string) float64 {
	var cold, warm float64 = math.NaN(), math.NaN()
	for _, g := range gs {
		if g.dataset == ds && g.solver == solver {
			m := g.field(totalSeconds).mean
			if g.warm {
				warm = m
			} else {
				cold = m
			}
		}
	}
	return cold / warm
}

// ResultsTable is the paper's Table 2: per dataset and method, test RMSE,
// test log-likelihood, total and solver runtime (mean ± standard error over
// runs, usually the 10 splits) and the warm-start speed-up of total runtime.
func ResultsTable(results []gpnb.Result) (*Table, error) {
	if err := checkResults(results); err != nil {
		return nil, err
	}
	unit, div := timeUnit(results)
	gs := groups(results)
	t := &Table{
		Caption: "Test RMSE, test log-likelihood, total and solver runtime, and speed-up of total runtime due to warm start (mean ± standard error over runs).",
		Header:  []string{"Dataset", "Method", "Runs", "Test RMSE", "Test LLH", "Total runtime (" + unit + ")", "Solver runtime (" + unit + ")", "Speed-up"},
	}
	prev := ""
	for _, g := range gs {
		if g.dataset != prev {
			t.Rules = append(t.Rules, len(t.Rows))
			prev = g.dataset
		}
		sp := "—"
		if g.warm {
			if s := speedup(gs, g.dataset, g.solver); finite(s) {
				sp = fmt.Sprintf("%.1f×", s)
			}
		}
		t.Rows = append(t.Rows, []string{
			g.dataset, MethodLabel(g.solver, g.warm), fmt.Sprint(len(g.runs)),
			g.field(func(r gpnb.Result) float64 { return r.TestRMSE }).format(3),
			g.field(func(r gpnb.Result) float64 { return r.TestLLH }).format(3),
			g.field(func(r gpnb.Result) float64 { return totalSeconds(r) / div }).format(3),
			g.field(func(r gpnb.Result) float64 { return solverSeconds(r) / div }).format(3),
			sp,
		})
	}
	return t, nil
}

// SpeedupTable is the paper's Table 1: one row per method, the mean test
// log-likelihood and total runtime on each dataset, and the warm-start
// speed-up averaged over datasets.
func SpeedupTable(results []gpnb.Result) (*Table, error) {
	if err := checkResults(results); err != nil {
		return nil, err
	}
	unit, div := timeUnit(results)
	gs := groups(results)
	dss := sortedKeys(results, datasetOf, datasetOrder)
	t := &Table{
		Caption: "Test log-likelihood and total runtime after marginal likelihood optimisation, and warm-start speed-up averaged over datasets (mean over runs).",
		Header:  []string{"Method"},
	}
	for _, ds := range dss {
		t.Header = append(t.Header, "LLH "+ds)
	}
	for _, ds := range dss {
		t.Header = append(t.Header, "Runtime "+ds+" ("+unit+")")
	}
	t.Header = append(t.Header, "Average speed-up")
	for _, s := range sortedKeys(results, solverOf, solverOrder) {
		for _, warm := range []bool{false, true} {
			row := []string{MethodLabel(s, warm)}
			found := false
			var llh, rt []string
			var sps []float64
			for _, ds := range dss {
				var g *group
				for _, x := range gs {
					if x.dataset == ds && x.solver == s && x.warm == warm {
						g = x
					}
				}
				if g == nil {
					llh, rt = append(llh, "—"), append(rt, "—")
					continue
				}
				found = true
				m := g.field(func(r gpnb.Result) float64 { return r.TestLLH })
				llh = append(llh, fmt.Sprintf("%.2f", m.mean))
				m = g.field(func(r gpnb.Result) float64 { return totalSeconds(r) / div })
				rt = append(rt, fmt.Sprintf("%.2f", m.mean))
				if warm {
					if sp := speedup(gs, ds, s); finite(sp) {
						sps = append(sps, sp)
					}
				}
			}
			if !found {
				continue
			}
			sp := "—"
			if len(sps) > 0 {
				sp = fmt.Sprintf("%.1f×", statOf(sps).mean)
			}
			if !warm {
				t.Rules = append(t.Rules, len(t.Rows))
			}
			row = append(row, llh...)
			row = append(row, rt...)
			t.Rows = append(t.Rows, append(row, sp))
		}
	}
	return t, nil
}
