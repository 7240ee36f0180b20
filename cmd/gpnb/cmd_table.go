package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

func init() {
	register(&command{name: "table", short: "render the tables of results: the paper's Tables 1 and 2, the comparison with the paper, and tables of runs, traces, benchmarks", run: runTable})
}

// tableFlags are gpnb table's flags; sets and paths are --in's.
type tableFlags struct {
	in, format, which, unit, out, columns, evals, steps, jobs, title *string
	labels, paths                                                    []string
}

func (f *tableFlags) register(fs *flag.FlagSet) {
	f.in = fs.String("in", "", "comma-separated PATH or LABEL=PATH: results directories, result files, or logs (required)")
	f.format = fs.String("format", "md", "output format: md (Markdown), csv or html (a styled, self-contained page)")
	f.which = fs.String("table", "all", "1, 2, all, paper, headline, ablation, convergence, budget (summaries); runs, traces, split, status (runs); bench, tests, jsonl (logs); versus")
	f.unit = fs.String("unit", "min", "runtime unit: min (like the paper) or s")
	f.out = fs.String("out", "", "output file (default stdout); written atomically")
	f.columns = fs.String("columns", "", "runs: name[@LABEL|@cold][:decimals][=Header] (an unknown name lists them); bench: unit@LABEL[:ratio]; jsonl: keys")
	f.evals = fs.String("evals", "", "runs: JSON lines of test evaluations made apart (file, exact_test_rmse, exact_test_llh)")
	f.steps = fs.String("steps", "", "traces: the steps shown, comma-separated (default 1,11,...,91,100)")
	f.jobs = fs.String("jobs", "", "runs, traces, split: patterns of the run names shown, comma-separated (default all)")
	f.title = fs.String("title", "", "the tables' title (default their own)")
}

// parseIn splits --in into labels and paths: LABEL=PATH (at the last
// "="), or PATH, whose label is its base name.
func (f *tableFlags) parseIn() error {
	for _, p := range strings.Split(*f.in, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		label, path := filepath.Base(filepath.Clean(p)), p
		if i := strings.LastIndex(p, "="); i >= 0 {
			label, path = p[:i], p[i+1:]
		}
		f.labels, f.paths = append(f.labels, label), append(f.paths, path)
	}
	if len(f.paths) == 0 {
		return fmt.Errorf("--in: give a results directory, or several separated by commas")
	}
	return nil
}

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("table", "--in DIR[,DIR...] [--table 1|2|all|paper|headline|ablation|convergence|budget|runs|traces|split|status|bench|tests|jsonl|versus] [--format md|csv|html] [--unit min|s] [--columns LIST] [--out FILE]", stderr)
	var f tableFlags
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "in DIR", *f.in); err != nil {
		return err
	}
	if err := f.parseIn(); err != nil {
		return err
	}
	format := strings.ToLower(*f.format)
	if format != "md" && format != "markdown" && format != "csv" && format != "html" {
		return fmt.Errorf("--format %q: use md, csv or html", *f.format)
	}
	tables, err := f.tables()
	if err != nil {
		return err
	}
	if *f.title != "" {
		for _, t := range tables {
			t.Title = *f.title
		}
	}
	return writeTables(tables, format, *f.out, stdout)
}

// tables makes the tables --table asks for.
func (f *tableFlags) tables() ([]*results.Table, error) {
	switch *f.which {
	case "runs", "traces", "split":
		return f.runTables()
	case "bench":
		var all []results.Benchmark
		for i, p := range f.paths {
			b, err := results.ReadBenchmarks(f.labels[i], p)
			if err != nil {
				return nil, err
			}
			all = append(all, b...)
		}
		return one(results.BenchTable(all, results.ParseBenchColumns(*f.columns)))
	case "tests":
		return ifOK(results.TestsTable(f.labels, f.paths))
	case "versus":
		var fits []results.Fit
		for i, p := range f.paths {
			fit, err := results.ReadFit(f.labels[i], p)
			if err != nil {
				return nil, err
			}
			fits = append(fits, fit)
		}
		return one(results.VersusTable(fits))
	case "status":
		return ifOK(statusTable(f.labels, f.paths))
	case "jsonl":
		var rows []map[string]any
		for _, p := range f.paths {
			r, err := results.ReadJSONLines(p)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r...)
		}
		t, err := results.JSONLinesTable(rows, *f.columns)
		return []*results.Table{t}, err
	}
	build, ok := tableKinds[*f.which]
	if !ok {
		return nil, fmt.Errorf("--table %q: use 1, 2, all, paper, headline, ablation, convergence, budget, runs, traces, split, bench, jsonl or versus", *f.which)
	}
	unit, err := results.ParseTimeUnit(*f.unit)
	if err != nil {
		return nil, fmt.Errorf("--unit: %w", err)
	}
	recs, err := f.records()
	if err != nil {
		return nil, err
	}
	s, err := results.Summarise(recs)
	if err != nil {
		return nil, err
	}
	return build(s, recs, f.paths, unit)
}

