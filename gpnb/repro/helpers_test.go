package repro

import (
	"github.com/gpnb/gpnb/gpnb"
)

// paperBase is the paper's configuration without a solver: a Grid's Config.
func paperBase() gpnb.Config {
	c, err := gpnb.Paper("cg", "")
	if err != nil {
		panic(err)
	}
	c.Solver = nil
	return c
}

// testJob is a 4-step job with the paper's settings; subset 0 keeps all.
func testJob(ds string, split, subset int, solver string, warm bool) Job {
	j, err := PaperJob(ds, split, solver, warm, 4)
	if err != nil {
		panic(err)
	}
	j.Subset = subset
	return j
}
