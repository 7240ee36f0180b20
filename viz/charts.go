package viz

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// Colours of the three ways of computing the gradient, the same in every
// figure: exact (Cholesky), cold (zero initialisation, resampled probes)
// and warm start.
const (
	ColorExact     = "#333333"
	ColorCold      = "#5470c6"
	ColorColdLight = "#b5c3ea"
	ColorWarm      = "#ee6666"
	ColorWarmLight = "#f7c0c0"
)

// methodOf is the method a result is charted under (results.MethodOf its
// configuration): its solver and estimator with their variant, so that
// variants are series of their own, and "exact" for the exact estimator.
func methodOf(r gpnb.Result) results.Method { return results.MethodOf(*r.Config) }

func isExact(r gpnb.Result) bool { return methodOf(r).Mode() == results.Exact }

// methodsOf returns the methods of the results, cold (Warm false), each
// once, in the paper's order of solvers (cg, ap, sgd, cholesky, exact)
// then by key.
func methodsOf(rs []gpnb.Result) []results.Method {
	byKey := map[string]results.Method{}
	for _, r := range rs {
		m := methodOf(r)
		m.Warm = false
		byKey[m.Key()] = m
	}
	keys := sortedKeys(rs, func(r gpnb.Result) string { return methodOf(r).Key() }, solverOrder)
	out := make([]results.Method, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// label is the method's label cold or with warm start ("CG", "CG + ws").
func label(m results.Method, warm bool) string {
	m.Warm = warm
	return m.Label()
}

// datasetOrder is the paper's order of the UCI datasets.
var datasetOrder = []string{"pol", "elevators", "elev", "bike", "protein", "prot", "keggdirected", "kegg"}
var solverOrder = []string{"cg", "ap", "sgd", "cholesky", "exact"}

func rankOf(order []string, s string) int {
	for i, o := range order {
		if strings.EqualFold(o, s) {
			return i
		}
	}
	return len(order)
}

// sortedKeys returns the distinct values of key over results, in the given
// preferred order, then alphabetically.
func sortedKeys(rs []gpnb.Result, key func(gpnb.Result) string, order []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rs {
		k := key(r)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		ra, rb := rankOf(order, out[a]), rankOf(order, out[b])
		if ra != rb {
			return ra < rb
		}
		return out[a] < out[b]
	})
	return out
}

func datasetOf(r gpnb.Result) string { return r.Dataset }

func checkResults(rs []gpnb.Result) error {
	if len(rs) == 0 {
		return fmt.Errorf("%w: no results to chart: pass the gpnb.Result of at least one training run", ErrChart)
	}
	for i, r := range rs {
		if r.Config == nil {
			return fmt.Errorf("%w: result %d (dataset %q) has no configuration: chart the Results of Optimiser.Result or State.Result, which record it", ErrChart, i, r.Dataset)
		}
	}
	return nil
}

func splitsNote(n int) []string {
	if n > 1 {
		return []string{fmt.Sprintf("mean over %d runs", n)}
	}
	return nil
}

// Runtimes is figure 2: per dataset, one panel with the mean total runtime
// of each iterative solver as a stacked bar (solver time at the bottom,
// the rest of the step on top), cold beside warm start. Cholesky results
// are left out; runs of the same dataset, solver and warm-start setting
// (splits) are averaged.
func Runtimes(rs []gpnb.Result) (*Chart, error) {
	if err := checkResults(rs); err != nil {
		return nil, err
	}
	var it []gpnb.Result
	for _, r := range rs {
		if !isExact(r) {
			it = append(it, r)
		}
	}
	if len(it) == 0 {
		return nil, fmt.Errorf("%w: figure 2 compares iterative solvers, but every result is exact (Cholesky)", ErrChart)
	}
	maxTotal := 0.0
	for _, r := range it {
		if finite(r.TotalSeconds) {
			maxTotal = math.Max(maxTotal, r.TotalSeconds)
		}
	}
	unit, div := "s", 1.0
	if maxTotal >= 120 {
		unit, div = "min", 60
	}
	c := &Chart{Title: "Runtime: solver time inside total time, cold vs warm start"}
	for _, ds := range sortedKeys(it, datasetOf, datasetOrder) {
		var rs []gpnb.Result
		for _, r := range it {
			if r.Dataset == ds {
				rs = append(rs, r)
			}
		}
		solvers := methodsOf(rs)
		p := &Panel{Title: ds, YLabel: "runtime (" + unit + ")"}
		for _, m := range solvers {
			p.Categories = append(p.Categories, m.SolverLabel())
		}
		var bad badCounter
		maxN := 0
		for _, warm := range []bool{false, true} {
			solver := make([]float64, len(solvers))
			rest := make([]float64, len(solvers))
			any := false
			for i, m := range solvers {
				var tot, sol float64
				n := 0
				for _, r := range rs {
					if rm := methodOf(r); rm.Key() != m.Key() || rm.Warm != warm {
						continue
					}
					t, st := r.TotalSeconds, r.SolverSeconds
					if t == 0 && st == 0 && len(r.History) > 0 {
						t, st = r.History.TotalSeconds(), r.History.TotalSolverSeconds()
					}
					tot += bad.check(t)
					sol += bad.check(st)
					n++
				}
				maxN = max(maxN, n)
				if n == 0 {
					solver[i], rest[i] = math.NaN(), math.NaN()
					continue
				}
				any = true
				tot, sol = tot/float64(n)/div, sol/float64(n)/div
				solver[i], rest[i] = sol, math.Max(tot-sol, 0)
			}
			if !any {
				continue
			}
			name, dark, light := "cold", ColorCold, ColorColdLight
			if warm {
				name, dark, light = "warm", ColorWarm, ColorWarmLight
			}
			p.Series = append(p.Series,
				Series{Name: name + ": solver", Kind: Bar, Y: solver, Stack: name, Color: dark},
				Series{Name: name + ": other", Kind: Bar, Y: rest, Stack: name, Color: light})
		}
		p.Notes = splitsNote(maxN)
		bad.note(p, "runtimes")
		c.Panels = append(c.Panels, p)
	}
	return c, nil
}

// meanTrace averages f(record) over the histories at each step (1-based
// step numbers; histories of different lengths are averaged over those that
// reached the step).
func meanTrace(hs []gpnb.History, f func(gpnb.StepRecord) float64, bad *badCounter) (x, y []float64) {
	longest := 0
	for _, h := range hs {
		longest = max(longest, len(h))
	}
	for t := 0; t < longest; t++ {
		s, n := 0.0, 0
		step := t + 1
		for _, h := range hs {
			if t < len(h) {
				s += bad.check(f(h[t]))
				if h[t].Step > 0 {
					step = h[t].Step
				}
				n++
			}
		}
		x = append(x, float64(step))
		y = append(y, s/float64(n))
	}
	return x, y
}

func histories(rs []gpnb.Result, keep func(gpnb.Result) bool) (hs []gpnb.History) {
	for _, r := range rs {
		if keep(r) && len(r.History) > 0 {
			hs = append(hs, r.History)
		}
	}
	return hs
}

// stepPanels adds to c one panel per dataset and iterative solver, made by
// newPanel, holding the series that add makes from the histories of the
// cold and of the warm-started runs (those keep accepts; nil keeps all),
// with a note of how many runs each mean is over and of the values left
// out. Panels without series are left out.
func stepPanels(c *Chart, rs []gpnb.Result, keep func(gpnb.Result) bool, newPanel func(ds string, m results.Method) *Panel,
	add func(p *Panel, hs []gpnb.History, label, color string, bad *badCounter)) {
	for _, ds := range sortedKeys(rs, datasetOf, datasetOrder) {
		for _, m := range methodsOf(rs) {
			if m.Mode() == results.Exact {
				continue
			}
			p := newPanel(ds, m)
			var bad badCounter
			maxN := 0
			for _, warm := range []bool{false, true} {
				hs := histories(rs, func(r gpnb.Result) bool {
					rm := methodOf(r)
					return r.Dataset == ds && rm.Key() == m.Key() && rm.Warm == warm && (keep == nil || keep(r))
				})
				if len(hs) == 0 {
					continue
				}
				maxN = max(maxN, len(hs))
				color := ColorCold
				if warm {
					color = ColorWarm
				}
				add(p, hs, label(m, warm), color, &bad)
			}
			if len(p.Series) == 0 {
				continue
			}
			p.Notes = splitsNote(maxN)
			bad.note(p, "values")
			c.Panels = append(c.Panels, p)
		}
	}
}

// Iterations is figure 3: for each dataset and iterative solver, the number
// of solver iterations at each marginal-likelihood step, cold vs warm start
// (mean over runs that share dataset, solver and setting).
func Iterations(rs []gpnb.Result) (*Chart, error) {
	if err := checkResults(rs); err != nil {
		return nil, err
	}
	c := &Chart{Title: "Solver iterations per marginal likelihood step"}
	iters := func(r gpnb.StepRecord) float64 { return float64(r.SolverIterations) }
	stepPanels(c, rs, nil, func(ds string, m results.Method) *Panel {
		return &Panel{Title: ds + " — " + m.SolverLabel(), XLabel: "step", YLabel: "solver iterations"}
	}, func(p *Panel, hs []gpnb.History, label, color string, bad *badCounter) {
		x, y := meanTrace(hs, iters, bad)
		p.Series = append(p.Series, Series{Name: label, Kind: Line, X: x, Y: y, Color: color})
	})
	if len(c.Panels) == 0 {
		return nil, fmt.Errorf("%w: no iterative-solver result has a history to chart iterations from: train with a cg, ap or sgd solver and keep Result.History", ErrChart)
	}
	return c, nil
}

// Hyperparameters is figure 4: for each dataset and iterative solver, three
// panels (noise σ, signal s, length scales ℓ) tracing the hyperparameters
// over the steps of exact (Cholesky) gradients, cold and warm-started runs.
// All d length scales of a method share one legend entry. A panel whose
// values span more than a factor of 20 gets a log axis; runs sharing
// dataset, solver and setting are averaged.
func Hyperparameters(rs []gpnb.Result) (*Chart, error) {
	if err := checkResults(rs); err != nil {
		return nil, err
	}
	c := &Chart{Title: "Hyperparameters during marginal likelihood optimisation", Columns: 3}
	type method struct {
		label string
		color string
		dash  bool
		keep  func(gpnb.Result) bool
	}
	for _, ds := range sortedKeys(rs, datasetOf, datasetOrder) {
		inDS := func(r gpnb.Result) bool { return r.Dataset == ds }
		exact := method{results.Exact, ColorExact, true, func(r gpnb.Result) bool { return inDS(r) && isExact(r) }}
		var groups [][]method
		for _, m := range methodsOf(rs) {
			if m.Mode() == results.Exact {
				continue
			}
			is := func(warm bool) func(gpnb.Result) bool {
				return func(r gpnb.Result) bool { rm := methodOf(r); return inDS(r) && rm.Key() == m.Key() && rm.Warm == warm }
			}
			groups = append(groups, []method{exact, {label(m, false), ColorCold, false, is(false)}, {label(m, true), ColorWarm, false, is(true)}})
		}
		if len(groups) == 0 {
			groups = [][]method{{exact}}
		}
		for _, ms := range groups {
			title := ds
			if len(ms) > 1 {
				title += " — " + ms[1].label
			}
			var hms []hyperMethod
			for _, m := range ms {
				if hs := histories(rs, m.keep); len(hs) > 0 {
					hms = append(hms, hyperMethod{m.label, m.color, m.dash, hs})
				}
			}
			c.Panels = append(c.Panels, hyperPanels(title, hms)...)
		}
	}
	if len(c.Panels) == 0 {
		return nil, fmt.Errorf("%w: no result has a history to trace hyperparameters from: keep Result.History when saving results", ErrChart)
	}
	return c, nil
}

// hyperMethod is one way of computing the gradient in figure 4: its label,
// colour, dashing and the histories of its runs.
type hyperMethod struct {
	label string
	color string
	dash  bool
	hs    []gpnb.History
}

// hyperPanels draws figure 4's three panels (noise σ, signal s, length
// scales ℓ) of the methods, averaging each method's histories, titled
// "title: noise σ" and so on; none when no method has a history.
func hyperPanels(title string, ms []hyperMethod) []*Panel {
	if title != "" {
		title += ": "
	}
	pn := &Panel{Title: title + "noise σ", XLabel: "step", YLabel: "σ", LogY: true}
	ps := &Panel{Title: title + "signal s", XLabel: "step", YLabel: "s", LogY: true}
	pl := &Panel{Title: title + "length scales ℓ", XLabel: "step", YLabel: "ℓ", LogY: true}
	var bad badCounter
	maxN := 0
	for _, m := range ms {
		hs := m.hs
		if len(hs) == 0 {
			continue
		}
		maxN = max(maxN, len(hs))
		x, y := meanTrace(hs, func(r gpnb.StepRecord) float64 { return r.Noise }, &bad)
		pn.Series = append(pn.Series, Series{Name: m.label, Kind: Line, X: x, Y: y, Color: m.color, Dashed: m.dash})
		x, y = meanTrace(hs, func(r gpnb.StepRecord) float64 { return r.Signal }, &bad)
		ps.Series = append(ps.Series, Series{Name: m.label, Kind: Line, X: x, Y: y, Color: m.color, Dashed: m.dash})
		d := 0
		for _, h := range hs {
			for _, r := range h {
				d = max(d, len(r.Lengthscales))
			}
		}
		for i := 0; i < d; i++ {
			x, y = meanTrace(hs, func(r gpnb.StepRecord) float64 {
				if i < len(r.Lengthscales) {
					return r.Lengthscales[i]
				}
				return math.NaN()
			}, &bad)
			pl.Series = append(pl.Series, Series{Name: m.label, Kind: Line, X: x, Y: y, Color: m.color, Dashed: m.dash})
		}
	}
	if len(pn.Series) == 0 {
		return nil
	}
	for _, p := range []*Panel{pn, ps, pl} {
		p.Notes = splitsNote(maxN)
		p.Width = 400
		p.LogY = wideRange(p.Series)
	}
	bad.note(pl, "values")
	return []*Panel{pn, ps, pl}
}

// Distances is figure 1 (right): the distance between the solver's
// initialisation and the solution at each step, as RMSE in the H-norm, for
// a zero initialisation and for the warm start actually used
// (StepRecord.ZeroInitDistance and InitDistance), on a log axis.
func Distances(h gpnb.History) (*Chart, error) {
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: empty history: run at least one optimiser step before charting distances", ErrChart)
	}
	p := &Panel{Title: "Distance from initialisation to solution", XLabel: "step", YLabel: "RMSE in H-norm", LogY: true}
	var bad badCounter
	x, zero, warm := make([]float64, len(h)), make([]float64, len(h)), make([]float64, len(h))
	for i, r := range h {
		x[i] = float64(r.Step)
		if r.Step == 0 {
			x[i] = float64(i + 1)
		}
		zero[i] = bad.check(r.ZeroInitDistance)
		warm[i] = bad.check(r.InitDistance)
	}
	p.Series = []Series{
		{Name: "zero init", Kind: Line, X: x, Y: zero, Color: ColorCold},
		{Name: "warm start", Kind: Line, X: x, Y: warm, Color: ColorWarm},
	}
	bad.note(p, "distances")
	return &Chart{Title: p.Title, Panels: []*Panel{p}}, nil
}