// records are the finished runs of the inputs, a later input's replacing
// an earlier one's of the same job (RunID).
func (f *tableFlags) records() ([]results.Record, error) {
	var recs []results.Record
	at := map[string]int{}
	for i, p := range f.paths {
		runs, err := results.ReadRuns(f.labels[i], p)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Partial {
				continue
			}
			if k, ok := at[r.ID()]; ok {
				recs[k] = r.Record
				continue
			}
			at[r.ID()] = len(recs)
			recs = append(recs, r.Record)
		}
	}
	return recs, nil
}

// runTables makes --table runs, traces and split.
func (f *tableFlags) runTables() ([]*results.Table, error) {
	all, err := results.Sets(f.labels, f.paths)
	if err != nil {
		return nil, err
	}
	runs, err := filterRuns(all, *f.jobs)
	if err != nil {
		return nil, err
	}
	switch *f.which {
	case "traces":
		steps := results.DefaultTraceSteps
		if *f.steps != "" {
			steps = nil
			for _, x := range strings.Split(*f.steps, ",") {
				s, err := strconv.Atoi(strings.TrimSpace(x))
				if err != nil || s < 1 {
					return nil, fmt.Errorf("--steps %q: give steps from 1, separated by commas", *f.steps)
				}
				steps = append(steps, s)
			}
		}
		return results.Traces(runs, steps), nil
	case "split":
		var out []*results.Table
		for _, r := range runs {
			out = append(out, results.TimeSplit(r))
		}
		return out, nil
	}
	shown := map[string]bool{}
	for _, r := range runs {
		shown[r.Path] = true
	}
	return f.runsTable(all, func(r results.Run) bool { return shown[r.Path] })
}

// runsTable makes --table runs.
func (f *tableFlags) runsTable(runs []results.Run, show func(results.Run) bool) ([]*results.Table, error) {
	spec := *f.columns
	if spec == "" {
		spec = results.DefaultRunColumns
	}
	cols, err := results.ParseColumns(spec)
	if err != nil {
		return nil, fmt.Errorf("--columns: %w", err)
	}
	var evals results.Evals
	if *f.evals != "" {
		if evals, err = results.ReadEvals(*f.evals); err != nil {
			return nil, err
		}
	}
	t, err := results.RunsTable(runs, cols, evals, show)
	return []*results.Table{t}, err
}

// filterRuns keeps the runs whose name matches one of the comma-separated
// patterns (all for none).
func filterRuns(runs []results.Run, patterns string) ([]results.Run, error) {
	if patterns == "" {
		return runs, nil
	}
	var out []results.Run
	for _, r := range runs {
		for _, p := range strings.Split(patterns, ",") {
			ok, err := filepath.Match(strings.TrimSpace(p), r.Name)
			if err != nil {
				return nil, fmt.Errorf("--jobs %q: %w", p, err)
			}
			if ok {
				out = append(out, r)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no run matches --jobs %s", results.ErrNoResults, patterns)
	}
	return out, nil
}

// statusTable is, a column per results directory, what its status.json
// says of the last gpnb reproduce run on it: the command, how it ended,
// the jobs done, when, and the machine and build (its environment).
func statusTable(labels, paths []string) (*results.Table, error) {
	t := &results.Table{Title: "The last gpnb reproduce run", Columns: []results.Column{{Name: "status.json"}}}
	rows := map[string]results.Row{}
	order := []string{"command", "state", "jobs done", "started", "updated", "machine", "Go", "BLAS", "build tags", "revision"}
	for i, p := range paths {
		b, err := os.ReadFile(filepath.Join(p, repro.StatusFile))
		if err != nil {
			return nil, err
		}
		var st repro.Status
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(p, repro.StatusFile), err)
		}
		t.Columns = append(t.Columns, results.Column{Name: labels[i]})
		e := st.Environment
		for k, v := range map[string]string{
			"command": strings.Join(st.Command, " "), "state": string(st.State), "jobs done": fmt.Sprintf("%d of %d", st.Done, st.Total),
			"started": st.Started.UTC().Format(time.RFC3339), "updated": st.Updated.UTC().Format(time.RFC3339),
			"machine": fmt.Sprintf("%s, %s cores (GOMAXPROCS %s), %s/%s", e["cpu"], e["numcpu"], e["gomaxprocs"], e["goos"], e["goarch"]),
			"Go":      e["go"], "BLAS": e["blas"], "build tags": e["-tags"], "revision": e["vcs.revision"],
		} {
			c := results.Text(v)
			if v == "" {
				c = results.Missing() // not recorded, e.g. a build without VCS stamping
			}
			rows[k] = append(rows[k], c)
		}
	}
	for _, k := range order {
		t.Rows = append(t.Rows, append(results.Row{results.Text(k)}, rows[k]...))
	}
	return t, nil
}

