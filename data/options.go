package data

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Option configures Load, LoadCSV, Synthetic, New or Dataset.LoadPoints.
// Options are checked when the loader runs: an invalid value, or an option
// that does not apply to that loader, is an ErrOption, ErrSplit or
// ErrSubset error, never a panic.
type Option func(*config)

type loader int

const (
	loaderUCI loader = iota
	loaderCSV
	loaderSynthetic
	loaderNew
	loaderPoints
)

func (l loader) String() string {
	return [...]string{"Load", "LoadCSV", "Synthetic", "New", "LoadPoints"}[l]
}

type config struct {
	split      int
	subset     int
	subsetSeed uint64
	normalise  bool
	dirList    []string
	baseURL    string
	client     *http.Client
	testFile   string
	testSize   int
	header     HeaderRule
	target     string
	inputs     []string
	drop       bool
	testX      *mat.Dense
	testY      []float64

	set map[string]bool // option names given
}

// Split selects the UCI train/test split k, 0–9 (default 0). Load only.
func Split(k int) Option { return func(c *config) { c.split = k; c.set["Split"] = true } }

// Subset keeps n training points (n > 0), chosen without replacement from a
// generator seeded by SubsetSeed, in their original order. The test part is
// unchanged; normalisation statistics come from the chosen points. When n is
// at least the number of training points, Subset does nothing.
func Subset(n int) Option { return func(c *config) { c.subset = n; c.set["Subset"] = true } }

// SubsetSeed seeds the choice of Subset's points (default 0).
func SubsetSeed(s uint64) Option {
	return func(c *config) { c.subsetSeed = s; c.set["SubsetSeed"] = true }
}

// Normalise turns z-scoring of inputs and target on (the default) or off.
func Normalise(on bool) Option {
	return func(c *config) { c.normalise = on; c.set["Normalise"] = true }
}

// Dir sets the folders holding <name>/data.csv.gz and
// <name>/test_mask.csv.gz, searched in order instead of $GPNB_DATA and
// before the user cache folder. They are only read: missing files are
// downloaded into the user cache folder. Load only.
func Dir(paths ...string) Option {
	return func(c *config) { c.dirList = append([]string(nil), paths...); c.set["Dir"] = true }
}

// BaseURL sets the URL under which <name>/data.csv.gz is downloaded (default
// DefaultBaseURL). Load only.
func BaseURL(u string) Option { return func(c *config) { c.baseURL = u; c.set["BaseURL"] = true } }

// HTTPClient sets the client used for downloads (default: a client with a
// two-minute timeout). Load only.
func HTTPClient(h *http.Client) Option {
	return func(c *config) { c.client = h; c.set["HTTPClient"] = true }
}

// TestFile names a CSV file (same columns as the training file) used as the
// test part. LoadCSV only; without it the dataset has no test part.
func TestFile(path string) Option {
	return func(c *config) { c.testFile = path; c.set["TestFile"] = true }
}

// TestSize sets the number of synthetic test points (default n/5; 0 means
// no test part). Synthetic only.
func TestSize(n int) Option { return func(c *config) { c.testSize = n; c.set["TestSize"] = true } }

// Header says whether a CSV file starts with a header line (default
// HeaderAuto: detected). LoadCSV (for the training and the test file) and
// LoadPoints.
func Header(h HeaderRule) Option { return func(c *config) { c.header = h; c.set["Header"] = true } }

// Target chooses the target column of a CSV file: a name from its header,
// else a column number counted from 1 ("3"). The default is the last
// column. LoadCSV only.
func Target(col string) Option { return func(c *config) { c.target = col; c.set["Target"] = true } }

// Inputs chooses the input columns of a CSV file, in the order the
// dataset's inputs take: names from its header, else column numbers counted
// from 1. The default is every column but the target, leaving out columns
// whose header name is empty (the row index pandas and R write), with a
// warning. LoadCSV only.
func Inputs(cols ...string) Option {
	return func(c *config) { c.inputs = append([]string(nil), cols...); c.set["Inputs"] = true }
}

