package kernel

import (
	"testing"

	"github.com/gpnb/gpnb/solvers"
)

// The CPU operator is a solvers.Operator and a GramOperator, can be rebuilt
// in place, and reports σ² to CG's preconditioner.
var (
	_ solvers.Operator       = (*Operator)(nil)
	_ solvers.NoiseVariancer = (*Operator)(nil)
	_ GramOperator           = (*Operator)(nil)
	_ Rekerneler             = (*Operator)(nil)
)

func TestNoiseVariance(t *testing.T) {
	k := testKernel(Matern32, 2)
	op, err := NewOperator(testX(5, 2, 1), k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := op.NoiseVariance(), k.Hyper.Noise*k.Hyper.Noise; got != want {
		t.Errorf("NoiseVariance = %g, want σ² = %g", got, want)
	}
}
