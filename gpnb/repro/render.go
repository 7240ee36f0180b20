package repro

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Table is a rendered-format-independent table: Table1 and Table2 build
// one, and Markdown, CSV and HTML write it.
type Table struct {
	Title   string
	Caption string
	Columns []Column
	Rows    []Row
	Notes   []string
}

// Column is a table column. An SE column shows "mean ± se" in Markdown and
// HTML and becomes two columns, "<name>" and "<name> se", in CSV.
type Column struct {
	Name  string
	SE    bool
	Merge bool // Markdown/HTML: leave a cell blank when it repeats the one above
}

// Row is one table row, a cell per column.
type Row []Cell

// Cell is a label or a number.
type Cell struct {
	Num    bool    // a number; otherwise Text
	Text   string  // a label
	Value  float64 // NaN: missing
	SE     float64 // NaN: none
	Digits int     // decimals shown in Markdown and HTML
	Suffix string  // shown after the value, e.g. "×"
}

// Text returns a label cell.
func Text(s string) Cell { return Cell{Text: s} }

// Missing returns an empty numeric cell, shown as "—" (Markdown, HTML) or
// left empty (CSV).
func Missing() Cell { return Cell{Num: true, Value: math.NaN(), SE: math.NaN()} }

// display formats c for Markdown and HTML.
func (c Cell) display(se bool) string {
	if !c.Num {
		return c.Text
	}
	if math.IsNaN(c.Value) {
		return "—"
	}
	s := strconv.FormatFloat(c.Value, 'f', c.Digits, 64)
	if s == "-0" || strings.Trim(s, "-0.") == "" && strings.HasPrefix(s, "-") {
		s = s[1:] // no "-0.000"
	}
	s += c.Suffix
	if se && !math.IsNaN(c.SE) {
		s += " ± " + strconv.FormatFloat(c.SE, 'f', c.Digits, 64)
	}
	return s
}

func csvNum(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Markdown writes the table as a GitHub-flavoured Markdown section: a level-3
// heading, the caption, the table and the notes as a list.
func (t *Table) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s\n\n", t.Title, t.Caption)
	b.WriteString("|")
	for _, c := range t.Columns {
		b.WriteString(" " + mdEscape(c.Name) + " |")
	}
	b.WriteString("\n|")
	for i := range t.Columns {
		if i == 0 || !t.numericColumn(i) {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for ri, row := range t.Rows {
		b.WriteString("|")
		for ci, c := range row {
			s := c.display(t.Columns[ci].SE)
			if t.Columns[ci].Merge && ri > 0 && t.Rows[ri-1][ci].display(false) == c.display(false) {
				s = ""
			}
			b.WriteString(" " + mdEscape(s) + " |")
		}
		b.WriteString("\n")
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (t *Table) numericColumn(i int) bool {
	for _, r := range t.Rows {
		if !r[i].Num {
			return false
		}
	}
	return true
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// CSV writes the table as CSV with a header row: numbers at full precision,
// an extra "<name> se" column after every SE column, missing values empty.
func (t *Table) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, c := range t.Columns {
		head = append(head, c.Name)
		if c.SE {
			head = append(head, c.Name+" se")
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, row := range t.Rows {
		var rec []string
		for ci, c := range row {
			if !c.Num {
				rec = append(rec, c.Text)
			} else {
				rec = append(rec, csvNum(c.Value))
			}
			if t.Columns[ci].SE {
				if c.Num {
					rec = append(rec, csvNum(c.SE))
				} else {
					rec = append(rec, "")
				}
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Text returns the table as display strings, the form Markdown uses
// ("mean ± se", "—" for missing values, merged labels left blank), and the
// indices of rows that start a new group of the merged column (for a rule
// above them), so other renderers (such as package viz) can draw it.
func (t *Table) Text() (header []string, rows [][]string, groupStarts []int) {
	for _, c := range t.Columns {
		header = append(header, c.Name)
	}
	for ri, row := range t.Rows {
		var out []string
		group := false
		for ci, c := range row {
			s := c.display(t.Columns[ci].SE)
			if t.Columns[ci].Merge && ri > 0 {
				if t.Rows[ri-1][ci].display(false) == c.display(false) {
					s = ""
				} else {
					group = true
				}
			}
			out = append(out, s)
		}
		if group {
			groupStarts = append(groupStarts, ri)
		}
		rows = append(rows, out)
	}
	return header, rows, groupStarts
}
