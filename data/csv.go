package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// rawTable is a CSV file as scanned: every row's fields, parsed as numbers
// where they are numbers, with the text of the others kept for the header
// decision and for messages.
type rawTable struct {
	src        string
	vals       []float64 // rows×cols, row-major; a field of text is NaN
	rows, cols int
	lines      []int             // the file's line number of each row
	first      []string          // the first row's fields, as text
	odd        map[[2]int]string // the text of every field that is not a finite number, by (row, column)
}

func (t *rawTable) row(i int) []float64 { return t.vals[i*t.cols : (i+1)*t.cols] }

// scanCSV reads comma-separated fields from r, one row a line. Blank lines
// are skipped; fields may be padded with spaces or tabs, and quoted ("...",
// with "" for a quote, holding commas if need be, within one line); a
// UTF-8 byte-order mark and CRLF line ends are accepted. src names the
// input in error messages. Only rows of unequal length and unclosed quotes
// are errors here: what a field of text means depends on the columns
// chosen later.
func scanCSV(r io.Reader, src string) (*rawTable, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	t := &rawTable{src: src, odd: map[[2]int]string{}}
	var (
		long     []byte   // a line longer than br's buffer
		fields   [][]byte // one line's fields, reused
		line     int
		colsLine int // the line that fixed t.cols
	)
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("data: reading %s: %w", src, err)
		}
		if len(b) > 0 {
			line++
			if line == 1 {
				b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
			}
			var perr error
			if fields, perr = t.addLine(b, line, &colsLine, fields[:0]); perr != nil {
				return nil, perr
			}
		}
		if err == io.EOF {
			break
		}
	}
	return t, nil
}

// addLine appends the fields of one line to t; fields is scratch space.
func (t *rawTable) addLine(b []byte, line int, colsLine *int, fields [][]byte) ([][]byte, error) {
	b = bytes.TrimRight(b, "\r\n")
	if len(bytes.TrimSpace(b)) == 0 {
		return fields, nil
	}
	fields, err := splitFields(b, fields)
	if err != nil {
		return fields, fmt.Errorf("%w: %s line %d: %v", ErrNotNumber, t.src, line, err)
	}
	n := len(fields)
	if t.rows == 0 {
		t.cols, *colsLine = n, line
	} else if n != t.cols {
		return fields, fmt.Errorf("%w: %s line %d has %d fields, expected %d as on line %d", ErrRagged, t.src, line, n, t.cols, *colsLine)
	}
	for j, f := range fields {
		f = bytes.Trim(f, " \t")
		if t.rows == 0 {
			t.first = append(t.first, string(f))
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			v = math.NaN()
		}
		// Underflow to 0 or a subnormal is accepted as a number.
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.odd[[2]int{t.rows, j}] = string(f)
		}
		t.vals = append(t.vals, v)
	}
	t.lines = append(t.lines, line)
	t.rows++
	return fields, nil
}

// splitFields splits a line at its commas, appending the fields to dst. A
// field whose first non-blank character is a double quote runs to the
// closing quote ("" stands for a quote) and may hold commas.
func splitFields(b []byte, dst [][]byte) ([][]byte, error) {
	quoted := bytes.IndexByte(b, '"') >= 0
	for {
		if quoted {
			if s := bytes.TrimLeft(b, " \t"); len(s) > 0 && s[0] == '"' {
				f, rest, err := unquote(s[1:], len(dst)+1)
				if err != nil {
					return dst, err
				}
				dst = append(dst, f)
				if rest = bytes.TrimLeft(rest, " \t"); len(rest) == 0 {
					return dst, nil
				}
				if rest[0] != ',' {
					return dst, fmt.Errorf("column %d: text after a closing quote", len(dst))
				}
				b = rest[1:]
				continue
			}
		}
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			return append(dst, b), nil
		}
		dst, b = append(dst, b[:i]), b[i+1:]
	}
}

// unquote returns the quoted field that s starts with (its opening quote
// removed) and what follows its closing quote.
func unquote(s []byte, col int) (field, rest []byte, err error) {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			out = append(out, s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '"' {
			out = append(out, '"')
			i++
			continue
		}
		return out, s[i+1:], nil
	}
	return nil, nil, fmt.Errorf("column %d: a quote is not closed on its line (a field cannot span lines)", col)
}

// cellKind is what a field that is not a finite number holds.
type cellKind int

