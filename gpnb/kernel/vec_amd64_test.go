//go:build amd64 && cgo

package kernel

import (
	"math"
	"testing"
)

// archExpPlain is Go's math.Exp for amd64 without FMA (the plain path of
// src/math/exp_amd64.s), transliterated instruction by instruction: the
// reference for the vectorised evaluation's plain path, which this machine
// may not take (it takes the FMA path where the CPU has FMA, as math.Exp).
func archExpPlain(x float64) float64 {
	const (
		log2e    = 1.4426950408889634073599246810018920
		ln2u     = 0.69314718055966295651160180568695068359375
		ln2l     = 0.28235290563031577122588448175013436025525412068e-12
		overflow = 7.09782712893384e+02
	)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	case x > overflow:
		return math.Inf(1)
	}
	t := log2e * x
	k := int32(math.MinInt32) // CVTSD2SL's "integer indefinite" out of range
	if r := math.RoundToEven(t); r >= math.MinInt32 && r <= math.MaxInt32 {
		k = int32(r)
	}
	kd := float64(k)
	x = x - ln2u*kd
	x = x - ln2l*kd
	x *= 0.0625
	p := 2.4801587301587301587e-5 * x
	for _, c := range []float64{1.9841269841269841270e-4, 1.3888888888888888889e-3, 8.3333333333333333333e-3, 4.1666666666666666667e-2, 1.6666666666666666667e-1, 0.5} {
		p = (p + c) * x
	}
	p += 1
	x *= p
	for i := 0; i < 4; i++ {
		x *= 2 + x
	}
	x += 1
	bx := int64(k) + 0x3FF
	switch {
	case bx <= 0 && bx < -52:
		return 0
	case bx <= 0:
		x *= math.Float64frombits(uint64(bx+0x3FE) << 52)
		return x * math.Float64frombits(1<<52)
	case bx >= 0x7FF:
		return math.Inf(1)
	}
	return x * math.Float64frombits(uint64(bx)<<52)
}

// TestVectorKernelPlain checks the vectorised plain (no FMA) path, which Go
// takes on AVX2 CPUs without FMA, against archExpPlain: the same bits; and
// the transliteration itself against math.Exp (a few ulp: another
// rounding order of the same polynomial).
func TestVectorKernelPlain(t *testing.T) {
	if vecLevel == 0 {
		t.Skip("no AVX2")
	}
	in := vectorInputs()
	worst := uint64(0)
	for _, v := range in {
		worst = max(worst, ulps(archExpPlain(-math.Sqrt(v)), math.Exp(-math.Sqrt(v))))
	}
	if worst > 4 {
		t.Errorf("archExpPlain is up to %d ulp from math.Exp: the transliteration is wrong", worst)
	}
	got := append([]float64(nil), in...)
	fillKLevel(1, Matern12, 1, got)
	m, dm := make([]float64, len(in)), make([]float64, len(in))
	fillMDLevel(1, RBF, in, m, dm)
	for i, v := range in {
		if want := archExpPlain(-math.Sqrt(v)); ulps(got[i], want) != 0 {
			t.Errorf("plain path: exp(−√%g) = %.17g, archExpPlain %.17g", v, got[i], want)
		}
		if want := archExpPlain(-0.5 * v); ulps(m[i], want) != 0 || ulps(dm[i], -want) != 0 {
			t.Errorf("plain path: exp(−%g/2) = %.17g, %.17g; archExpPlain %.17g", v, m[i], dm[i], want)
		}
	}
}
