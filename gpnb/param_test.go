package gpnb

import (
	"context"
	"math"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// Adam's first step moves every raw parameter by lr·g/(|g| + ε), g the
// gradient with respect to it: with ParamLog that multiplies θ_i by
// e^(±lr), with ParamSoftplus it adds ±lr to softplus⁻¹(θ_i). Checked
// against the Cholesky gradient, chained by hand.
func TestParamAdamStep(t *testing.T) {
	const d, lr = 2, 0.1
	ds := synth(t, 40, d, 3)
	init := kernel.Hyper{Lengthscales: []float64{0.7, 2.5}, Signal: 1.3, Noise: 0.4}
	g := exactGradient(t, ds, kernel.Kernel{Family: Matern32, Hyper: init})
	for _, p := range []Param{ParamSoftplus, ParamLog} {
		o, err := NewOptimiser(ds, Config{Estimator: ExactGradient, Param: p, LearningRate: lr, Init: init})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := o.Hyper().Vector()
		for i, th := range init.Vector() {
			var raw, dRaw float64 // θ̃ and dθ/dθ̃ at θ
			switch p {
			case ParamLog:
				raw, dRaw = math.Log(th), th
			default:
				raw, dRaw = th+math.Log(-math.Expm1(-th)), -math.Expm1(-th)
			}
			gr := g[i] * dRaw
			raw += lr * gr / (math.Abs(gr) + AdamEpsilon)
			want := math.Exp(raw)
			if p == ParamSoftplus {
				want = math.Log1p(math.Exp(raw))
			}
			if math.Abs(got[i]-want) > 1e-12*want {
				t.Errorf("%v: θ[%d] after one step = %.15g, want %.15g", p, i, got[i], want)
			}
		}
		if back := p.Hyper(p.Raw(init)).Vector(); !floatsClose(back, init.Vector(), 1e-15) {
			t.Errorf("%v: Hyper(Raw(θ)) = %v, want %v", p, back, init.Vector())
		}
	}
}

func floatsClose(a, b []float64, rel float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > rel*math.Abs(b[i]) {
			return false
		}
	}
	return true
}