// DropMissing drops the rows (training and test) that hold a missing
// value instead of refusing them (the default, off: an ErrMissing error
// naming the first). A Warning of kind DroppedRows counts them. Missing
// values are empty fields and, ignoring case, NA, N/A, NaN, NULL, None,
// #N/A, <NA> and ?; in New, NaN. LoadCSV and New.
func DropMissing(on bool) Option { return func(c *config) { c.drop = on; c.set["DropMissing"] = true } }

// TestData adds a test part to New: inputs x (with New's columns) and
// targets y, in the same units as New's, copied. New only; without it the
// dataset has no test part.
func TestData(x *mat.Dense, y []float64) Option {
	return func(c *config) { c.testX, c.testY = x, y; c.set["TestData"] = true }
}

// applies lists the loaders each option is meaningful for.
var applies = map[string][]loader{
	"Split": {loaderUCI}, "Dir": {loaderUCI}, "BaseURL": {loaderUCI}, "HTTPClient": {loaderUCI},
	"TestFile": {loaderCSV}, "Target": {loaderCSV}, "Inputs": {loaderCSV},
	"Header": {loaderCSV, loaderPoints}, "DropMissing": {loaderCSV, loaderNew},
	"TestSize": {loaderSynthetic}, "TestData": {loaderNew},
	"Subset": {loaderUCI, loaderCSV, loaderSynthetic, loaderNew}, "SubsetSeed": {loaderUCI, loaderCSV, loaderSynthetic, loaderNew},
	"Normalise": {loaderUCI, loaderCSV, loaderSynthetic, loaderNew},
}

// loaderList names loaders for a message: "Load", "LoadCSV and New".
func loaderList(ls []loader) string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func newConfig(l loader, opts []Option) (*config, error) {
	c := &config{normalise: true, baseURL: DefaultBaseURL, set: map[string]bool{}}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option passed to %s", ErrOption, l)
		}
		o(c)
	}
	for name := range c.set {
		if want := applies[name]; !slices.Contains(want, l) {
			return nil, fmt.Errorf("%w: %s applies only to %s, not %s", ErrOption, name, loaderList(want), l)
		}
	}
	if c.split < 0 || c.split >= NumSplits {
		return nil, fmt.Errorf("%w: split %d: use 0-%d", ErrSplit, c.split, NumSplits-1)
	}
	if c.set["Subset"] && c.subset <= 0 {
		return nil, fmt.Errorf("%w: Subset(%d): the number of training points must be > 0 (leave Subset out to keep all)", ErrSubset, c.subset)
	}
	if c.set["HTTPClient"] && c.client == nil {
		return nil, fmt.Errorf("%w: HTTPClient(nil): pass a client or leave the option out", ErrOption)
	}
	if c.set["TestFile"] && c.testFile == "" {
		return nil, fmt.Errorf("%w: TestFile(\"\"): give a path or leave the option out", ErrOption)
	}
	if c.set["Dir"] && (len(c.dirList) == 0 || slices.Contains(c.dirList, "")) {
		return nil, fmt.Errorf("%w: Dir(%q): give directories or leave the option out", ErrOption, c.dirList)
	}
	if c.testSize < 0 {
		return nil, fmt.Errorf("%w: TestSize(%d) must be ≥ 0", ErrOption, c.testSize)
	}
	if err := c.checkColumns(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkColumns checks the options that choose columns and parts.
func (c *config) checkColumns() error {
	if _, err := headerNames.Marshal(c.header); err != nil {
		return err
	}
	if c.set["Target"] && strings.TrimSpace(c.target) == "" {
		return fmt.Errorf("%w: Target(\"\"): give a column name or number, or leave the option out (the last column)", ErrOption)
	}
	if c.set["Inputs"] && len(c.inputs) == 0 {
		return fmt.Errorf("%w: Inputs(): give at least one column, or leave the option out (every column but the target)", ErrOption)
	}
	if c.set["TestData"] && (c.testX == nil || c.testX.IsEmpty()) {
		return fmt.Errorf("%w: TestData with no test inputs: give one point a row, or leave the option out", ErrOption)
	}
	return nil
}
