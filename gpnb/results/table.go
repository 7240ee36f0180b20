package results

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Table is a table independent of its format: the summaries build one, and
// Markdown, CSV and HTML write it.
type Table struct {
	Title   string
	Caption string
	Columns []Column
	Rows    []Row
	Notes   []string
	// Groups lists the rows that begin a group (a solver, a dataset),
	// drawn with a rule above them in HTML. A Merge column's new values
	// begin groups too.
	Groups []int
}

// Column is a table column. An SE column shows "mean ± se" in Markdown and
// HTML and becomes two columns, "<name>" and "<name> se", in CSV.
type Column struct {
	Name  string
	SE    bool
	Merge bool // Markdown and HTML leave a cell blank when it repeats the one above
}

// Row is one table row, a cell per column.
type Row []Cell

// Cell is a label or a number.
type Cell struct {
	Num    bool    // a number; otherwise Text
	Text   string  // a label; for a number, its digits as written (Verbatim)
	Value  float64 // NaN: missing
	SE     float64 // NaN: none
	Digits int     // decimals shown in Markdown and HTML
	Suffix string  // shown after the value, e.g. "×"
}

// Text returns a label cell.
func Text(s string) Cell { return Cell{Text: s} }

// Verbatim returns a numeric cell shown as s, as a log wrote the number.
func Verbatim(s string) Cell { return Cell{Num: true, Text: s, SE: math.NaN()} }

// Missing returns an empty numeric cell, shown as "—" (Markdown, HTML) or
// left empty (CSV).
func Missing() Cell { return Cell{Num: true, Value: math.NaN(), SE: math.NaN()} }

// Number returns a numeric cell of v with digits decimals, no standard
// error and suffix after it; NaN is missing.
func Number(v float64, digits int, suffix string) Cell {
	return Cell{Num: true, Value: v, SE: math.NaN(), Digits: digits, Suffix: suffix}
}

// display formats c for Markdown and HTML.
func (c Cell) display(se bool) string {
	if !c.Num || c.Text != "" {
		return c.Text + c.Suffix
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

// Validate reports a table whose rows do not have one cell per column, or
// whose Groups name rows it does not have.
func (t *Table) Validate() error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("table %q has no columns", t.Title)
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("table %q: row %d has %d cells for %d columns", t.Title, i, len(r), len(t.Columns))
		}
	}
	for _, g := range t.Groups {
		if g < 0 || g >= len(t.Rows) {
			return fmt.Errorf("table %q: group at row %d, but there are %d rows", t.Title, g, len(t.Rows))
		}
	}
	return nil
}

// cells returns the rows as display strings, merged cells blank, and the
// rows that begin a group (Groups and a Merge column's new values, the
// first row included when there is a Merge column).
func (t *Table) cells() (rows [][]string, groups []int) {
	groups = slices.Clone(t.Groups)
	for ri, row := range t.Rows {
		var out []string
		for ci, c := range row {
			s := c.display(t.Columns[ci].SE)
			if t.Columns[ci].Merge {
				switch {
				case ri == 0:
					groups = append(groups, 0)
				case t.Rows[ri-1][ci].display(false) == c.display(false):
					s = ""
				default:
					groups = append(groups, ri)
				}
			}
			out = append(out, s)
		}
		rows = append(rows, out)
	}
	slices.Sort(groups)
	return rows, slices.Compact(groups)
}

// Markdown writes the table as a GitHub-flavoured Markdown section: a level-3
// heading, the caption, the table and the notes as a list.
func (t *Table) Markdown(w io.Writer) error {
	if err := t.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	if t.Caption != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Caption)
	}
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
	rows, _ := t.cells()
	for _, row := range rows {
		b.WriteString("|")
		for _, s := range row {
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
	if err := t.Validate(); err != nil {
		return err
	}
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
			if !c.Num || c.Text != "" {
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

// Style is the style sheet of the tables' HTML (classes gpnb-table,
// gpnb-rule and gpnb-table-note), to be included once in a page.
const Style = `table.gpnb-table{border-collapse:collapse;font-size:13px;margin:8px 0 18px;font-variant-numeric:tabular-nums;font-family:system-ui,sans-serif}
table.gpnb-table caption{caption-side:top;text-align:left;font-weight:600;padding:4px 0 6px;max-width:70em}
table.gpnb-table th{border-top:2px solid #333;border-bottom:1px solid #333;padding:4px 10px;text-align:center;background:#f6f6f6}
table.gpnb-table td{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}
table.gpnb-table td:first-child,table.gpnb-table th:first-child{text-align:left}
table.gpnb-table tr.gpnb-rule td{border-top:1px solid #888}
table.gpnb-table tr:last-child td{border-bottom:2px solid #333}
table.gpnb-table tr:hover td{background:#f3f7ff}
.gpnb-table-note{color:#666;font-size:12px;margin:-12px 0 18px}
`

// HTML writes the table as an HTML fragment without styles (see Style):
// the title and caption as its caption, a rule above each group, the notes
// under it.
func (t *Table) HTML(w io.Writer) error {
	if err := t.Validate(); err != nil {
		return err
	}
	rows, groups := t.cells()
	var b strings.Builder
	b.WriteString("<table class=\"gpnb-table\">\n")
	caption := t.Title
	if t.Caption != "" {
		caption += ". " + t.Caption
	}
	if caption != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>\n", html.EscapeString(caption))
	}
	b.WriteString("<thead><tr>")
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c.Name))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i, r := range rows {
		if slices.Contains(groups, i) {
			b.WriteString("<tr class=\"gpnb-rule\">")
		} else {
			b.WriteString("<tr>")
		}
		for _, c := range r {
			fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if len(t.Notes) > 0 {
		fmt.Fprintf(&b, "<div class=\"gpnb-table-note\">%s</div>\n", html.EscapeString(strings.Join(t.Notes, " ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHTML writes the tables as one self-contained HTML page with a title,
// the style sheet once and each table followed by an empty line.
func WriteHTML(w io.Writer, title string, tables ...*Table) error {
	var b strings.Builder
	t := html.EscapeString(title)
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n</head>\n<body style=\"font-family:system-ui,sans-serif;margin:2em\">\n<h2>%s</h2>\n", t, t)
	b.WriteString("<style>\n" + Style + "</style>\n")
	for _, tb := range tables {
		if err := tb.HTML(&b); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
