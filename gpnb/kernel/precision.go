package kernel

import (
	"fmt"
	"strings"
)

// Precision is the floating-point type an operator stores K in and
// multiplies with. Its products H·V take and return float64 either way.
//
// Float64 is the paper's. Float32 halves the memory and the time of a
// product, but its rounding (2⁻²⁴ relative per product) slows CG once H is
// ill conditioned. Mixed stores K in float32 too, but sums in float64: K
// is rounded once, and CG needs float64's iteration counts.
type Precision int

const (
	// Float64 stores K and multiplies in double precision (the default, as
	// in the paper).
	Float64 Precision = iota
	// Float32 stores K in single precision (half the memory) and multiplies
	// in it: the right-hand sides are rounded to float32 once per product,
	// K·V is a float32 gemm, and the result is converted back to float64,
	// where σ²V is added. Products are accurate to about 1e-6 relative:
	// enough for the paper's tolerances, not for solves far below 1e-5.
	Float32
	// Mixed stores K in single precision (half the memory, as Float32) and
	// multiplies in double: K's values convert exactly, the right-hand sides
	// are not rounded and every sum is float64, so the only rounding is
	// K's own, once per θ. Its products use the vectorised kernel of
	// MixedKernel where built (cgo, amd64, AVX2 and FMA), else a float64
	// gemm of converted tiles. In ModeMatrixFree there is no cache, and
	// Mixed computes exactly as Float64.
	Mixed
)

// String returns "float64", "float32" or "mixed", as ParsePrecision
// accepts them.
func (p Precision) String() string {
	switch p {
	case Float64:
		return "float64"
	case Float32:
		return "float32"
	case Mixed:
		return "mixed"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// MarshalText returns String(), or an error for an unknown precision.
func (p Precision) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("kernel: unknown precision %d: use float64, float32 or mixed", int(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText parses a precision as ParsePrecision does.
func (p *Precision) UnmarshalText(b []byte) error {
	v, err := ParsePrecision(string(b))
	if err == nil {
		*p = v
	}
	return err
}

// Valid reports whether p is Float64, Float32 or Mixed.
func (p Precision) Valid() bool { return p == Float64 || p == Float32 || p == Mixed }

// Stores32 reports whether p keeps the dense cache in float32 (Float32 and
// Mixed).
func (p Precision) Stores32() bool { return p == Float32 || p == Mixed }

// Epsilon returns the unit roundoff of p's arithmetic, 2⁻⁵³ (Float64,
// Mixed) or 2⁻²⁴ (Float32): the scale of the relative error of a product
// (times a modest multiple that grows with n). A solver tolerance within a
// few hundred Epsilon of zero cannot be met reliably in p. Mixed's stored
// values are float32, but that rounding changes H once, not each product.
func (p Precision) Epsilon() float64 {
	if p == Float32 {
		return 0x1p-24
	}
	return 0x1p-53
}

// ParsePrecision parses float64 (or f64, double, fp64; "" is float64),
// float32 (f32, single, fp32) and mixed, case-insensitive.
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "float64", "f64", "double", "fp64", "":
		return Float64, nil
	case "float32", "f32", "single", "fp32":
		return Float32, nil
	case "mixed":
		return Mixed, nil
	}
	return 0, fmt.Errorf("kernel: unknown precision %q: use float64, float32 or mixed", s)
}

// PrecisionOf returns the precision of op's products: op.Precision() when
// op has that method (the CPU and GPU operators do), else Float64.
func PrecisionOf(op GramOperator) Precision {
	if p, ok := op.(interface{ Precision() Precision }); ok {
		return p.Precision()
	}
	return Float64
}

// VectorKernel names the vectorised kernel evaluation operators use,
// "avx2+fma" or "avx2", or returns "" when kernel values are evaluated by
// the portable Go code (builds without cgo, non-amd64 machines, CPUs
// without AVX2). Options.ScalarKernel turns it off for one operator.
func VectorKernel() string { return vectorKernel }

// MixedKernel names the vectorised kernel of Mixed products (dense MulTo,
// RowsMulTo and ColsMulTo over contiguous columns), "avx2+fma", or returns
// "" when there is none (builds without cgo, non-amd64 machines, CPUs
// without AVX2 and FMA): then Mixed products convert K's tiles to
// float64 and use a float64 gemm, correct but slower than Float64.
func MixedKernel() string { return mixedKernel }
