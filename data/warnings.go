package data

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/enum"
)

// WarningKind says what a Warning is about.
type WarningKind int

const (
	// DroppedRows: DropMissing(true) dropped rows holding a missing value;
	// Count is how many (training and test).
	DroppedRows WarningKind = iota
	// SkippedColumns: the default inputs left out columns with an empty
	// name in the header line (a row index, as pandas' to_csv and R's
	// write.csv write one); Columns names them.
	SkippedColumns
	// ConstantTarget: the training target has one value: there is nothing
	// to learn, and the fitted model is noise around that value. (With
	// normalisation the target's scale is taken as 1, not divided by 0.)
	ConstantTarget
	// ConstantInputs: input columns constant over the training rows; the
	// likelihood does not depend on their length scales, which are
	// therefore unidentifiable. Columns names them.
	ConstantInputs
	// DuplicateRows: training rows whose inputs repeat an earlier row's;
	// Count is how many. The kernel matrix is then singular, and the noise
	// alone keeps the systems solvable.
	DuplicateRows
	// FewRows: fewer training rows than hyperparameters (d length scales,
	// the signal and the noise: d+2): the marginal likelihood cannot
	// determine them all.
	FewRows
	// ExtremeScale: the target's scale before normalising is extreme: its
	// standard deviation s is below ExtremeRelStd times its mean's
	// magnitude |m| (see ExtremeRelStd), or, with Normalise(false), s is
	// outside [1/ExtremeStd, ExtremeStd] (see ExtremeStd).
	ExtremeScale
)

// ExtremeRelStd is the relative spread s/|m| of a target below which its
// scale is extreme (ExtremeScale): 1e-7, float32's resolution (2⁻²⁴ ≈
// 6e-8) and about the last digit of numbers printed with 7 significant
// digits (%g prints 6). A target whose values went through either holds
// rounding, not signal, in its variation, and z-scoring magnifies that
// rounding to the unit scale the model trains on.
const ExtremeRelStd = 1e-7

// ExtremeStd bounds the target's standard deviation s for
// Normalise(false): s outside [1/ExtremeStd, ExtremeStd] = [0.01, 100] is
// extreme (ExtremeScale). The defaults assume a unit scale (initial signal
// and noise 1, Adam's learning rate 0.1 on softplus-raw θ, which moves by
// about the learning rate a step and equals θ above a few): a signal of
// 100 is about 1000 steps away, ten times the default number, and at
// s = 0.01 the initial noise is a hundred times the target's spread.
const ExtremeStd = 100

var warningNames = enum.Enum[WarningKind]{Type: "WarningKind", What: "warning kind", Err: ErrOption, Names: []string{
	"dropped-rows", "skipped-columns", "constant-target", "constant-inputs", "duplicate-rows", "few-rows", "extreme-scale"}}

// String returns the kind's name: "constant-target", "few-rows", ...
func (k WarningKind) String() string { return warningNames.Name(k) }

// MarshalText returns String().
func (k WarningKind) MarshalText() ([]byte, error) { return warningNames.Marshal(k) }

// UnmarshalText parses a name that String returns.
func (k *WarningKind) UnmarshalText(b []byte) error { return warningNames.Unmarshal(k, b) }

// Warning is something the data cannot support that does not stop loading
// them: a caller shows it (the gpnb command prints it on stderr, package
// nb in the notebook) and may test its Kind.
type Warning struct {
	Kind WarningKind `json:"kind"`
	// Message says what is wrong and what to do, in one sentence.
	Message string `json:"message"`
	// Count is the number of rows (DroppedRows, DuplicateRows) or columns
	// (ConstantInputs, SkippedColumns) concerned; 0 for the others.
	Count int `json:"count,omitempty"`
	// Columns names the columns concerned (ConstantInputs, SkippedColumns).
	Columns []string `json:"columns,omitempty"`
}

// String returns the message.
func (w Warning) String() string { return w.Message }

// Warnings returns what the loader found that the data cannot support,
// checked on the training part as loaded (after DropMissing and Subset,
// before normalising), in this order: DroppedRows, SkippedColumns,
// ConstantTarget, ConstantInputs, DuplicateRows, FewRows, ExtremeScale.
// It is empty for good data and for a Dataset built by hand.
func (d *Dataset) Warnings() []Warning { return append([]Warning(nil), d.warnings...) }

// warn returns the warnings about training inputs x and target y (rows of
// part 0 of p, in the data's units); rows are their indices in the part.
func (p *parts) warn(x *mat.Dense, y []float64, rows []int, normalise bool) []Warning {
	var out []Warning
	n, d := x.Dims()
	for _, w := range []*Warning{constantTarget(y), p.constantInputs(x), p.duplicateRows(x, rows), fewRows(n, d), extremeScale(y, normalise)} {
		if w != nil {
			out = append(out, *w)
		}
	}
	return out
}

