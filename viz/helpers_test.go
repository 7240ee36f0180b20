package viz

import (
	"math"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/solvers"
)

// Synthetic runs with closed-form records, so expected chart values can be
// computed independently in the tests.

func itersAt(warm bool, split, step int) int {
	if warm {
		return 10 + 2*split + step%3
	}
	return 100 + 5*split + step
}

func noiseAt(warm bool, split, step int) float64 {
	base := 1 / (1 + 0.1*float64(step))
	if warm {
		base *= 1.01
	}
	return base + 0.01*float64(split)
}

func signalAt(split, step int) float64 { return 1 + 0.05*float64(step) + 0.001*float64(split) }

func lengthscaleAt(i, split, step int) float64 {
	return math.Exp(0.1*float64(i+1)*float64(step)/10) + 0.002*float64(split)
}

func totalAt(solver string, warm bool, split int) float64 {
	base := map[string]float64{"cg": 100, "ap": 300, "sgd": 500, "cholesky": 50}[solver]
	if warm {
		base /= 4
	}
	return base + float64(split)
}

func solverTimeAt(solver string, warm bool, split int) float64 {
	return 0.9*totalAt(solver, warm, split) - 1
}

func synthResult(ds, solver string, warm bool, split, steps, d, probes int) gpnb.Result {
	c := gpnb.Config{WarmStart: warm, Probes: probes}
	if solver == "cholesky" {
		c.Estimator, c.WarmStart = gpnb.ExactGradient, false
	}
	c.Solver, _ = solvers.ParseMethod(solver)
	r := gpnb.Result{Dataset: ds, Split: split, Solver: solver, WarmStart: warm, D: d, Probes: probes, Config: &c,
		TotalSeconds: totalAt(solver, warm, split), SolverSeconds: solverTimeAt(solver, warm, split),
		Test: &gpnb.Eval{TestRMSE: 0.1 + 0.01*float64(split), TestLLH: 1.2 - 0.02*float64(split)}}
	for t := 1; t <= steps; t++ {
		rec := gpnb.StepRecord{Step: t, Noise: noiseAt(warm, split, t), Signal: signalAt(split, t),
			SolverIterations: itersAt(warm, split, t), StepSeconds: 1, SolverSeconds: 0.9,
			InitDistance: 1 / float64(t), ZeroInitDistance: 2}
		if !warm {
			rec.InitDistance = 2
		}
		for i := 0; i < d; i++ {
			rec.Lengthscales = append(rec.Lengthscales, lengthscaleAt(i, split, t))
		}
		rec.Residuals = residualRows(rec.SolverIterations, probes)
		r.History = append(r.History, rec)
	}
	r.StepsDone = steps
	return r
}

// residualRows returns iters+1 rows of 1+probes columns with
// res[t][j] = 0.5^t · (1 + j/10).
func residualRows(iters, probes int) [][]float64 {
	rows := make([][]float64, iters+1)
	for t := range rows {
		rows[t] = make([]float64, 1+probes)
		for j := range rows[t] {
			rows[t][j] = math.Pow(0.5, float64(t)) * (1 + float64(j)/10)
		}
	}
	return rows
}

// synthResults: datasets × solvers × {cold, warm} × splits, plus exact runs.
func synthResults(datasets, solvers []string, splits, steps, d int) []gpnb.Result {
	var out []gpnb.Result
	for _, ds := range datasets {
		for _, s := range solvers {
			for _, warm := range []bool{false, true} {
				if s == "cholesky" && warm {
					continue
				}
				for sp := 0; sp < splits; sp++ {
					out = append(out, synthResult(ds, s, warm, sp, steps, d, 4))
				}
			}
		}
	}
	return out
}

func options(t *testing.T, c *Chart) []map[string]any {
	t.Helper()
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func seriesOf(t *testing.T, opt map[string]any) []map[string]any {
	t.Helper()
	raw, ok := opt["series"].([]any)
	if !ok {
		t.Fatalf("option has no series list: %v", opt["series"])
	}
	out := make([]map[string]any, len(raw))
	for i, s := range raw {
		out[i] = s.(map[string]any)
	}
	return out
}

func axisType(t *testing.T, opt map[string]any, axis string) string {
	t.Helper()
	list, ok := opt[axis].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("option has no %s list", axis)
	}
	typ, _ := list[0].(map[string]any)["type"].(string)
	return typ
}

func names(ss []map[string]any) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i], _ = s["name"].(string)
	}
	return out
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// xy returns the points of a line/scatter series as (x, y) with "-" as NaN.
func xy(t *testing.T, s map[string]any) (xs, ys []float64) {
	t.Helper()
	for _, d := range s["data"].([]any) {
		p := d.([]any)
		xs = append(xs, num(p[0]))
		ys = append(ys, num(p[1]))
	}
	return xs, ys
}

func num(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return math.NaN()
}

// textTable renders tb as Markdown and returns its header and rows as
// they read (merged cells blank), and the rows HTML draws a rule above.
func textTable(t *testing.T, tb *results.Table) (head []string, rows [][]string, rules []int) {
	t.Helper()
	var md, h strings.Builder
	if err := tb.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := tb.HTML(&h); err != nil {
		t.Fatal(err)
	}
	var lines [][]string
	for _, l := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(l, "|") {
			cells := strings.Split(strings.Trim(l, "|"), " | ")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			lines = append(lines, cells)
		}
	}
	for i, tr := range strings.Split(h.String(), "<tr")[2:] { // after the header row
		if strings.HasPrefix(tr, ` class="gpnb-rule"`) {
			rules = append(rules, i)
		}
	}
	return lines[0], lines[2:], rules
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
