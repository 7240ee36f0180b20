package viz

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"
)

// Table is a captioned table of text cells (the paper's Tables 1 and 2):
// the runner fills one, HTML and Show render it styled, String as plain
// text. The first column is left-aligned (row labels), the rest right-
// aligned (numbers).
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
	// Rules lists row indices that get a horizontal rule above them, to
	// separate groups (a dataset, a solver).
	Rules []int
	// Note is printed under the table.
	Note string
}

// Validate checks that the table has a header and that every row has one
// cell per header column.
func (t *Table) Validate() error {
	if t == nil || len(t.Header) == 0 {
		return fmt.Errorf("%w: table has no header: set Header to the column names", ErrChart)
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Header) {
			return fmt.Errorf("%w: table %q: row %d has %d cells for %d columns", ErrChart, t.Caption, i, len(r), len(t.Header))
		}
	}
	for _, r := range t.Rules {
		if r < 0 || r >= len(t.Rows) {
			return fmt.Errorf("%w: table %q: rule above row %d, but there are %d rows", ErrChart, t.Caption, r, len(t.Rows))
		}
	}
	return nil
}

func (t *Table) fragment() (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	rule := map[int]bool{}
	for _, r := range t.Rules {
		rule[r] = true
	}
	var b strings.Builder
	b.WriteString("<table class=\"gpnb-table\">\n")
	if t.Caption != "" {
		fmt.Fprintf(&b, "<caption>%s</caption>\n", html.EscapeString(t.Caption))
	}
	b.WriteString("<thead><tr>")
	for _, h := range t.Header {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for i, r := range t.Rows {
		if rule[i] {
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
	if t.Note != "" {
		fmt.Fprintf(&b, "<div class=\"gpnb-table-note\">%s</div>\n", html.EscapeString(t.Note))
	}
	return b.String(), nil
}

// HTML returns the styled table as an HTML fragment (styles included), or
// the validation error as text.
func (t *Table) HTML() string {
	s, err := t.fragment()
	if err != nil {
		return errorHTML(err)
	}
	return css + s
}

// TablesHTML returns the tables as one HTML fragment, each followed by an
// empty line, with the styles once at its head rather than once a table. A
// table that fails Validate renders as its error message.
func TablesHTML(tables ...*Table) string {
	var b strings.Builder
	b.WriteString(css)
	for _, t := range tables {
		s, err := t.fragment()
		if err != nil {
			s = errorHTML(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// String renders the table as aligned plain text, for terminals.
func (t *Table) String() string {
	if err := t.Validate(); err != nil {
		return err.Error()
	}
	w := make([]int, len(t.Header))
	for i, h := range t.Header {
		w[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			w[i] = max(w[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	if t.Caption != "" {
		b.WriteString(t.Caption + "\n")
	}
	line := func(cells []string) {
		for i, c := range cells {
			pad := strings.Repeat(" ", w[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	total := len(w)*2 - 2
	for _, x := range w {
		total += x
	}
	line(t.Header)
	b.WriteString(strings.Repeat("-", total) + "\n")
	rule := map[int]bool{}
	for _, r := range t.Rules {
		rule[r] = true
	}
	for i, r := range t.Rows {
		if rule[i] && i > 0 {
			b.WriteString(strings.Repeat("-", total) + "\n")
		}
		line(r)
	}
	if t.Note != "" {
		b.WriteString(t.Note + "\n")
	}
	return b.String()
}