// ResidualTrace charts one solve's relative residuals against the solver
// iteration on a log axis: trace[t][j] is column j's ‖H v_j − b_j‖/‖b_j‖
// after iteration t (a StepRecord's Residuals or a solvers.State's Trace).
// Column 0, the mean system, is drawn as it is; the probe columns 1..s are
// summarised by their maximum and median at each iteration. Dashed lines
// mark the paper's tolerances, 0.01 (mean) and 0.1 (probes).
func ResidualTrace(title string, trace [][]float64) (*Chart, error) {
	p, err := residualPanel(title, trace, 0)
	if err != nil {
		return nil, err
	}
	return &Chart{Title: title, Panels: []*Panel{p}}, nil
}

// residualPanel draws trace with row t at iteration first+t.
func residualPanel(title string, trace [][]float64, first int) (*Panel, error) {
	if len(trace) == 0 {
		return nil, fmt.Errorf("%w: %s: no residuals recorded: the solver trace is empty", ErrChart, title)
	}
	m := len(trace[0])
	if m == 0 {
		return nil, fmt.Errorf("%w: %s: residual rows have no columns", ErrChart, title)
	}
	for t, row := range trace {
		if len(row) != m {
			return nil, fmt.Errorf("%w: %s: residual row %d has %d columns, row 0 has %d: every row must have one value per column", ErrChart, title, t, len(row), m)
		}
	}
	p := &Panel{Title: title, XLabel: "solver iteration", YLabel: "relative residual", LogY: true}
	var bad badCounter
	x := make([]float64, len(trace))
	mean := make([]float64, len(trace))
	var pmax, pmed []float64
	if m > 1 {
		pmax, pmed = make([]float64, len(trace)), make([]float64, len(trace))
	}
	probes := make([]float64, 0, m)
	for t, row := range trace {
		x[t] = float64(first + t)
		mean[t] = bad.check(row[0])
		if m > 1 {
			probes = probes[:0]
			for _, v := range row[1:] {
				if finite(bad.check(v)) {
					probes = append(probes, v)
				}
			}
			pmax[t], pmed[t] = maxMedian(probes)
		}
	}
	p.Series = append(p.Series, Series{Name: "mean system (column 0)", Kind: Line, X: x, Y: mean, Color: ColorExact})
	if m > 1 {
		p.Series = append(p.Series,
			Series{Name: fmt.Sprintf("probes: max of %d", m-1), Kind: Line, X: x, Y: pmax, Color: ColorWarm},
			Series{Name: fmt.Sprintf("probes: median of %d", m-1), Kind: Line, X: x, Y: pmed, Color: ColorCold})
	}
	lo, hi := x[0], x[len(x)-1]
	if hi == lo {
		hi = lo + 1
	}
	p.Series = append(p.Series, Series{Name: "tolerance 0.01 (mean)", Kind: Line, X: []float64{lo, hi}, Y: []float64{0.01, 0.01}, Color: "#999999", Dashed: true})
	if m > 1 {
		p.Series = append(p.Series, Series{Name: "tolerance 0.1 (probes)", Kind: Line, X: []float64{lo, hi}, Y: []float64{0.1, 0.1}, Color: "#bbbbbb", Dashed: true})
	}
	bad.note(p, "residuals")
	return p, nil
}

