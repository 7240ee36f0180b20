package viz

import (
	"fmt"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/repro"
)

// report summarises results with package repro, the one implementation of
// the tables' statistics (the same as `gpnb table`), and picks the time
// unit: minutes when any run took 120 s or more, else seconds.
func report(results []gpnb.Result) (*repro.Report, repro.TimeUnit, error) {
	if err := checkResults(results); err != nil {
		return nil, "", err
	}
	recs, err := repro.RecordsOf(results)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrChart, err)
	}
	rep, err := repro.Summarise(recs)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrChart, err)
	}
	unit := repro.Seconds
	for _, r := range results {
		if finite(r.TotalSeconds) && r.TotalSeconds >= 120 {
			unit = repro.Minutes
		}
	}
	return rep, unit, nil
}

// TableFromRepro converts a table of package repro (Report.Table1, Table2,
// PaperComparison) into a Table, drawn as repro's Markdown draws it: "mean ±
// se" in standard-error columns, "—" for missing values, a merged column's
// repeated labels left blank with a rule above each new group, the title and
// caption as the caption and the notes as the note.
func TableFromRepro(t *repro.Table) *Table {
	head, rows, groups := t.Text()
	out := &Table{Caption: t.Title, Header: head, Rows: rows, Note: strings.Join(t.Notes, " ")}
	if t.Caption != "" {
		out.Caption += ". " + t.Caption
	}
	for _, c := range t.Columns {
		if c.Merge && len(rows) > 0 {
			out.Rules = append(out.Rules, 0) // the first group, too
			break
		}
	}
	out.Rules = append(out.Rules, groups...)
	return out
}

// ResultsTable is the paper's Table 2 (repro's Report.Table2): per dataset
// and method ("CG", "CG + ws", ..., "exact"), the splits, test RMSE, test
// log-likelihood, total and solver runtime and total solver iterations
// (mean ± standard error over splits), and the warm-start speed-up of total
// runtime and ratio of solver iterations, with a rule above each dataset. Results are converted with
// repro.RecordsOf, so two results of the same dataset, split, solver and
// mode are an error.
func ResultsTable(results []gpnb.Result) (*Table, error) {
	rep, unit, err := report(results)
	if err != nil {
		return nil, err
	}
	t := TableFromRepro(rep.Table2(unit))
	relabel(t, 1, rep.Table2Rows())
	return t, nil
}

// SpeedupTable is the paper's Table 1 (repro's Report.Table1): one row per
// method ("CG", then "CG + ws", per solver, then "exact", the Cholesky
// reference, when present), the mean test log-likelihood and total runtime
// on each dataset, and the warm-start speed-up and iteration ratio averaged
// over datasets, with a rule above each solver. Results are converted with
// repro.RecordsOf, as for ResultsTable.
func SpeedupTable(results []gpnb.Result) (*Table, error) {
	rep, unit, err := report(results)
	if err != nil {
		return nil, err
	}
	t := TableFromRepro(rep.Table1(unit))
	keys := rep.Table1Rows()
	for i, k := range keys {
		if i == 0 || k.Solver != keys[i-1].Solver {
			t.Rules = append(t.Rules, i)
		}
	}
	relabel(t, 0, keys)
	return t, nil
}

// relabel names the method of each row in column col as the charts do
// (MethodLabel: "CG", "CG + ws", "exact"), where repro writes "CG" and then
// "+ ws" below it, so that every row reads on its own.
func relabel(t *Table, col int, keys []repro.RowKey) {
	if len(keys) != len(t.Rows) {
		return // cannot happen: the keys are the rows' own
	}
	for i, k := range keys {
		t.Rows[i][col] = MethodLabel(k.Solver, k.Mode == "warm")
	}
}
