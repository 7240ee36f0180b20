package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/gpnb/results"
	"github.com/gpnb/gpnb/internal/atomicfile"
)

func init() {
	register(&command{name: "table", short: "render Table 1 and Table 2 (and the ablation of estimators and budgets) from a reproduce results directory", run: runTable})
}

// tableKinds are the tables --table names, each made from the summary of
// the --in directory.
var tableKinds = map[string]func(s *results.Summary, in string, unit results.TimeUnit) ([]*results.Table, error){
	"1": func(s *results.Summary, _ string, u results.TimeUnit) ([]*results.Table, error) {
		return one(s.Table1(u))
	},
	"2": func(s *results.Summary, _ string, u results.TimeUnit) ([]*results.Table, error) {
		return one(s.Table2(u))
	},
	"paper": func(s *results.Summary, _ string, _ results.TimeUnit) ([]*results.Table, error) {
		return one(s.PaperComparison())
	},
	"ablation": func(s *results.Summary, in string, _ results.TimeUnit) ([]*results.Table, error) {
		if t := s.Ablation(); t != nil {
			return one(t)
		}
		return nil, fmt.Errorf("--table ablation: %s holds no job of another estimator or with a budget (gpnb reproduce --estimators pathwise --budgets ...)", in)
	},
	"convergence": func(s *results.Summary, in string, _ results.TimeUnit) ([]*results.Table, error) {
		jobs, err := repro.Unfinished(in)
		if err != nil {
			return nil, err
		}
		var missing []results.Unfinished
		for _, j := range jobs {
			missing = append(missing, results.Unfinished{ID: j.ID(), Dataset: j.Dataset, Method: j.Method()})
		}
		return one(s.Convergence(missing))
	},
	"all": func(s *results.Summary, _ string, u results.TimeUnit) ([]*results.Table, error) {
		out := []*results.Table{s.Table1(u), s.Table2(u)}
		if t := s.Ablation(); t != nil {
			out = append(out, t)
		}
		return out, nil
	},
}

func one(t *results.Table) ([]*results.Table, error) { return []*results.Table{t}, nil }

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("table", "--in DIR [--format md|csv|html] [--table 1|2|all|paper|ablation|convergence] [--unit min|s] [--out FILE]", stderr)
	in := fs.String("in", "", "results directory of gpnb reproduce (required)")
	format := fs.String("format", "md", "output format: md (Markdown), csv or html (a styled, self-contained page)")
	which := fs.String("table", "all", "which table: 1 (the paper's main table), 2 (the appendix table), all (both, and the ablation when there are variants), paper (ours next to the paper's published values), ablation (each warm-started estimator or budget variant against Hutchinson + warm start), or convergence (how the solves ended: steps at the cap, stalled or with the SGD rate halved, the most iterations of a step, runs without a result)")
	unitStr := fs.String("unit", "min", "runtime unit: min (like the paper) or s")
	out := fs.String("out", "", "output file (default stdout); written atomically")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "in DIR", *in); err != nil {
		return err
	}
	unit, err := results.ParseTimeUnit(*unitStr)
	if err != nil {
		return fmt.Errorf("--unit: %w", err)
	}
	build, ok := tableKinds[*which]
	if !ok {
		return fmt.Errorf("--table %q: use 1, 2, all, paper, ablation or convergence", *which)
	}
	f := strings.ToLower(*format)
	if f != "md" && f != "markdown" && f != "csv" && f != "html" {
		return fmt.Errorf("--format %q: use md, csv or html", *format)
	}
	s, err := results.Open(*in)
	if err != nil {
		return err
	}
	tables, err := build(s, *in, unit)
	if err != nil {
		return err
	}
	return writeTables(tables, f, *out, stdout)
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