const (
	numberCell   cellKind = iota
	missingCell           // a missing-value marker (missingMarkers)
	infCell               // ±Inf written out
	overflowCell          // a number beyond float64's range
	textCell              // anything else
)

// missingMarkers are the fields, lower-cased, that mean a missing value:
// what pandas, R, spreadsheets and the UCI repository write for one.
var missingMarkers = map[string]bool{
	"": true, "na": true, "n/a": true, "nan": true, "-nan": true, "+nan": true,
	"null": true, "none": true, "#n/a": true, "<na>": true, "?": true,
}

// kindOf classifies a field's text.
func kindOf(s string) cellKind {
	if missingMarkers[strings.ToLower(s)] {
		return missingCell
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && math.IsInf(v, 0):
		return infCell
	case err == nil:
		return numberCell
	case errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return overflowCell
	case errors.Is(err, strconv.ErrRange):
		return numberCell
	}
	return textCell
}

// frame is a scanned file with its header decided: data rows from start
// on, and a name for every column.
type frame struct {
	*rawTable
	header bool
	names  []string // the header's fields, or "1", "2", ...
	start  int      // the first data row: 1 after a header, else 0
}

// frame decides whether t's first row is a header by rule (see
// HeaderRule); with HeaderAuto, a first row holding every name of want
// (the training file's input names) is a header too.
func (t *rawTable) frame(rule HeaderRule, want []string) (*frame, error) {
	if t.rows == 0 {
		return nil, fmt.Errorf("%w: %s has no data rows; expected comma-separated numbers, one row a line", ErrEmpty, t.src)
	}
	f := &frame{rawTable: t}
	switch rule {
	case HeaderYes:
		f.header = true
	case HeaderAuto:
		f.header = t.textFirst() || holdsAll(t.first, want)
	}
	if !f.header {
		f.names = make([]string, t.cols)
		for j := range f.names {
			f.names[j] = strconv.Itoa(j + 1)
		}
		return f, nil
	}
	if t.rows == 1 {
		return nil, fmt.Errorf("%w: %s has a header line and no data rows", ErrEmpty, t.src)
	}
	f.names, f.start = t.first, 1
	return f, nil
}

// textFirst reports whether the first row has a field of text in a column
// where no later row has one.
func (t *rawTable) textFirst() bool {
	later := make([]bool, t.cols)
	for k, s := range t.odd {
		if k[0] > 0 && kindOf(s) == textCell {
			later[k[1]] = true
		}
	}
	for j, s := range t.first {
		if !later[j] && kindOf(s) == textCell {
			return true
		}
	}
	return false
}

// holdsAll reports whether want is not empty and every name of it is among
// fields.
func holdsAll(fields, want []string) bool {
	if len(want) == 0 {
		return false
	}
	for _, w := range want {
		if _, err := byName(fields, w); err != nil {
			return false
		}
	}
	return true
}

// choose resolves c's Target and Inputs on f into Columns, with a warning
// for the unnamed columns the default inputs leave out.
func (f *frame) choose(c *config) (Columns, []Warning, error) {
	cols := Columns{Header: f.header, Names: f.names, Target: f.cols - 1, DropMissing: c.drop}
	var err error
	if c.set["Target"] {
		if cols.Target, err = lookup(f.names, c.target); err != nil {
			return Columns{}, nil, fmt.Errorf("%w: %s: Target: %w", ErrColumns, f.src, err)
		}
	}
	var warn []Warning
	if c.set["Inputs"] {
		cols.Inputs, err = f.chosenInputs(c.inputs, cols.Target)
	} else {
		cols.Inputs, warn = f.otherInputs(cols.Target)
	}
	if err != nil {
		return Columns{}, nil, err
	}
	if len(cols.Inputs) == 0 {
		if f.cols == 1 && strings.ContainsAny(f.first[0], ";\t") {
			return Columns{}, nil, fmt.Errorf("%w: %s has a single column: fields are separated by commas only (line 1 holds a ';' or a tab): convert the file to comma-separated values", ErrNoInputs, f.src)
		}
		if f.cols == 1 {
			return Columns{}, nil, fmt.Errorf("%w: %s has a single column (the target) and no inputs; a regression needs input columns beside the target", ErrNoInputs, f.src)
		}
		return Columns{}, nil, fmt.Errorf("%w: %s: every column but the target is unnamed; choose the inputs (Inputs, --columns)", ErrNoInputs, f.src)
	}
	return cols, warn, nil
}