// maxMedian returns the maximum and median of v (NaN, NaN when empty).
// v is reordered.
func maxMedian(v []float64) (mx, med float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		med = v[n/2]
	} else {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return v[n-1], med
}

// Residuals charts the residual trajectories of the given steps, one panel
// per step (see ResidualTrace). Records without residuals are an error.
func Residuals(recs ...gpnb.StepRecord) (*Chart, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no step records: pass at least one gpnb.StepRecord", ErrChart)
	}
	c := &Chart{Title: "Relative residuals during the solve"}
	for _, r := range recs {
		p, err := residualPanel(fmt.Sprintf("step %d", r.Step), r.Residuals, 0)
		if err != nil {
			return nil, err
		}
		p.Width = 400
		c.Panels = append(c.Panels, p)
	}
	return c, nil
}

// ResidualsLast charts the residual trajectories of the last k steps of h
// that recorded residuals.
func ResidualsLast(h gpnb.History, k int) (*Chart, error) {
	if k < 1 {
		return nil, fmt.Errorf("%w: ResidualsLast needs k ≥ 1 steps, got %d", ErrChart, k)
	}
	var recs []gpnb.StepRecord
	for i := len(h) - 1; i >= 0 && len(recs) < k; i-- {
		if len(h[i].Residuals) > 0 {
			recs = append(recs, h[i])
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no step in the history recorded residuals", ErrChart)
	}
	for i, j := 0, len(recs)-1; i < j; i, j = i+1, j-1 {
		recs[i], recs[j] = recs[j], recs[i]
	}
	return Residuals(recs...)
}

// wideRange reports whether the positive values of ss span more than a
// factor of 20, where a log axis reads better than a linear one.
func wideRange(ss []Series) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, y := range s.Y {
			if finite(y) && y > 0 {
				lo, hi = math.Min(lo, y), math.Max(hi, y)
			}
		}
	}
	return hi > 20*lo
}

