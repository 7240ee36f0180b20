package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/viz"
)

func init() {
	register(&command{
		name:  "report",
		short: "write one self-contained HTML report of results or a checkpoint",
		run:   runReport,
	})
}

// reportFlags are gpnb report's flags.
type reportFlags struct {
	in, out, static, title string
	last                   int
}

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "--in RESULTS_DIR|RESULT.json|RUN.ckpt [--out report.html] [--static DIR]", stderr)
	var f reportFlags
	fs.StringVar(&f.in, "in", "", "a folder of result JSON files, one result JSON, or a checkpoint (`PATH`)")
	fs.StringVar(&f.out, "out", "report.html", "the HTML file (echarts inlined)")
	fs.StringVar(&f.static, "static", "", "also write every figure as PNG and SVG into `DIR`")
	fs.StringVar(&f.title, "title", "", "page `TITLE` (default: from --in)")
	fs.IntVar(&f.last, "last", 3, "one run: chart the residuals of the last N steps")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "in", f.in); err != nil {
		return err
	}
	if f.last < 1 {
		return fmt.Errorf("gpnb report: --last is %d: use 1 or more", f.last)
	}
	results, kind, err := loadReportInput(f.in, stderr)
	if err != nil {
		return err
	}
	if f.title == "" {
		f.title = reportTitle(f.in, results, kind)
	}
	rep := viz.NewReport(f.title)
	var figs []namedChart
	if kind == "results" && len(results) > 1 {
		figs = resultsReport(rep, results)
	} else {
		figs = runReportSingle(rep, results[0], kind, f.last)
	}
	if len(figs) == 0 {
		return fmt.Errorf("gpnb report: nothing in %s could be charted (see the notes above)", f.in)
	}
	if err := rep.Save(f.out); err != nil {
		return fmt.Errorf("gpnb report: writing %s: %w", f.out, err)
	}
	if !viz.Echarts().Local() {
		fmt.Fprintf(stderr, "gpnb report: warning: no local echarts copy, so %s loads it from the CDN and needs network access (run `%s` or set %s)\n", f.out, viz.MakeTarget, viz.EnvEchartsJS)
	}
	fmt.Fprintf(stdout, "wrote %s: %d figures from %d run(s)\n", f.out, len(figs), len(results))
	if f.static == "" {
		return nil
	}
	return writeFigures(f.static, figs, stdout)
}

// writeFigures writes every figure as PNG and SVG into dir.
func writeFigures(dir string, figs []namedChart, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gpnb report: --static: %w", err)
	}
	for _, f := range figs {
		for _, ext := range []string{".png", ".svg"} {
			p := filepath.Join(dir, f.name+ext)
			if err := f.chart.Save(p); err != nil {
				return fmt.Errorf("gpnb report: writing %s: %w", p, err)
			}
		}
	}
	fmt.Fprintf(stdout, "wrote %d PNG and %d SVG figures to %s\n", len(figs), len(figs), dir)
	return nil
}

type namedChart struct {
	name  string
	chart *viz.Chart
}

// addFigure adds a chart (or, when it cannot be drawn, a note why) to rep.
func addFigure(rep *viz.Report, figs *[]namedChart, name, heading string, c *viz.Chart, err error) {
	rep.AddHeading(heading)
	if err != nil {
		rep.AddText("Not drawn: " + err.Error())
		return
	}
	rep.AddChart(c)
	*figs = append(*figs, namedChart{name, c})
}

func resultsReport(rep *viz.Report, results []gpnb.Result) []namedChart {
	var figs []namedChart
	rep.AddText(fmt.Sprintf("%d runs: %s.", len(results), describeRuns(results)))
	t1, err := viz.SpeedupTable(results)
	addTable(rep, "Table 1: test log-likelihood, runtime and average speed-up", t1, err)
	t2, err := viz.ResultsTable(results)
	addTable(rep, "Table 2: results per dataset", t2, err)
	c, err := viz.Runtimes(results)
	addFigure(rep, &figs, "fig2-runtimes", "Figure 2: runtime, solver time inside total time", c, err)
	c, err = viz.Iterations(results)
	addFigure(rep, &figs, "fig3-iterations", "Figure 3: solver iterations per step", c, err)
	c, err = viz.Hyperparameters(results)
	addFigure(rep, &figs, "fig4-hyperparameters", "Figure 4: hyperparameter traces", c, err)
	if anyBudget(results) {
		c, err = viz.ResidualAtStop(results)
		addFigure(rep, &figs, "residual-at-stop", "Residual at the stop of each step's solve (solver budgets)", c, err)
	}
	return figs
}

