package kernel

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Family is the shape m(r) of a stationary kernel k(x,x') = s²·m(r).
type Family int

// The kernel families. Matern32 is the paper's choice.
const (
	Matern32 Family = iota
	Matern12
	Matern52
	RBF
)

var familyNames = map[Family]string{Matern12: "matern12", Matern32: "matern32", Matern52: "matern52", RBF: "rbf"}

// String returns the family's name as the CLI spells it ("matern32").
func (f Family) String() string {
	if s, ok := familyNames[f]; ok {
		return s
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// MarshalText returns String(), or an error for an undefined family.
func (f Family) MarshalText() ([]byte, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("kernel: unknown kernel family %d: use one of matern12, matern32, matern52, rbf", int(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText parses a family name as ParseFamily does.
func (f *Family) UnmarshalText(b []byte) error {
	v, err := ParseFamily(string(b))
	if err == nil {
		*f = v
	}
	return err
}

// Valid reports whether f is one of the defined families.
func (f Family) Valid() bool { _, ok := familyNames[f]; return ok }

// ParseFamily parses a family name: matern12, matern32, matern52 or rbf
// (case-insensitive; "matern-3/2", "m32" and "se" are accepted aliases).
func ParseFamily(s string) (Family, error) {
	switch strings.NewReplacer("-", "", "_", "", "/", "", "é", "e").Replace(strings.ToLower(strings.TrimSpace(s))) {
	case "matern12", "m12", "exponential", "laplace":
		return Matern12, nil
	case "matern32", "m32", "matern":
		return Matern32, nil
	case "matern52", "m52":
		return Matern52, nil
	case "rbf", "se", "squaredexponential", "gaussian":
		return RBF, nil
	}
	return 0, fmt.Errorf("kernel: unknown kernel %q: use one of matern12, matern32, matern52, rbf", s)
}

const (
	sqrt3 = 1.7320508075688772935274463415058723669428052538103806280558
	sqrt5 = 2.2360679774997896964091736687312762354406183596115257242708
)

// Eval returns m(r), the correlation at scaled distance r ≥ 0 (m(0) = 1).
func (f Family) Eval(r float64) float64 {
	m, _ := f.EvalDeriv(r)
	return m
}

// EvalDeriv returns m(r) and m'(r)/r. The second is what every length-scale
// derivative needs, since ∂r/∂ℓ_k = −Δ_k²/(ℓ_k³ r); it is finite at r = 0
// for all families except Matern12, where EvalDeriv returns 0 at r = 0 (the
// limit of the full derivative term m'(r)/r·Δ_k² is 0 there).
func (f Family) EvalDeriv(r float64) (m, dmOverR float64) {
	switch f {
	case Matern12:
		e := math.Exp(-r)
		if r == 0 {
			return 1, 0
		}
		return e, -e / r
	case Matern32:
		e := math.Exp(-sqrt3 * r)
		return (1 + sqrt3*r) * e, -3 * e
	case Matern52:
		e := math.Exp(-sqrt5 * r)
		return (1 + sqrt5*r + 5.0/3.0*r*r) * e, -5.0 / 3.0 * (1 + sqrt5*r) * e
	case RBF:
		e := math.Exp(-0.5 * r * r)
		return e, -e
	}
	return math.NaN(), math.NaN()
}

// Softplus returns log(1+eˣ), computed without overflow.
func Softplus(x float64) float64 {
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}

// InvSoftplus returns the raw value x with Softplus(x) = y, for y > 0.
func InvSoftplus(y float64) float64 {
	// log(eʸ−1) = y + log(1−e⁻ʸ)
	return y + math.Log(-math.Expm1(-y))
}

// SoftplusGrad returns d Softplus(x)/dx = 1/(1+e⁻ˣ).
func SoftplusGrad(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// Hyper holds constrained (positive) hyperparameters θ = (ℓ, s, σ).
type Hyper struct {
	Lengthscales []float64 `json:"lengthscales"` // ℓ_1..ℓ_d, one per input dimension (ARD)
	Signal       float64   `json:"signal"`       // s: k(x,x) = s²
	Noise        float64   `json:"noise"`        // σ: observation noise standard deviation, H = K + σ²I
}

// DefaultHyper returns the paper's initialisation: every value 1.0.
func DefaultHyper(d int) Hyper {
	ls := make([]float64, d)
	for i := range ls {
		ls[i] = 1
	}
	return Hyper{Lengthscales: ls, Signal: 1, Noise: 1}
}

// Len is the number of hyperparameters, d+2.
func (h Hyper) Len() int { return len(h.Lengthscales) + 2 }

// Clone returns a deep copy.
func (h Hyper) Clone() Hyper {
	h.Lengthscales = append([]float64(nil), h.Lengthscales...)
	return h
}

// Vector returns θ as (ℓ_1..ℓ_d, s, σ).
func (h Hyper) Vector() []float64 {
	v := make([]float64, 0, h.Len())
	v = append(v, h.Lengthscales...)
	return append(v, h.Signal, h.Noise)
}

// Raw returns the softplus-raw parameters, InvSoftplus of Vector().
func (h Hyper) Raw() []float64 {
	v := h.Vector()
	for i := range v {
		v[i] = InvSoftplus(v[i])
	}
	return v
}

// GramDiagTo sets every dst[i] to H_ii = k(x, x) + σ² = s² + σ², the
// diagonal of H = K + σ²I: the same for every family (m(0) = 1), and float64
// whatever an operator's precision. Every GramOperator's DiagTo is this.
func (h Hyper) GramDiagTo(dst []float64) {
	v := h.Signal*h.Signal + h.Noise*h.Noise
	for i := range dst {
		dst[i] = v
	}
}

// HyperFromVector builds a Hyper from (ℓ_1..ℓ_d, s, σ); len(v) must be ≥ 2.
func HyperFromVector(v []float64) Hyper {
	d := len(v) - 2
	return Hyper{Lengthscales: append([]float64(nil), v[:d]...), Signal: v[d], Noise: v[d+1]}
}

// HyperFromRaw applies Softplus to raw parameters ordered as Vector().
func HyperFromRaw(raw []float64) Hyper {
	v := make([]float64, len(raw))
	for i, x := range raw {
		v[i] = Softplus(x)
	}
	return HyperFromVector(v)
}

// ErrHyper is wrapped by every hyperparameter validation error.
var ErrHyper = errors.New("invalid hyperparameters")

// Validate checks that h has d length scales and that every value is finite
// and positive.
func (h Hyper) Validate(d int) error {
	if len(h.Lengthscales) != d {
		return fmt.Errorf("kernel: %w: got %d length scales for %d input dimensions: give exactly one per column of X (or one value to use for all)", ErrHyper, len(h.Lengthscales), d)
	}
	for i, l := range h.Lengthscales {
		if !(l > 0) || math.IsInf(l, 0) {
			return fmt.Errorf("kernel: %w: length scale %d is %v: it must be finite and > 0", ErrHyper, i+1, l)
		}
	}
	if !(h.Signal > 0) || math.IsInf(h.Signal, 0) {
		return fmt.Errorf("kernel: %w: signal scale is %v: it must be finite and > 0", ErrHyper, h.Signal)
	}
	if !(h.Noise > 0) || math.IsInf(h.Noise, 0) {
		return fmt.Errorf("kernel: %w: noise scale is %v: it must be finite and > 0", ErrHyper, h.Noise)
	}
	return nil
}

// Kernel is a family with its hyperparameters. The noise σ is not part of
// k itself; it enters H = K + σ²I through the operator.
type Kernel struct {
	Family Family
	Hyper  Hyper
}

// ScaledDist returns r = ‖(x−y)/ℓ‖.
func (k Kernel) ScaledDist(x, y []float64) float64 {
	var r2 float64
	for i, l := range k.Hyper.Lengthscales {
		t := (x[i] - y[i]) / l
		r2 += t * t
	}
	return math.Sqrt(r2)
}

// At returns k(x,y) = s²·m(r), without the noise term.
func (k Kernel) At(x, y []float64) float64 {
	s := k.Hyper.Signal
	return s * s * k.Family.Eval(k.ScaledDist(x, y))
}

// GradAt writes ∂k(x,y)/∂θ into dst for θ = (ℓ_1..ℓ_d, s); len(dst) ≥ d+1.
// The noise derivative of H_ab is 2σ·[a=b] and is not included.
func (k Kernel) GradAt(dst, x, y []float64) {
	d := len(k.Hyper.Lengthscales)
	s := k.Hyper.Signal
	m, dm := k.Family.EvalDeriv(k.ScaledDist(x, y))
	for i, l := range k.Hyper.Lengthscales {
		t := x[i] - y[i]
		// ∂k/∂ℓ_i = s²·(m'(r)/r)·(−Δ_i²/ℓ_i³)
		dst[i] = -s * s * dm * t * t / (l * l * l)
	}
	dst[d] = 2 * s * m
}

// EvalFlops is the number of floating-point operations one kernel value
// k(x_a, x_b) is counted as in throughput figures: 2d for the distance dot
// product, 3 to form r², and 10 for the square root, exponential and scaling.
// It is a convention (a transcendental function counts as a few flops), used
// to rate matrix-free products against a gemm measured on the same machine.
func EvalFlops(d int) float64 { return float64(2*d + 13) }
