// Package gptest holds the independent references that the tests of several
// packages compare with: the kernel matrix H = K(X,X) + σ²I and its
// derivatives, written entry by entry from a kernel's pointwise formulas.
// It imports no gpnb package, so that the kernel package's own tests can use
// it too. Only tests import it.
package gptest

import (
	"runtime/debug"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Pointwise is what the references need of a kernel; kernel.Kernel has
// these methods.
type Pointwise interface {
	// At returns k(x, y).
	At(x, y []float64) float64
	// GradAt sets dst to ∂k(x, y)/∂(ℓ_1..ℓ_d, s).
	GradAt(dst, x, y []float64)
}

// H returns K(X,X) + noise²·I, every one of the n² entries from k.At (noise
// 0 gives K itself).
func H(x *mat.Dense, k Pointwise, noise float64) *mat.Dense {
	n, _ := x.Dims()
	h := mat.NewDense(n, n, nil)
	s2 := noise * noise
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			v := k.At(x.RawRowView(a), x.RawRowView(b))
			if a == b {
				v += s2
			}
			h.Set(a, b, v)
		}
	}
	return h
}

// SymH is H as a symmetric matrix: its upper triangle from k.At.
func SymH(x *mat.Dense, k Pointwise, noise float64) *mat.SymDense {
	n, _ := x.Dims()
	h := mat.NewSymDense(n, nil)
	for a := 0; a < n; a++ {
		for b := a; b < n; b++ {
			v := k.At(x.RawRowView(a), x.RawRowView(b))
			if a == b {
				v += noise * noise
			}
			h.SetSym(a, b, v)
		}
	}
	return h
}

// DH returns ∂H/∂θ_i as explicit n×n matrices for θ = (ℓ_1..ℓ_d, s, σ),
// from k.GradAt and ∂(σ²I)/∂σ = 2σI.
func DH(x *mat.Dense, k Pointwise, noise float64) []*mat.Dense {
	n, d := x.Dims()
	out := make([]*mat.Dense, d+2)
	for i := range out {
		out[i] = mat.NewDense(n, n, nil)
	}
	g := make([]float64, d+1)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			k.GradAt(g, x.RawRowView(a), x.RawRowView(b))
			for i, v := range g {
				out[i].Set(a, b, v)
			}
		}
		out[d+1].Set(a, a, 2*noise)
	}
	return out
}

// BuildSettings returns the settings the go command recorded in this binary
// (runtime/debug.BuildInfo.Settings: "CGO_ENABLED", "-tags", ...), the
// independent record of how a test binary was built, or false where it has
// none.
func BuildSettings() (map[string]string, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, false
	}
	s := map[string]string{}
	for _, kv := range bi.Settings {
		s[kv.Key] = kv.Value
	}
	return s, true
}

// HasTag reports whether the build settings s name the build tag tag.
func HasTag(s map[string]string, tag string) bool {
	return slices.Contains(strings.Split(s["-tags"], ","), tag)
}
