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
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// table is a parsed CSV file: rows×cols values, row-major.
type table struct {
	vals       []float64
	rows, cols int
}

func (t *table) row(i int) []float64 { return t.vals[i*t.cols : (i+1)*t.cols] }

// parseCSV reads comma-separated decimal numbers from r, one row a line, no
// header. Blank lines are skipped; fields may be padded with spaces or tabs;
// a UTF-8 byte-order mark and CRLF line ends are accepted. src names the
// input in error messages. Every value of the result is finite.
func parseCSV(r io.Reader, src string) (table, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		t        table
		long     []byte // a line longer than br's buffer
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
			return table{}, fmt.Errorf("data: reading %s: %w", src, err)
		}
		if len(b) > 0 {
			line++
			if line == 1 {
				b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
			}
			if perr := t.parseLine(b, src, line, &colsLine); perr != nil {
				return table{}, perr
			}
		}
		if err == io.EOF {
			break
		}
	}
	return t, nil
}

// parseLine appends the values of one line to t.
func (t *table) parseLine(b []byte, src string, line int, colsLine *int) error {
	b = bytes.TrimRight(b, "\r\n")
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	n := bytes.Count(b, []byte{','}) + 1
	if t.rows == 0 {
		t.cols, *colsLine = n, line
	} else if n != t.cols {
		return fmt.Errorf("%w: %s line %d has %d fields, expected %d as on line %d", ErrRagged, src, line, n, t.cols, *colsLine)
	}
	for col := 1; col <= n; col++ {
		var f []byte
		if i := bytes.IndexByte(b, ','); i >= 0 {
			f, b = b[:i], b[i+1:]
		} else {
			f, b = b, nil
		}
		f = bytes.Trim(f, " \t")
		if len(f) == 0 {
			return fmt.Errorf("%w: %s line %d column %d is empty; fill in a number or remove the row", ErrNotNumber, src, line, col)
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil {
			switch {
			case !errors.Is(err, strconv.ErrRange):
				hint := "only decimal numbers are allowed"
				if line == 1 {
					hint = "if this is a header line, remove it"
				}
				return fmt.Errorf("%w: %s line %d column %d: %s; %s", ErrNotNumber, src, line, col, quote(f), hint)
			case math.IsInf(v, 0):
				return fmt.Errorf("%w: %s line %d column %d: %s overflows float64; rescale the column", ErrNonFinite, src, line, col, quote(f))
			}
			// Underflow to 0 or a subnormal is accepted.
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s line %d column %d is %s; remove or impute missing values before loading", ErrNonFinite, src, line, col, quote(f))
		}
		t.vals = append(t.vals, v)
	}
	t.rows++
	return nil
}

// quote quotes a field for an error message, shortened if long.
func quote(f []byte) string {
	if len(f) > 40 {
		return strconv.Quote(string(f[:40])) + "..."
	}
	return strconv.Quote(string(f))
}

// readTable parses a CSV stream that may be gzip-compressed (detected by its
// magic bytes, whatever the file name).
func readTable(r io.Reader, src string) (table, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return table{}, fmt.Errorf("data: %s: bad gzip stream: %w", src, err)
		}
		defer zr.Close()
		t, err := parseCSV(zr, src)
		if err != nil {
			return table{}, err
		}
		return t, nil
	}
	return parseCSV(br, src)
}

// readTableFile opens and parses path and checks it has a target and at
// least one input column.
func readTableFile(path string) (table, error) {
	f, err := os.Open(path)
	if err != nil {
		return table{}, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	t, err := readTable(f, path)
	if err != nil {
		return table{}, err
	}
	return t, checkShape(t, path)
}

func checkShape(t table, src string) error {
	if t.rows == 0 {
		return fmt.Errorf("%w: %s has no data rows; expected comma-separated numbers, target in the last column", ErrEmpty, src)
	}
	if t.cols < 2 {
		return fmt.Errorf("%w: %s has a single column (the target) and no inputs; put the inputs first and the target last", ErrNoInputs, src)
	}
	return nil
}

// LoadCSV loads a user's regression data from a CSV file: comma-separated
// numbers, no header, one row per point, the target in the last column and
// the inputs in the others. The file may be gzip-compressed. TestFile adds a
// test part from a second file with the same columns; without it the test
// part is empty. Inputs and target are z-scored with the training
// statistics unless Normalise(false); Subset and SubsetSeed apply.
//
// The Dataset's Name is the file's base name without .csv or .csv.gz.
func LoadCSV(trainPath string, opts ...Option) (*Dataset, error) {
	c, err := newConfig(loaderCSV, opts)
	if err != nil {
		return nil, err
	}
	train, err := readTableFile(trainPath)
	if err != nil {
		return nil, err
	}
	var test table
	if c.testFile != "" {
		if test, err = readTableFile(c.testFile); err != nil {
			return nil, err
		}
		if test.cols != train.cols {
			return nil, fmt.Errorf("%w: %s has %d columns but the training file %s has %d; both need the same inputs and the target last", ErrColumns, c.testFile, test.cols, trainPath, train.cols)
		}
	}
	name := filepath.Base(trainPath)
	for _, ext := range []string{".gz", ".csv", ".CSV"} {
		name = strings.TrimSuffix(name, ext)
	}
	ds, err := build(name, 0, &train, seq(train.rows), &test, seq(test.rows), c)
	if err == nil {
		ds.Source = trainPath
	}
	return ds, err
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// LoadPoints reads inputs at which to predict from a CSV file (possibly
// gzip-compressed): comma-separated numbers, no header, one point a row,
// the input columns only (no target), in the data's own units.
func LoadPoints(path string) (*mat.Dense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	t, err := readTable(f, path)
	if err != nil {
		return nil, err
	}
	if t.rows == 0 {
		return nil, fmt.Errorf("%w: %s has no rows; expected comma-separated inputs, one point a row", ErrEmpty, path)
	}
	return mat.NewDense(t.rows, t.cols, t.vals), nil
}
