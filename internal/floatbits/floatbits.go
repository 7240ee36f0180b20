// Package floatbits compares float64 values bit for bit: what gpnb's
// determinism and resume guarantees, and the tests that hold them, mean by
// "the same".
package floatbits

import (
	"math"
	"slices"
)

// Equal reports whether a and b have the same length and the same float64
// bits at every index: a NaN equals only the same NaN, and +0 differs
// from −0.
func Equal(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}