// addTable adds a table under a heading; one that cannot be computed (say,
// the same run twice) says why. The tables' statistics are package
// results' (as in `gpnb table`).
func addTable(rep *viz.Report, heading string, t *results.Table, err error) {
	rep.AddHeading(heading)
	if err != nil {
		rep.AddText("Not drawn: " + err.Error())
		return
	}
	rep.AddTable(t)
}

// anyBudget reports whether some result's solves stopped at a budget.
func anyBudget(results []gpnb.Result) bool {
	for _, r := range results {
		if r.History.BudgetSteps() > 0 {
			return true
		}
	}
	return false
}

func runReportSingle(rep *viz.Report, r gpnb.Result, kind string, last int) []namedChart {
	var figs []namedChart
	t := &results.Table{Title: "Run", Columns: []results.Column{{Name: "Field"}, {Name: "Value"}}}
	add := func(k, v string) { t.Rows = append(t.Rows, results.Row{results.Text(k), results.Text(v)}) }
	add("source", kind)
	add("dataset", r.Dataset)
	add("method", methodLabel(r))
	add("steps", fmt.Sprint(len(r.History)))
	add("solver iterations (total)", fmt.Sprint(r.History.TotalSolverIterations()))
	add("time (total / solver)", fmt.Sprintf("%.3g s / %.3g s", r.History.TotalSeconds(), r.History.TotalSolverSeconds()))
	if len(r.History) > 0 {
		f := r.History[len(r.History)-1]
		add("final noise σ", fmt.Sprintf("%.4g", f.Noise))
		add("final signal s", fmt.Sprintf("%.4g", f.Signal))
		add("final length scales ℓ", fmt.Sprintf("%.4g", f.Lengthscales))
	}
	if ev := r.Test; ev != nil {
		add("test RMSE / LLH", fmt.Sprintf("%.4g / %.4g (%s)", ev.TestRMSE, ev.TestLLH, ev.Method))
		if s := ev.Samples; s != nil {
			add("test RMSE / LLH from posterior samples", fmt.Sprintf("%.4g / %.4g (%d samples, no further solve)", s.TestRMSE, s.TestLLH, s.Samples))
		}
	}
	if b := r.History.BudgetSteps(); b > 0 {
		add("steps stopped at the solver budget", fmt.Sprintf("%d of %d (%.4g epochs in all)", b, len(r.History), r.History.TotalSolverEpochs()))
	}
	rep.AddTable(t)
	one := []gpnb.Result{r}
	c, err := viz.Hyperparameters(one)
	addFigure(rep, &figs, "hyperparameters", "Hyperparameter traces", c, err)
	c, err = viz.Iterations(one)
	addFigure(rep, &figs, "iterations", "Solver iterations per step", c, err)
	c, err = viz.ResidualsLast(r.History, last)
	addFigure(rep, &figs, "residuals", fmt.Sprintf("Residuals of the last %d steps", last), c, err)
	c, err = viz.Distances(r.History)
	addFigure(rep, &figs, "distances", "Distance from initialisation to solution", c, err)
	if anyBudget(one) {
		c, err = viz.ResidualAtStop(one)
		addFigure(rep, &figs, "residual-at-stop", "Residual at the stop of each step's solve (solver budget)", c, err)
	}
	return figs
}

func describeRuns(results []gpnb.Result) string {
	count := map[string]int{}
	for _, r := range results {
		count[r.Dataset+" "+methodLabel(r)]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s ×%d", k, count[k])
	}
	return strings.Join(parts, ", ")
}