// chosenInputs resolves the names or numbers keys, which must be distinct
// and not the target.
func (f *frame) chosenInputs(keys []string, target int) ([]int, error) {
	var out []int
	for _, k := range keys {
		p, err := lookup(f.names, k)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: %s: Inputs: %w", ErrColumns, f.src, err)
		case p == target:
			return nil, fmt.Errorf("%w: %s: Inputs: %q is the target column; an input cannot be the target", ErrColumns, f.src, k)
		case slices.Contains(out, p):
			return nil, fmt.Errorf("%w: %s: Inputs: column %d is given twice", ErrColumns, f.src, p+1)
		}
		out = append(out, p)
	}
	return out, nil
}

// otherInputs returns every column but the target and, after a header, the
// unnamed ones, with a warning naming those by number.
func (f *frame) otherInputs(target int) ([]int, []Warning) {
	var out []int
	var skipped []string
	for p := range f.names {
		switch {
		case p == target:
		case f.header && f.names[p] == "":
			skipped = append(skipped, strconv.Itoa(p+1))
		default:
			out = append(out, p)
		}
	}
	if skipped == nil {
		return out, nil
	}
	n := len(skipped)
	return out, []Warning{{Kind: SkippedColumns, Count: n, Columns: skipped, Message: fmt.Sprintf(
		"%s no name in the header line (a row index, as pandas and R write one): left out of the inputs; name %s in Inputs (--columns) to use %s",
		plural(n, "column "+skipped[0]+" has", "columns "+strings.Join(skipped, ", ")+" have"), plural(n, "it", "them"), plural(n, "it", "them"))}}
}

// match returns the positions in f, a second file (test or points), of c's
// d inputs and target: by name when both files have a header, else by
// position, f then having the training file's columns or (for points,
// needTarget false) just the d inputs. target is −1 when f has no target
// column and needTarget is false. With the zero Columns (data not from a
// CSV file) f holds the d inputs in order.
func (c Columns) match(f *frame, d int, needTarget bool) (inputs []int, target int, err error) {
	if c.Header && f.header {
		return c.matchNames(f, needTarget)
	}
	inputs, target = seq(d), -1
	switch {
	case !c.IsZero() && f.cols == len(c.Names):
		return c.Inputs, c.Target, nil
	case !needTarget && f.cols == d:
		return inputs, target, nil
	case c.IsZero():
		return nil, 0, fmt.Errorf("%w: %s has %d columns; give the %d input columns, one point a row", ErrColumns, f.src, f.cols, d)
	case needTarget:
		return nil, 0, fmt.Errorf("%w: %s has %d columns but the training file has %d; give both the same columns (or header lines, to match them by name)", ErrColumns, f.src, f.cols, len(c.Names))
	}
	return nil, 0, fmt.Errorf("%w: %s has %d columns: give the training file's %d, or the %d inputs (%s) in that order, or a header line naming them", ErrColumns, f.src, f.cols, len(c.Names), d, strings.Join(c.InputNames(), ", "))
}

// matchNames finds c's columns in f by their names.
func (c Columns) matchNames(f *frame, needTarget bool) (inputs []int, target int, err error) {
	for _, name := range c.InputNames() {
		p, err := byName(f.names, name)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s: the training file's input column %q: %w", ErrColumns, f.src, name, err)
		}
		inputs = append(inputs, p)
	}
	target, err = byName(f.names, c.TargetName())
	switch {
	case err == nil:
	case needTarget:
		return nil, 0, fmt.Errorf("%w: %s: the training file's target column %q: %w", ErrColumns, f.src, c.TargetName(), err)
	default:
		target = -1
	}
	return inputs, target, nil
}

// byName returns the position of the column named key: the one equal to
// it, else the one equal ignoring case.
func byName(names []string, key string) (int, error) {
	key = strings.TrimSpace(key)
	for _, fold := range []bool{false, true} {
		found := -1
		for p, n := range names {
			if n == key || (fold && strings.EqualFold(n, key)) {
				if found >= 0 {
					return 0, fmt.Errorf("%w: %q names columns %d and %d; rename one, or give the column's number", errAmbiguous, key, found+1, p+1)
				}
				found = p
			}
		}
		if found >= 0 {
			return found, nil
		}
	}
	return 0, fmt.Errorf("no column %q (the columns: %s)", key, listNames(names))
}

