package gpnb

import (
	"math"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/enum"
)

// Param is how the optimiser writes the positive hyperparameters θ =
// (ℓ_1..ℓ_d, s, σ) as unconstrained values θ̃ (State.Raw), on which Adam
// steps.
type Param int

const (
	// ParamSoftplus is θ = log(1 + e^θ̃), the paper's parametrisation and
	// the default. For large θ it is nearly the identity, so a step of
	// about the learning rate in θ̃ moves a length scale of 20 by about the
	// learning rate too: inputs that do not matter, whose length scales
	// are 10³–10⁴ at the exact optimum on pol, take thousands of steps to
	// get there.
	ParamSoftplus Param = iota
	// ParamLog is θ = e^θ̃: a step of the learning rate in θ̃ scales θ by
	// e^(±lr), the same relative change at any size, so a length scale
	// grows from 1 to 10³ in about 70 steps at the default learning rate
	// 0.1. The gradient with respect to θ̃ is θ·∂L/∂θ, the form in which
	// scikit-learn and GPyTorch's log-scale optimisers see it.
	ParamLog
)

var paramNames = enum.Enum[Param]{Type: "Param", What: "parametrisation", Err: errEnum, Names: []string{"softplus", "log"}}

// String returns "softplus" or "log".
func (p Param) String() string { return paramNames.Name(p) }

// MarshalText returns String().
func (p Param) MarshalText() ([]byte, error) { return paramNames.Marshal(p) }

// UnmarshalText parses softplus or log.
func (p *Param) UnmarshalText(b []byte) error { return paramNames.Unmarshal(p, b) }

// valid reports whether p is ParamSoftplus or ParamLog.
func (p Param) valid() bool { return p == ParamSoftplus || p == ParamLog }

// Raw returns θ̃ for the constrained θ of h, ordered as h.Vector().
func (p Param) Raw(h kernel.Hyper) []float64 {
	v := h.Vector()
	for i, x := range v {
		v[i] = p.rawOf(x)
	}
	return v
}

// Hyper returns the constrained θ of raw values θ̃ ordered as
// kernel.Hyper.Vector().
func (p Param) Hyper(raw []float64) kernel.Hyper {
	if p == ParamSoftplus {
		return kernel.HyperFromRaw(raw)
	}
	v := make([]float64, len(raw))
	for i, x := range raw {
		v[i] = math.Exp(x)
	}
	return kernel.HyperFromVector(v)
}

// rawOf returns θ̃ for one constrained value θ > 0.
func (p Param) rawOf(theta float64) float64 {
	if p == ParamSoftplus {
		return kernel.InvSoftplus(theta)
	}
	return math.Log(theta)
}

// grad returns dθ/dθ̃ at θ̃ = raw.
func (p Param) grad(raw float64) float64 {
	if p == ParamSoftplus {
		return kernel.SoftplusGrad(raw)
	}
	return math.Exp(raw)
}
