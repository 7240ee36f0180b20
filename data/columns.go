package data

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/internal/enum"
)

// HeaderRule says whether a CSV file's first line names its columns.
type HeaderRule int

const (
	// HeaderAuto, the default, takes the first line for a header when one
	// of its fields is neither a number nor a missing value and no later
	// line has text in that field's column. For a second file read with a
	// dataset's columns (a test file, points to predict at): after a
	// training file without a header line it has none either; after one
	// with a header, a first line holding the training file's input names
	// is a header too (they may be numbers).
	HeaderAuto HeaderRule = iota
	// HeaderYes: the first line is a header.
	HeaderYes
	// HeaderNo: every line is data.
	HeaderNo
)

var headerNames = enum.Enum[HeaderRule]{Type: "HeaderRule", What: "header rule", Err: ErrOption, Names: []string{"auto", "yes", "no"},
	Aliases: map[string]HeaderRule{"true": HeaderYes, "false": HeaderNo}}

// String returns "auto", "yes" or "no".
func (h HeaderRule) String() string { return headerNames.Name(h) }

// MarshalText returns String().
func (h HeaderRule) MarshalText() ([]byte, error) { return headerNames.Marshal(h) }

// UnmarshalText parses auto, yes or no (case-insensitive; true and false
// are yes and no).
func (h *HeaderRule) UnmarshalText(b []byte) error { return headerNames.Unmarshal(h, b) }

// Columns records which columns of a CSV file a Dataset holds, so that
// another file with those columns (a test file, points to predict at) is
// read the same way, and the training file can be read again
// (LoadCSV(path, c.Options()...)). The zero value means data that did not
// come from a CSV file with a choice of columns (UCI, synthetic, New).
type Columns struct {
	// Header is true when the file's first line named its columns.
	Header bool
	// Names holds every column's name in the file's order: the header's
	// fields, or "1", "2", ... without a header.
	Names []string
	// Inputs are the positions in Names (from 0) of the dataset's input
	// columns, in the order of XTrain's columns.
	Inputs []int
	// Target is the position in Names of the target column.
	Target int
	// DropMissing is true when the file was read with DropMissing(true).
	DropMissing bool
}

// IsZero reports whether c is the zero value (data not from a CSV file).
func (c Columns) IsZero() bool { return c.Names == nil }

// InputNames returns the names of the input columns in XTrain's order, or
// nil for the zero value.
func (c Columns) InputNames() []string {
	if c.IsZero() {
		return nil
	}
	out := make([]string, len(c.Inputs))
	for k, p := range c.Inputs {
		out[k] = c.Names[p]
	}
	return out
}

// TargetName returns the name of the target column ("" for the zero value).
func (c Columns) TargetName() string {
	if c.IsZero() {
		return ""
	}
	return c.Names[c.Target]
}

// Options returns the options that make LoadCSV read the training file
// again as c says: its header rule, target, inputs and DropMissing. Columns
// are named by their header name where that is unique, else by number.
// The zero value gives nil.
func (c Columns) Options() []Option {
	if c.IsZero() {
		return nil
	}
	h := HeaderNo
	if c.Header {
		h = HeaderYes
	}
	inputs := make([]string, len(c.Inputs))
	for k, p := range c.Inputs {
		inputs[k] = c.spec(p)
	}
	return []Option{Header(h), Target(c.spec(c.Target)), Inputs(inputs...), DropMissing(c.DropMissing)}
}

// spec names column p for Target or Inputs: its name when lookup finds it
// by that name, else its number.
func (c Columns) spec(p int) string {
	if c.Header {
		if q, err := lookup(c.Names, c.Names[p]); err == nil && q == p {
			return c.Names[p]
		}
	}
	return strconv.Itoa(p + 1)
}

// Check reports whether c can describe a dataset with d inputs: the zero
// value, or d input positions and a target position within Names, all
// distinct. A checkpoint's record is checked with it.
func (c Columns) Check(d int) error {
	if c.IsZero() {
		if c.Inputs != nil || c.Target != 0 {
			return fmt.Errorf("%w: columns without names", ErrColumns)
		}
		return nil
	}
	if len(c.Inputs) != d {
		return fmt.Errorf("%w: %d input columns recorded for d = %d", ErrColumns, len(c.Inputs), d)
	}
	seen := map[int]bool{}
	for _, p := range append([]int{c.Target}, c.Inputs...) {
		if p < 0 || p >= len(c.Names) || seen[p] {
			return fmt.Errorf("%w: column position %d is out of range or repeated (%d columns)", ErrColumns, p, len(c.Names))
		}
		seen[p] = true
	}
	return nil
}

// errAmbiguous marks a column name that more than one column has.
var errAmbiguous = errors.New("ambiguous name")

// lookup returns the position in names of the column key names (byName),
// else of the column numbered key (from 1), or an error saying why there is
// none.
func lookup(names []string, key string) (int, error) {
	p, err := byName(names, key)
	if err == nil {
		return p, nil
	}
	if k, nerr := strconv.Atoi(strings.TrimSpace(key)); nerr == nil && k >= 1 && k <= len(names) {
		return k - 1, nil
	}
	if errors.Is(err, errAmbiguous) {
		return 0, err
	}
	return 0, fmt.Errorf("no column %q: give a name (%s) or a number 1-%d", strings.TrimSpace(key), listNames(names), len(names))
}

// listNames lists column names for a message, shortened when there are many.
func listNames(names []string) string {
	const most = 12
	q := make([]string, 0, most+1)
	for i, n := range names {
		if i == most {
			q = append(q, fmt.Sprintf("... %d in all", len(names)))
			break
		}
		q = append(q, strconv.Quote(n))
	}
	return strings.Join(q, ", ")
}
