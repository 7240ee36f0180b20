package repro

import (
	"encoding/csv"
	"fmt"
	"html"
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

// HTMLStyle is the style sheet WriteHTMLPage embeds; HTML fragments use its
// class names (gpnb-table).
const HTMLStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222}
table.gpnb-table{border-collapse:collapse;margin:1em 0;font-size:14px}
table.gpnb-table caption{caption-side:top;text-align:left;font-weight:600;margin-bottom:.4em}
table.gpnb-table th,table.gpnb-table td{padding:4px 10px;border-bottom:1px solid #ddd}
table.gpnb-table th{background:#f3f4f6;border-bottom:2px solid #999;text-align:center}
table.gpnb-table td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.gpnb-table tr.group td{border-top:2px solid #999}
table.gpnb-table tr:hover td{background:#fafafa}
p.gpnb-caption{max-width:60em}
ul.gpnb-notes{font-size:13px;color:#555;max-width:60em}`

// HTML writes the table as an HTML fragment (a caption paragraph, a <table
// class="gpnb-table"> and the notes); WriteHTMLPage wraps fragments in a
// styled, self-contained page.
func (t *Table) HTML(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<h3>%s</h3>\n<p class=\"gpnb-caption\">%s</p>\n<table class=\"gpnb-table\">\n<thead><tr>", html.EscapeString(t.Title), html.EscapeString(t.Caption))
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c.Name))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for ri, row := range t.Rows {
		group := false
		for ci, c := range row {
			if t.Columns[ci].Merge && ri > 0 && t.Rows[ri-1][ci].display(false) != c.display(false) {
				group = true
			}
		}
		if group {
			b.WriteString(`<tr class="group">`)
		} else {
			b.WriteString("<tr>")
		}
		for ci, c := range row {
			s := c.display(t.Columns[ci].SE)
			if t.Columns[ci].Merge && ri > 0 && t.Rows[ri-1][ci].display(false) == c.display(false) {
				s = ""
			}
			if c.Num {
				fmt.Fprintf(&b, `<td class="num">%s</td>`, html.EscapeString(s))
			} else {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(s))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if len(t.Notes) > 0 {
		b.WriteString("<ul class=\"gpnb-notes\">\n")
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "<li>%s</li>\n", html.EscapeString(n))
		}
		b.WriteString("</ul>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteHTMLPage writes a complete, self-contained HTML page (inline style,
// no external resources) holding the tables.
func WriteHTMLPage(w io.Writer, title string, tables ...*Table) error {
	if _, err := fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n<h2>%s</h2>\n",
		html.EscapeString(title), HTMLStyle, html.EscapeString(title)); err != nil {
		return err
	}
	for _, t := range tables {
		if err := t.HTML(w); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "</body>\n</html>\n")
	return err
}

// Text returns the table as display strings, the form Markdown and HTML use
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