func constantTarget(y []float64) *Warning {
	for _, v := range y {
		if v != y[0] {
			return nil
		}
	}
	return &Warning{Kind: ConstantTarget, Message: fmt.Sprintf(
		"the target is constant (%g in all %d training rows): there is nothing to learn, and the model will be noise around that value", y[0], len(y))}
}

func (p *parts) constantInputs(x *mat.Dense) *Warning {
	n, d := x.Dims()
	var names []string
	for j := range d {
		v0 := x.At(0, j)
		constant := true
		for i := 1; i < n && constant; i++ {
			constant = x.At(i, j) == v0
		}
		if constant {
			names = append(names, p.place.input(j))
		}
	}
	if names == nil {
		return nil
	}
	return &Warning{Kind: ConstantInputs, Count: len(names), Columns: names, Message: fmt.Sprintf(
		"input %s constant over the training rows: the likelihood does not depend on %s, which %s unidentifiable; leave %s out of the inputs",
		plural(len(names), "column "+names[0]+" is", "columns "+strings.Join(names, ", ")+" are"),
		plural(len(names), "its length scale", "their length scales"), plural(len(names), "is", "are"), plural(len(names), "it", "them"))}
}

func (p *parts) duplicateRows(x *mat.Dense, rows []int) *Warning {
	n, _ := x.Dims()
	// Sort the rows by their inputs (then by index), so that equal rows
	// stand together, the earliest first.
	idx := seq(n)
	slices.SortFunc(idx, func(a, b int) int {
		if c := slices.Compare(x.RawRowView(a), x.RawRowView(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	count, first, of := 0, n, -1
	for k, start := 1, 0; k < n; k++ { // start: where k's group starts
		if !slices.Equal(x.RawRowView(idx[k-1]), x.RawRowView(idx[k])) {
			start = k
			continue
		}
		count++
		if idx[k] < first {
			first, of = idx[k], idx[start]
		}
	}
	if count == 0 {
		return nil
	}
	return &Warning{Kind: DuplicateRows, Count: count, Message: fmt.Sprintf(
		"%d of %d training rows %s an earlier row's inputs (%s repeats %s): the kernel matrix is singular and the noise alone keeps the solves well posed",
		count, n, plural(count, "repeats", "repeat"), p.place.row(0, rows[first]), p.place.row(0, rows[of]))}
}

func fewRows(n, d int) *Warning {
	if n >= d+2 {
		return nil
	}
	return &Warning{Kind: FewRows, Message: fmt.Sprintf(
		"%d training rows for d+2 = %d hyperparameters (%d length scales, the signal and the noise): the marginal likelihood cannot determine them all; add rows or leave inputs out",
		n, d+2, d)}
}

func extremeScale(y []float64, normalise bool) *Warning {
	lo, hi := y[0], y[0]
	for _, v := range y {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo == hi {
		return nil // ConstantTarget says it
	}
	m, s := meanStd(y)
	switch {
	case s < ExtremeRelStd*math.Abs(m):
		return &Warning{Kind: ExtremeScale, Message: fmt.Sprintf(
			"the target varies by %.3g around %.6g, a relative spread below %g: float32 or numbers printed with 7 digits cannot hold that variation, so it may be rounding; subtract a baseline before writing the values", s, m, ExtremeRelStd)}
	case !normalise && (s > ExtremeStd || s < 1/ExtremeStd):
		return &Warning{Kind: ExtremeScale, Message: fmt.Sprintf(
			"the target's standard deviation is %.3g and it is not normalised: the defaults assume a unit scale (outside [%g, %g] they need many more steps); normalise it or set the initial hyperparameters", s, 1/float64(ExtremeStd), float64(ExtremeStd))}
	}
	return nil
}

// droppedWarning counts the rows DropMissing dropped, naming a few.
func (p *parts) droppedWarning(dropped [2][]int) Warning {
	var where []string
	for part, rows := range dropped {
		for _, i := range rows {
			if len(where) == 5 {
				where = append(where, "...")
				break
			}
			where = append(where, p.place.row(part, i))
		}
	}
	n := len(dropped[0]) + len(dropped[1])
	return Warning{Kind: DroppedRows, Count: n, Message: fmt.Sprintf(
		"dropped %d %s with a missing value (%d training, %d test: %s)", n, plural(n, "row", "rows"), len(dropped[0]), len(dropped[1]), strings.Join(where, ", "))}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