// tableKinds are the tables of a summary --table names.
var tableKinds = map[string]func(s *results.Summary, recs []results.Record, paths []string, unit results.TimeUnit) ([]*results.Table, error){
	"1": func(s *results.Summary, _ []results.Record, _ []string, u results.TimeUnit) ([]*results.Table, error) {
		return one(s.Table1(u))
	},
	"2": func(s *results.Summary, _ []results.Record, _ []string, u results.TimeUnit) ([]*results.Table, error) {
		return one(s.Table2(u))
	},
	"paper": func(s *results.Summary, _ []results.Record, _ []string, _ results.TimeUnit) ([]*results.Table, error) {
		return one(s.PaperComparison())
	},
	"headline": func(s *results.Summary, _ []results.Record, _ []string, _ results.TimeUnit) ([]*results.Table, error) {
		return one(s.Table1Paper())
	},
	"ablation": func(s *results.Summary, _ []results.Record, paths []string, _ results.TimeUnit) ([]*results.Table, error) {
		if t := s.Ablation(); t != nil {
			return one(t)
		}
		return nil, fmt.Errorf("--table ablation: %s holds no job of another estimator or with a budget (gpnb reproduce --estimators pathwise --budgets ...)", strings.Join(paths, ", "))
	},
	"budget": func(_ *results.Summary, recs []results.Record, paths []string, _ results.TimeUnit) ([]*results.Table, error) {
		if t := results.BudgetPairs(recs); t != nil {
			return one(t)
		}
		return nil, fmt.Errorf("--table budget: %s holds no warm run with a budget beside its cold run", strings.Join(paths, ", "))
	},
	"convergence": func(s *results.Summary, _ []results.Record, paths []string, _ results.TimeUnit) ([]*results.Table, error) {
		var missing []results.Unfinished
		for _, p := range paths {
			jobs, err := repro.Unfinished(p)
			if err != nil {
				return nil, err
			}
			for _, j := range jobs {
				missing = append(missing, results.Unfinished{ID: j.ID(), Dataset: j.Dataset, Method: j.Method()})
			}
		}
		return one(s.Convergence(missing))
	},
	"all": func(s *results.Summary, _ []results.Record, _ []string, u results.TimeUnit) ([]*results.Table, error) {
		out := []*results.Table{s.Table1(u), s.Table2(u)}
		if t := s.Ablation(); t != nil {
			out = append(out, t)
		}
		return out, nil
	},
}

func one(t *results.Table) ([]*results.Table, error) { return []*results.Table{t}, nil }

func ifOK(t *results.Table, err error) ([]*results.Table, error) {
	if err != nil {
		return nil, err
	}
	return one(t)
}

// writeTables writes tables in format f (md, csv or html) to path, or to
// stdout when path is "" or "-"; a file is written atomically.
func writeTables(tables []*results.Table, f, path string, stdout io.Writer) error {
	var b bytes.Buffer
	var err error
	switch f {
	case "html":
		err = results.WriteHTML(&b, "gpnb: warm-start marginal likelihood optimisation, reproduced", tables...)
	case "csv":
		// Several CSV tables are separated by an empty line.
		for i, t := range tables {
			if i > 0 {
				b.WriteString("\n")
			}
			if err = t.CSV(&b); err != nil {
				break
			}
		}
	default:
		for _, t := range tables {
			if err = t.Markdown(&b); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	if path == "" || path == "-" {
		_, err = stdout.Write(b.Bytes())
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes(), 0o644)
}
