package kernel

import (
	"fmt"
	"strings"
)

// Precision is the floating-point type an operator stores K in and
// multiplies with. Its products H·V take and return float64 either way.
type Precision int

const (
	// Float64 stores K and multiplies in double precision (the default, as
	// in the paper).
	Float64 Precision = iota
	// Float32 stores K in single precision (half the memory) and multiplies
	// in it: the right-hand sides are rounded to float32 once per product,
	// the product K·V is a float32 gemm (about twice the speed of float64,
	// since it reads half the bytes and does twice the flops per
	// instruction), and the result is converted back to float64 once, where
	// σ²V is added. Products are then accurate to about 1e-6 relative,
	// enough for the paper's tolerances (0.01 and 0.1) but not for solves
	// asked for much below ~1e-5.
	Float32
)

// String returns "float64" or "float32", as ParsePrecision accepts them.
func (p Precision) String() string {
	switch p {
	case Float64:
		return "float64"
	case Float32:
		return "float32"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// MarshalText returns String(), or an error for an unknown precision.
func (p Precision) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("kernel: unknown precision %d: use float64 or float32", int(p))
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

// Valid reports whether p is Float64 or Float32.
func (p Precision) Valid() bool { return p == Float64 || p == Float32 }

// Epsilon returns the unit roundoff of p, 2⁻⁵³ or 2⁻²⁴: the relative error
// of one stored kernel value, and the scale of the relative error of a
// product (times a modest multiple that grows with n). A solver tolerance
// within a few hundred Epsilon of zero cannot be met reliably in p.
func (p Precision) Epsilon() float64 {
	if p == Float32 {
		return 0x1p-24
	}
	return 0x1p-53
}

// ParsePrecision parses float64 (or f64, double, fp64; "" is float64) and
// float32 (f32, single, fp32), case-insensitive.
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "float64", "f64", "double", "fp64", "":
		return Float64, nil
	case "float32", "f32", "single", "fp32":
		return Float32, nil
	}
	return 0, fmt.Errorf("kernel: unknown precision %q: use float64 or float32", s)
}

// PrecisionOf returns the precision of op's products: op.Precision() when
// op has that method (the CPU and GPU operators do), else Float64.
func PrecisionOf(op GramOperator) Precision {
	if p, ok := op.(interface{ Precision() Precision }); ok {
		return p.Precision()
	}
	return Float64
}

// VectorKernel names the vectorised kernel evaluation operators use, e.g.
// "avx2 (libmvec exp)", or returns "" when kernel values are evaluated by
// the portable Go code (builds without -tags openblas, non-amd64 machines,
// CPUs without AVX2). Options.ScalarKernel turns it off for one operator.
func VectorKernel() string { return vectorKernel }