// checkpointMagic opens every gpnb checkpoint file.
const checkpointMagic = "GPNBCKPT"

// loadReportInput reads --in: a directory of result JSON files, one result
// JSON (an object or a list), or a checkpoint. kind is "results",
// "result" or "checkpoint".
func loadReportInput(in string, stderr io.Writer) (results []gpnb.Result, kind string, err error) {
	info, err := os.Stat(in)
	if err != nil {
		return nil, "", fmt.Errorf("gpnb report: --in: %w", err)
	}
	if info.IsDir() {
		var files []string
		err := filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".json") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, "", fmt.Errorf("gpnb report: reading %s: %w", in, err)
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, "", fmt.Errorf("gpnb report: %w", err)
			}
			rs, err := parseResults(b)
			if err != nil {
				fmt.Fprintf(stderr, "gpnb report: skipping %s: %v\n", f, err)
				continue
			}
			results = append(results, rs...)
		}
		if len(results) == 0 {
			return nil, "", fmt.Errorf("gpnb report: no result JSON files in %s (looked at %d *.json files): point --in at the directory `gpnb reproduce` or `gpnb train --json` wrote", in, len(files))
		}
		return results, "results", nil
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return nil, "", fmt.Errorf("gpnb report: %w", err)
	}
	if bytes.HasPrefix(b, []byte(checkpointMagic)) {
		st, err := gpnb.DecodeCheckpoint(b)
		if err != nil {
			return nil, "", fmt.Errorf("gpnb report: %s: %w", in, err)
		}
		return []gpnb.Result{st.Result()}, "checkpoint", nil
	}
	rs, err := parseResults(b)
	if err != nil {
		return nil, "", fmt.Errorf("gpnb report: %s: %w: give a result JSON, a directory of them, or a checkpoint", in, err)
	}
	if len(rs) == 1 {
		return rs, "result", nil
	}
	return rs, "results", nil
}

// resultKeys are JSON fields every gpnb.Result has. Other JSON that shares
// some names (a reproduce job's job.json has "dataset" and "solver") is not
// a result and must not be averaged in as one with zero metrics.
var resultKeys = []string{"solver", "n_train", "steps_done", "history"}

// parseResults decodes one gpnb.Result or a list of them, and rejects JSON
// that is not a result (one without every field in resultKeys).
func parseResults(b []byte) ([]gpnb.Result, error) {
	b = bytes.TrimSpace(b)
	items := []json.RawMessage{b}
	if len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("not a list of results: %w", err)
		}
		if len(items) == 0 {
			return nil, errors.New("empty list of results")
		}
	}
	rs := make([]gpnb.Result, len(items))
	for i, it := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(it, &fields); err != nil {
			return nil, fmt.Errorf("entry %d is not a result: %w", i, err)
		}
		for _, k := range resultKeys {
			if _, ok := fields[k]; !ok {
				return nil, fmt.Errorf("entry %d has no %q field, so it is not a gpnb result", i, k)
			}
		}
		if err := json.Unmarshal(it, &rs[i]); err != nil {
			return nil, fmt.Errorf("entry %d is not a result: %w", i, err)
		}
	}
	return rs, nil
}

// reportTitle is the page title of a report of in: the run's dataset,
// split and method for one run (a checkpoint or one result), the input's
// name for several.
func reportTitle(in string, results []gpnb.Result, kind string) string {
	base := filepath.Base(filepath.Clean(in))
	if len(results) != 1 {
		return "gpnb report: " + base
	}
	r := results[0]
	what := fmt.Sprintf("%s split %d, %s", r.Dataset, r.Split, methodLabel(r))
	if kind == "checkpoint" {
		what += fmt.Sprintf(", step %d", r.StepsDone)
	}
	return fmt.Sprintf("gpnb report: %s (%s)", what, base)
}

// methodLabel names a run's method as the tables do ("CG + ws"; "exact"
// for the exact gradient), or by its solver for a result that recorded no
// configuration.
func methodLabel(r gpnb.Result) string {
	if r.Config == nil {
		return r.Solver
	}
	return results.MethodOf(*r.Config).Label()
}
