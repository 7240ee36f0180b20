package data

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SyntheticName returns the name Open reads as Synthetic(n, d, seed):
// "synthetic-N-D-SEED".
func SyntheticName(n, d int, seed uint64) string {
	return fmt.Sprintf("synthetic-%d-%d-%d", n, d, seed)
}

// ParseSynthetic parses "synthetic-N-D-SEED". ok is false for a name that
// does not start with "synthetic-"; err says what is wrong with one that
// does but is malformed.
func ParseSynthetic(name string) (n, d int, seed uint64, ok bool, err error) {
	rest, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(name)), "synthetic-")
	if !ok {
		return 0, 0, 0, false, nil
	}
	p := strings.Split(rest, "-")
	if len(p) == 3 {
		n, e1 := strconv.Atoi(p[0])
		d, e2 := strconv.Atoi(p[1])
		seed, e3 := strconv.ParseUint(p[2], 10, 64)
		if e1 == nil && e2 == nil && e3 == nil && n >= 2 && d >= 1 {
			return n, d, seed, true, nil
		}
	}
	return 0, 0, 0, true, fmt.Errorf("%w: dataset %q: write synthetic-N-D-SEED with N ≥ 2 training points, D ≥ 1 dimensions and a seed, e.g. synthetic-200-3-1", ErrUnknownDataset, name)
}

// Open loads a dataset by name, the way every gpnb command names one: a UCI
// dataset (Load; Split selects the split), synthetic-N-D-SEED (Synthetic(N,
// D, SEED+k) for Split(k), so each split is another draw), or the path of a
// .csv/.csv.gz file (LoadCSV). The options apply as for those loaders.
func Open(name string, opts ...Option) (*Dataset, error) {
	if _, ok := LookupUCI(name); ok {
		return Load(name, opts...)
	}
	n, d, seed, ok, err := ParseSynthetic(name)
	if err != nil {
		return nil, err
	}
	if ok {
		c, err := newConfig(loaderSynthetic, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			if o != nil {
				o(c)
			}
		}
		rest := append([]Option(nil), opts...)
		if c.set["Split"] {
			// Split is each draw's seed offset here, not an option of
			// Synthetic: drop it from what Synthetic sees.
			rest = append(rest, func(cc *config) { delete(cc.set, "Split"); cc.split = 0 })
		}
		ds, err := Synthetic(n, d, seed+uint64(c.split), rest...)
		if err == nil {
			ds.Source, ds.Split = strings.ToLower(strings.TrimSpace(name)), c.split
		}
		return ds, err
	}
	if _, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("%w %q: not a UCI dataset (%s), not synthetic-N-D-SEED, and not a readable CSV file: %v", ErrUnknownDataset, name, strings.Join(Names(), ", "), err)
	}
	return LoadCSV(name, opts...)
}

// OpenOrSynthetic is Open, except for a UCI dataset whose files are not on
// this machine (in the Dir folders, else $GPNB_DATA, or the user cache
// folder): it downloads nothing and returns synthetic data of the
// dataset's shape instead (UCIDataset.Synthetic, for the Split and
// Subset options given, normalised as Normalise says), with synthetic
// true.
func OpenOrSynthetic(name string, opts ...Option) (ds *Dataset, synthetic bool, err error) {
	u, ok := LookupUCI(name)
	if !ok {
		ds, err = Open(name, opts...)
		return ds, false, err
	}
	c, err := newConfig(loaderUCI, opts)
	if err != nil {
		return nil, false, err
	}
	search, _, _ := c.dirs() // without a cache folder, the others are searched
	for _, dir := range search {
		if u.In(dir) {
			ds, err = Load(u.Name, append(opts, Dir(dir))...)
			return ds, false, err
		}
	}
	ds, err = u.Synthetic(c.split, c.subset, Normalise(c.normalise))
	return ds, true, err
}
