package data

import (
	"fmt"
	"net/http"
)

// Option configures Load, LoadCSV or Synthetic. Options are checked when the
// loader runs: an invalid value, or an option that does not apply to that
// loader, is an ErrOption, ErrSplit or ErrSubset error, never a panic.
type Option func(*config)

type loader int

const (
	loaderUCI loader = iota
	loaderCSV
	loaderSynthetic
)

func (l loader) String() string {
	return [...]string{"Load", "LoadCSV", "Synthetic"}[l]
}

type config struct {
	split      int
	subset     int
	subsetSeed uint64
	normalise  bool
	dir        string
	baseURL    string
	client     *http.Client
	testFile   string
	testSize   int

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

// Dir sets the data directory holding <name>/data.csv.gz and
// <name>/test_mask.csv.gz, instead of $GPNB_DATA and the user cache
// directory. Missing files are downloaded into it. Load only.
func Dir(path string) Option { return func(c *config) { c.dir = path; c.set["Dir"] = true } }

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

// applies lists the loaders each option is meaningful for; the rest apply to all.
var applies = map[string]loader{
	"Split": loaderUCI, "Dir": loaderUCI, "BaseURL": loaderUCI, "HTTPClient": loaderUCI,
	"TestFile": loaderCSV, "TestSize": loaderSynthetic,
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
		if want, ok := applies[name]; ok && want != l {
			return nil, fmt.Errorf("%w: %s applies only to %s, not %s", ErrOption, name, want, l)
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
	if c.set["Dir"] && c.dir == "" {
		return nil, fmt.Errorf("%w: Dir(\"\"): give a directory or leave the option out", ErrOption)
	}
	if c.testSize < 0 {
		return nil, fmt.Errorf("%w: TestSize(%d) must be ≥ 0", ErrOption, c.testSize)
	}
	return c, nil
}
