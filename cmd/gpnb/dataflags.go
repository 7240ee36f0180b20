package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/gpnb/gpnb/data"
)

// dataFlags are the dataset flags shared by data, mll, solve, train and
// reproduce: --data --test --split --subset --subset-seed --normalise
// --synthetic-n --synthetic-d --synthetic-seed --data-dir.
type dataFlags struct {
	data          string
	test          string
	split         int
	subset        int
	subsetSeed    uint64
	normalise     bool
	syntheticN    int
	syntheticD    int
	syntheticSeed uint64
	dataDir       string

	fs *flag.FlagSet // to tell which flags were given
}

func (f *dataFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.data, "data", "", "dataset: a UCI name ("+strings.Join(data.Names(), ", ")+"), \"synthetic\", or a path to a .csv/.csv.gz file (inputs then target, no header)")
	fs.StringVar(&f.test, "test", "", "CSV test file with the same columns (only with a CSV --data)")
	fs.IntVar(&f.split, "split", 0, "UCI train/test split, 0-9")
	fs.IntVar(&f.subset, "subset", 0, "keep this many training points, chosen by --subset-seed (0 = all)")
	fs.Uint64Var(&f.subsetSeed, "subset-seed", 0, "seed for choosing the --subset points")
	fs.BoolVar(&f.normalise, "normalise", true, "z-score inputs and target with the training statistics (--normalise=false to turn off)")
	fs.IntVar(&f.syntheticN, "synthetic-n", 500, "training points of --data synthetic (plus n/5 test points)")
	fs.IntVar(&f.syntheticD, "synthetic-d", 4, "input dimensions of --data synthetic")
	fs.Uint64Var(&f.syntheticSeed, "synthetic-seed", 0, "seed of --data synthetic")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of the UCI files (overrides $GPNB_DATA; missing files are downloaded into it)")
}

// load returns the dataset the flags describe, or an error naming the flag
// that is wrong.
func (f *dataFlags) load() (*data.Dataset, error) {
	given := map[string]bool{}
	if f.fs != nil {
		f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	}
	only := func(kind string, names ...string) error {
		for _, n := range names {
			if given[n] {
				return fmt.Errorf("--%s applies only to %s, not --data %s", n, kind, f.data)
			}
		}
		return nil
	}
	if f.subset < 0 {
		return nil, fmt.Errorf("--subset %d: give a number of training points > 0, or 0 for all", f.subset)
	}
	opts := []data.Option{data.Normalise(f.normalise), data.SubsetSeed(f.subsetSeed)}
	if f.subset > 0 {
		opts = append(opts, data.Subset(f.subset))
	}
	name := strings.ToLower(strings.TrimSpace(f.data))
	switch {
	case name == "":
		return nil, fmt.Errorf("--data is required: a UCI name (%s), synthetic, or a path to a .csv/.csv.gz file", strings.Join(data.Names(), ", "))
	case isUCI(name):
		if err := only("CSV files", "test"); err != nil {
			return nil, err
		}
		if err := only("--data synthetic", "synthetic-n", "synthetic-d", "synthetic-seed"); err != nil {
			return nil, err
		}
		if f.split < 0 || f.split >= data.NumSplits {
			return nil, fmt.Errorf("--split %d: use 0-%d", f.split, data.NumSplits-1)
		}
		opts = append(opts, data.Split(f.split))
		if f.dataDir != "" {
			opts = append(opts, data.Dir(f.dataDir))
		}
		ds, err := data.Load(name, opts...)
		if err != nil {
			return nil, fmt.Errorf("--data %s: %w", f.data, err)
		}
		return ds, nil
	case name == "synthetic":
		if err := only("UCI datasets", "split", "data-dir"); err != nil {
			return nil, err
		}
		if err := only("CSV files", "test"); err != nil {
			return nil, err
		}
		ds, err := data.Synthetic(f.syntheticN, f.syntheticD, f.syntheticSeed, opts...)
		if err != nil {
			return nil, fmt.Errorf("--data synthetic: %w", err)
		}
		return ds, nil
	}
	if _, err := os.Stat(f.data); err != nil {
		return nil, fmt.Errorf("--data %q is not a known dataset (%s, synthetic) nor a readable CSV file: %v", f.data, strings.Join(data.Names(), ", "), err)
	}
	if err := only("UCI datasets", "split", "data-dir"); err != nil {
		return nil, err
	}
	if err := only("--data synthetic", "synthetic-n", "synthetic-d", "synthetic-seed"); err != nil {
		return nil, err
	}
	if f.test != "" {
		opts = append(opts, data.TestFile(f.test))
	}
	ds, err := data.LoadCSV(f.data, opts...)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", f.data, err)
	}
	return ds, nil
}

func isUCI(name string) bool {
	for _, n := range data.Names() {
		if n == name {
			return true
		}
	}
	return false
}