// extract copies the table rows rows of f, columns inputs and (unless −1)
// target, into x and y. A field of text there is an ErrNotNumber error;
// missing and infinite values are left for the checks (NaN, ±Inf).
func (f *frame) extract(rows, inputs []int, target int) (*mat.Dense, []float64, error) {
	if err := f.textIn(inputs, target); err != nil {
		return nil, nil, err
	}
	d := len(inputs)
	x := make([]float64, len(rows)*d)
	var y []float64
	if target >= 0 {
		y = make([]float64, len(rows))
	}
	for k, i := range rows {
		r := f.row(i)
		for j, p := range inputs {
			x[k*d+j] = r[p]
		}
		if target >= 0 {
			y[k] = r[target]
		}
	}
	return mat.NewDense(len(rows), d, x), y, nil
}

// textIn returns an error for the first field of text (in file order) in
// the data rows of the columns used.
func (f *frame) textIn(inputs []int, target int) error {
	used := make([]bool, f.cols)
	for _, p := range append([]int{target}, inputs...) {
		if p >= 0 {
			used[p] = true
		}
	}
	first := [2]int{-1, -1}
	for k, s := range f.odd {
		if k[0] >= f.start && used[k[1]] && kindOf(s) == textCell && (first[0] < 0 || k[0] < first[0] || k[0] == first[0] && k[1] < first[1]) {
			first = k
		}
	}
	if first[0] < 0 {
		return nil
	}
	line, text := f.lines[first[0]], f.odd[first]
	hint := "only decimal numbers are allowed"
	switch {
	case strings.ContainsAny(text, ";\t"):
		hint = "fields are separated by commas only: convert the file to comma-separated values"
	case first[0] == 0:
		hint = "if this is a header line, say so: Header(HeaderYes), --header=yes"
	}
	return fmt.Errorf("%w: %s line %d column %d: %s; %s", ErrNotNumber, f.src, line, first[1]+1, quote(text), hint)
}

// quote quotes a field for an error message, shortened if long.
func quote(f string) string {
	if len(f) > 40 {
		return strconv.Quote(f[:40]) + "..."
	}
	return strconv.Quote(f)
}

// csvPlace names the rows, columns and fields of data read from CSV files
// (part 0 the training file, 1 the test file) in messages.
type csvPlace struct {
	f    [2]*frame
	rows [2][]int // the table row of each of the part's rows
	pos  [2][]int // the file column of each input, then of the target
}

func (l *csvPlace) cell(part, i, j int, _ float64) (where, what string, kind error) {
	f := l.f[part]
	r, p := l.rows[part][i], l.pos[part][j]
	where = fmt.Sprintf("%s line %d column %d", f.src, f.lines[r], p+1)
	if f.header && f.names[p] != "" {
		where += " (" + f.names[p] + ")"
	}
	s := f.odd[[2]int{r, p}]
	kind = ErrNonFinite
	switch kindOf(s) {
	case missingCell:
		if !strings.EqualFold(strings.TrimLeft(s, "+-"), "nan") {
			kind = ErrNotNumber
		}
		if s == "" {
			return where, "empty", kind
		}
	case overflowCell:
		return where, quote(s) + ", which overflows float64 (rescale the column)", kind
	}
	return where, quote(s), kind
}

func (l *csvPlace) row(part, i int) string {
	s := "line " + strconv.Itoa(l.f[part].lines[l.rows[part][i]])
	if part == 1 {
		s = l.f[1].src + " " + s
	}
	return s
}

func (l *csvPlace) input(j int) string {
	f, p := l.f[0], l.pos[0][j]
	if f.header && f.names[p] != "" {
		return f.names[p]
	}
	return strconv.Itoa(p + 1)
}

// readTable scans a CSV stream that may be gzip-compressed (detected by its
// magic bytes, whatever the file name).
func readTable(r io.Reader, src string) (*rawTable, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("data: %s: bad gzip stream: %w", src, err)
		}
		defer zr.Close()
		return scanCSV(zr, src)
	}
	return scanCSV(br, src)
}

// readFrame opens and scans path and decides its header.
func readFrame(path string, rule HeaderRule, want []string) (*frame, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer file.Close()
	t, err := readTable(file, path)
	if err != nil {
		return nil, err
	}
	return t.frame(rule, want)
}

// dataRows returns the indices of f's data rows.
func (f *frame) dataRows() []int { return seq(f.rows)[f.start:] }

