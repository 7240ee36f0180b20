package viz

import (
	"fmt"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/results"
)

// summary summarises training results with package results, the one
// implementation of the tables' statistics (the same as `gpnb table`).
func summary(rs []gpnb.Result) (*results.Summary, error) {
	if err := checkResults(rs); err != nil {
		return nil, err
	}
	recs, err := results.FromResults(rs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChart, err)
	}
	s, err := results.Summarise(recs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChart, err)
	}
	return s, nil
}

// ResultsTable is the paper's Table 2 (results.Summary.Table2) of training
// results, in the time unit they read best in (Summary.Unit): per dataset
// and method, the splits, test RMSE, test log-likelihood, total and solver
// runtime and total solver iterations (mean ± standard error over runs),
// and the warm-start speed-up and iteration ratio. Two results of the same
// run (results.RunID) are an error.
func ResultsTable(rs []gpnb.Result) (*results.Table, error) {
	s, err := summary(rs)
	if err != nil {
		return nil, err
	}
	return s.Table2(s.Unit()), nil
}

// SpeedupTable is the paper's Table 1 (results.Summary.Table1) of training
// results: per method, cold and "+ ws", the mean test log-likelihood and
// total runtime on each dataset and the warm-start speed-up and iteration
// ratio averaged over datasets; then the exact estimator's row.
func SpeedupTable(rs []gpnb.Result) (*results.Table, error) {
	s, err := summary(rs)
	if err != nil {
		return nil, err
	}
	return s.Table1(s.Unit()), nil
}