// ResidualAtStop charts, for each dataset and iterative solver (variants
// apart), the relative residual each step's solve stopped at
// (gpnb.StepRecord.FinalResiduals: the mean over the probe columns, solid,
// and the mean system, dashed), cold vs warm start, on a log axis: under a
// budget (solvers.Settings.Budget) it shows whether progress accumulates
// across steps with warm start. Results that did not record the residuals
// at the stop are left out.
func ResidualAtStop(rs []gpnb.Result) (*Chart, error) {
	if err := checkResults(rs); err != nil {
		return nil, err
	}
	has := func(r gpnb.Result) bool {
		for _, s := range r.History {
			if len(s.FinalResiduals) > 1 {
				return true
			}
		}
		return false
	}
	mean := func(r gpnb.StepRecord) float64 {
		if len(r.FinalResiduals) == 0 {
			return math.NaN()
		}
		return r.FinalResiduals[0]
	}
	c := &Chart{Title: "Relative residual at the end of each step's solve"}
	stepPanels(c, rs, has, func(ds string, m results.Method) *Panel {
		return &Panel{Title: ds + " — " + m.SolverLabel(), XLabel: "step", YLabel: "‖Hv − b‖/‖b‖", LogY: true}
	}, func(p *Panel, hs []gpnb.History, label, color string, bad *badCounter) {
		x, y := meanTrace(hs, gpnb.StepRecord.ProbeResidual, bad)
		p.Series = append(p.Series, Series{Name: label + " probes", Kind: Line, X: x, Y: y, Color: color})
		x, y = meanTrace(hs, mean, bad)
		p.Series = append(p.Series, Series{Name: label + " mean", Kind: Line, X: x, Y: y, Color: color, Dashed: true})
	})
	if len(c.Panels) == 0 {
		return nil, fmt.Errorf("%w: no iterative-solver result recorded the residuals at its solves' stops (StepRecord.FinalResiduals): train with this version of gpnb", ErrChart)
	}
	return c, nil
}
