package gpnb

import (
	"context"
	"math"
	"testing"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
)

// The convergence test on made-up histories (P = 4 steps, n = 1000, tol =
// 10⁻⁵): it holds when the first-order rise of L/n a step, Σ|ḡ_i||Δ_i|,
// is below tol, so a hyperparameter may keep moving where its gradient is
// negligible, jitter passes, and a drift against a gradient does not, nor
// two that are each below tol alone but not together.
func TestConvergedRule(t *testing.T) {
	const n, p = 1000, 4
	c, err := Config{ConvergedTol: 1e-5, ConvergedSteps: p}.Resolve(1)
	if err != nil {
		t.Fatal(err)
	}
	// run returns 2P steps whose θ = (ℓ, s, σ) after step k (from 1) is
	// theta(k) and whose gradient with respect to log θ per point, at the
	// step's start, is logGrad(k).
	run := func(theta func(k int) []float64, logGrad func(k int) []float64) History {
		var h History
		for k := 1; k <= 2*p; k++ {
			th, before, lg := theta(k), theta(k-1), logGrad(k)
			g := make([]float64, len(th))
			for i := range g {
				g[i] = lg[i] * n / before[i]
			}
			h = append(h, StepRecord{Lengthscales: th[:1], Signal: th[1], Noise: th[2], Gradient: g})
		}
		return h
	}
	ones := func(int) []float64 { return []float64{1, 1, 1} }
	large := func(int) []float64 { return []float64{5e-3, 5e-3, 5e-3} }
	small := func(int) []float64 { return []float64{5e-4, 5e-4, 5e-4} }
	growing := func(k int) []float64 { return []float64{math.Pow(1.01, float64(k)), 1, 1} } // ℓ: +1 % a step
	// ℓ and σ: +1 % a step
	growingTwo := func(k int) []float64 { return []float64{math.Pow(1.01, float64(k)), 1, math.Pow(1.01, float64(k))} }
	medium := func(int) []float64 { return []float64{7e-4, 7e-4, 7e-4} }
	// s: ±5 % about 1, alternately
	jitter := func(k int) []float64 {
		return []float64{1, 1 + 0.05*float64(k%2), 1}
	}
	alternating := func(k int) []float64 { // the gradient of jitter: large, mean 0
		v := 5e-3 * float64(1-2*(k%2))
		return []float64{v, v, v}
	}
	for _, c2 := range []struct {
		name        string
		theta, grad func(int) []float64
		want        bool
	}{
		{"unchanged, large gradient", ones, large, true},
		{"ℓ growing 1 % a step, small gradient (an input that does not matter)", growing, small, true},
		{"ℓ growing 1 % a step, large gradient", growing, large, false},
		{"ℓ growing 1 % a step, a gradient just below tol's", growing, medium, true},
		{"ℓ and σ growing 1 % a step, a gradient just below tol's", growingTwo, medium, false},
		{"s jittering ±5 % with a jittering gradient", jitter, alternating, true},
	} {
		h := run(c2.theta, c2.grad)
		if got := c.converged(h, n); got != c2.want {
			t.Errorf("%s: converged %v, want %v", c2.name, got, c2.want)
		}
		if c.converged(h[:2*p-1], n) {
			t.Errorf("%s: converged after %d < 2P steps", c2.name, 2*p-1)
		}
	}
}

// UntilConverged: Run stops at the first converged step, well before its
// cap, and a run resumed from a checkpoint taken earlier stops at the same
// step with the same bits. Without it the same run goes on to the cap.
func TestRunUntilConverged(t *testing.T) {
	ds, err := data.Synthetic(150, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/run.ckpt"
	// The fast preset (mixed precision where it has the vectorised
	// kernel, the automatic preconditioner, log θ), so that its resume is
	// checked bit for bit too.
	cfg := Fast()
	cfg.Seed, cfg.Settings = 2, solvers.Settings{RelTolMean: 1e-4, RelTolProbes: 1e-3}
	cfg.ExactUpTo = 0 // Adam's stop; the exact path's has its own tests (exactpath_test.go)
	const cap = 400
	o, err := NewOptimiser(ds, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background(), cap); err != nil {
		t.Fatal(err)
	}
	stop := o.Steps()
	if !o.Converged() || stop >= cap || stop < DefaultConvergedSteps {
		t.Fatalf("stopped after %d of %d steps, converged %v", stop, cap, o.Converged())
	}
	if !o.Result().Converged {
		t.Error("Result.Converged is false")
	}
	if err := o.Run(context.Background(), cap); err != nil || o.Steps() != stop {
		t.Errorf("Run on a converged run did %d steps (%v)", o.Steps()-stop, err)
	}

	half := cfg
	half.CheckpointPath = path
	h, err := NewOptimiser(ds, half)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(context.Background(), stop/2); err != nil {
		t.Fatal(err)
	}
	r, err := Resume(path, ds)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunTo(context.Background(), cap); err != nil {
		t.Fatal(err)
	}
	if r.Steps() != stop || !floatbits.Equal(r.State().Raw, o.State().Raw) {
		t.Errorf("resumed run stopped after %d steps (straight: %d), same θ bits %v", r.Steps(), stop, floatbits.Equal(r.State().Raw, o.State().Raw))
	}

	steps := cfg
	steps.Until = UntilSteps
	s, err := NewOptimiser(ds, steps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), stop+5); err != nil || s.Steps() != stop+5 {
		t.Errorf("UntilSteps ran %d of %d steps (%v)", s.Steps(), stop+5, err)
	}
}
