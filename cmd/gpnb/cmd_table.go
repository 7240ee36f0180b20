package main

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/internal/atomicfile"
	"github.com/gpnb/gpnb/viz"
)

func init() {
	register(&command{name: "table", short: "render Table 1 and Table 2 (and the ablation of estimators and budgets) from a reproduce results directory", run: runTable})
}

func runTable(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("table", "--in DIR [--format md|csv|html] [--table 1|2|all|paper|ablation|convergence] [--unit min|s] [--out FILE]", stderr)
	in := fs.String("in", "", "results `DIR` of gpnb reproduce (required)")
	format := fs.String("format", "md", "md, csv or html")
	which := fs.String("table", "all", "1, 2, all, paper (beside the paper's), ablation or convergence")
	unitStr := fs.String("unit", "min", "runtime unit: min (like the paper) or s")
	out := fs.String("out", "", "output `FILE` (default stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "in DIR", *in); err != nil {
		return err
	}
	unit, err := repro.ParseTimeUnit(*unitStr)
	if err != nil {
		return fmt.Errorf("--unit: %w", err)
	}
	f := strings.ToLower(*format)
	if f != "md" && f != "markdown" && f != "csv" && f != "html" {
		return fmt.Errorf("--format %q: use md, csv or html", *format)
	}
	rep, err := repro.Open(*in)
	if err != nil {
		return err
	}
	var tables []*repro.Table
	switch *which {
	case "1":
		tables = []*repro.Table{rep.Table1(unit)}
	case "2":
		tables = []*repro.Table{rep.Table2(unit)}
	case "paper":
		tables = []*repro.Table{rep.PaperComparison()}
	case "ablation":
		t := rep.Ablation()
		if t == nil {
			return fmt.Errorf("--table ablation: %s holds no job of another estimator or with a budget (gpnb reproduce --estimators pathwise --budgets ...)", *in)
		}
		tables = []*repro.Table{t}
	case "convergence":
		unfinished, err := repro.Unfinished(*in)
		if err != nil {
			return err
		}
		tables = []*repro.Table{rep.Convergence(unfinished)}
	case "all":
		tables = []*repro.Table{rep.Table1(unit), rep.Table2(unit)}
		if t := rep.Ablation(); t != nil {
			tables = append(tables, t)
		}
	default:
		return fmt.Errorf("--table %q: use 1, 2, all, paper, ablation or convergence", *which)
	}
	var b bytes.Buffer
	switch f {
	case "html":
		writeTablesHTML(&b, "gpnb: warm-start marginal likelihood optimisation, reproduced", tables)
	case "csv":
		// With --table all, the two CSV tables are separated by an empty line.
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
	if *out == "" || *out == "-" {
		_, err = stdout.Write(b.Bytes())
		return err
	}
	return atomicfile.WriteFile(*out, b.Bytes(), 0o644)
}

// writeTablesHTML writes a self-contained HTML page (inline styles, once,
// no external resources) with the tables drawn by viz.TablesHTML, the
// project's styled table renderer.
func writeTablesHTML(b *bytes.Buffer, title string, tables []*repro.Table) {
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n</head>\n<body style=\"font-family:system-ui,sans-serif;margin:2em\">\n<h2>%s</h2>\n",
		html.EscapeString(title), html.EscapeString(title))
	vt := make([]*viz.Table, len(tables))
	for i, t := range tables {
		vt[i] = viz.TableFromRepro(t)
	}
	b.WriteString(viz.TablesHTML(vt...))
	b.WriteString("</body>\n</html>\n")
}
