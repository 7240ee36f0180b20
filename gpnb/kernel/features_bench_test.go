package kernel

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// BenchmarkProbesPol times the pathwise probes ξ = f(X) + σε on the
// pol-shaped inputs (see benchInputs) with the default F = 2000 features
// and 16 samples, the work the pathwise estimator adds to every step, and
// reports it in units of one H·V product with the 17 right-hand sides of
// that step (the operator in its automatic mode), measured in the same run.
func BenchmarkProbesPol(b *testing.B) {
	x := benchInputs(b)
	n, d := x.Dims()
	k := benchKernel(d)
	pd, err := NewPathwiseDraws(k.Family, n, d, DefaultFeatures, benchM-1, 1)
	if err != nil {
		b.Fatal(err)
	}
	xi := mat.NewDense(n, benchM-1, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := pd.ProbesTo(xi, x, k); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.StopTimer()
	op, err := NewOperator(x, k, Options{})
	if err != nil {
		b.Fatal(err)
	}
	v := randDense(n, benchM, 5)
	dst := mat.NewDense(n, benchM, nil)
	op.MulTo(dst, v) // warm
	mulSec := timeIt(2, func() { op.MulTo(dst, v) })
	b.ReportMetric(sec/mulSec, "products_per_probe_draw")
	b.ReportMetric(float64(n)*DefaultFeatures/2/sec/1e6, "M_sincos_rows/s")
}