// LoadCSV loads a user's regression data from a CSV file, one row per
// point: comma-separated numbers, with or without a header line naming the
// columns (Header; detected by default). The target is the last column
// unless Target names another, and the inputs are all the others unless
// Inputs chooses them; both take header names or column numbers (from 1).
// The file may be gzip-compressed; blank lines, a UTF-8 byte-order mark,
// quoted fields and CRLF line ends are accepted, and columns not chosen
// may hold anything. Missing values (see DropMissing) are an error naming
// the line and column, or with DropMissing(true) their rows are dropped.
//
// TestFile adds a test part from a second file read with the same Header
// rule (see HeaderAuto): its columns are matched to the training file's by
// name when both have a header line (in any order, other columns ignored),
// else by position (the same number of columns).
// Without it the test part is empty. Inputs and target are z-scored with
// the training statistics unless Normalise(false); Subset and SubsetSeed
// apply. The Dataset's Columns record the choice, and Warnings what the
// data cannot support.
//
// The Dataset's Name is the file's base name without .csv or .csv.gz.
func LoadCSV(trainPath string, opts ...Option) (*Dataset, error) {
	c, err := newConfig(loaderCSV, opts)
	if err != nil {
		return nil, err
	}
	train, err := readFrame(trainPath, c.header, nil)
	if err != nil {
		return nil, err
	}
	cols, warn, err := train.choose(c)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(trainPath)
	for _, ext := range []string{".gz", ".csv", ".CSV"} {
		name = strings.TrimSuffix(name, ext)
	}
	place := &csvPlace{f: [2]*frame{train}}
	p := &parts{name: name, source: trainPath, cols: cols, place: place, warnings: warn}
	if err := place.add(p, 0, train, train.dataRows(), cols.Inputs, cols.Target); err != nil {
		return nil, err
	}
	if c.testFile != "" {
		test, err := cols.readSecond(c.testFile, c.header)
		if err != nil {
			return nil, err
		}
		inputs, target, err := cols.match(test, len(cols.Inputs), true)
		if err != nil {
			return nil, err
		}
		if err := place.add(p, 1, test, test.dataRows(), inputs, target); err != nil {
			return nil, err
		}
	}
	return finish(p, c)
}

// readSecond reads a second file (test, points) to be matched to c: with
// HeaderAuto, after a training file without a header line it has none
// either, and after one with a header a first line naming c's inputs is a
// header too.
func (c Columns) readSecond(path string, rule HeaderRule) (*frame, error) {
	var want []string
	switch {
	case rule != HeaderAuto:
	case c.Header:
		want = c.InputNames()
	case !c.IsZero():
		rule = HeaderNo
	}
	return readFrame(path, rule, want)
}

// add extracts part k of p from the table rows rows of f.
func (l *csvPlace) add(p *parts, k int, f *frame, rows, inputs []int, target int) error {
	x, y, err := f.extract(rows, inputs, target)
	if err != nil {
		return err
	}
	l.f[k], l.rows[k], l.pos[k] = f, rows, append(append([]int(nil), inputs...), target)
	p.x[k], p.y[k] = x, y
	return nil
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// LoadPoints reads points at which to predict from a CSV file (possibly
// gzip-compressed), in the data's own units, one point a row. The file's
// columns are matched to the dataset's: by name when both the training
// file and this one have a header line (other columns, the target's
// included, are ignored), else by position, the file then holding either
// the training file's columns or just the inputs in the dataset's order.
// For a dataset not read from a CSV file the file holds the D() inputs.
// Header applies (by default as for a test file, see HeaderAuto). Missing
// and non-finite values in the columns used are errors naming the line and
// column.
func (d *Dataset) LoadPoints(path string, opts ...Option) (*mat.Dense, error) {
	c, err := newConfig(loaderPoints, opts)
	if err != nil {
		return nil, err
	}
	f, err := d.Columns.readSecond(path, c.header)
	if err != nil {
		return nil, err
	}
	inputs, _, err := d.Columns.match(f, d.D(), false)
	if err != nil {
		return nil, err
	}
	place := &csvPlace{}
	p := &parts{place: place}
	if err := place.add(p, 0, f, f.dataRows(), inputs, -1); err != nil {
		return nil, err
	}
	if _, err := p.checkValues(false, false); err != nil {
		return nil, err
	}
	return p.x[0], nil
}
