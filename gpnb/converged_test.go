package gpnb

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
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
	creeping := func(k int) []float64 { return []float64{1, 1, math.Pow(0.9999, float64(k))} }
	pulled := func(int) []float64 { return []float64{0, 0, -2 * DefaultConvergedGrad} }
	pulledLess := func(int) []float64 { return []float64{0, 0, -DefaultConvergedGrad / 2} }
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
		// σ creeping down 0.01 % a step under a steady gradient of twice
		// DefaultConvergedGrad: L/n rises by 2·10⁻⁶ a step, below tol, but
		// the gradient says the step is held back, not done.
		{"σ creeping under a gradient above ConvergedGrad", creeping, pulled, false},
		{"σ creeping under a gradient below ConvergedGrad", creeping, pulledLess, true},
	} {
		h := run(c2.theta, c2.grad)
		if got := c.converged(h, n); got != c2.want {
			t.Errorf("%s: converged %v, want %v", c2.name, got, c2.want)
		}
		if c.converged(h[:2*p-1], n) {
			t.Errorf("%s: converged after %d < 2P steps", c2.name, 2*p-1)
		}
	}
	// σ held on its floor by a gradient that pulls it below: settled.
	floor := func(int) []float64 { return []float64{1, 1, 0.01} }
	h := run(floor, pulled)
	if c.converged(h, n) {
		t.Error("σ at 0.01 pulled down, no floor: converged")
	}
	c.NoiseMin = 0.01
	if !c.converged(h, n) {
		t.Error("σ on its floor 0.01, pulled down: not converged")
	}
}

// A run that stops once converged halves Adam's rate when a
// hyperparameter goes back and forth by about the rate a step, once per
// 2P steps and at most MaxAdamHalvings times; a drift in one direction, a
// rate halved within the window, or a run for a number of steps does not.
func TestAdamHalvings(t *testing.T) {
	const p = 4
	c, err := Config{ConvergedSteps: p, Until: UntilConverged, LearningRate: 0.1}.Resolve(1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(n, halvings int, logEll func(k int) float64) History {
		h := make(History, n)
		for k := range h {
			h[k] = StepRecord{Step: k + 1, Lengthscales: []float64{math.Exp(logEll(k))}, Signal: 1, Noise: 1, AdamHalvings: halvings}
		}
		return h
	}
	swing := func(k int) float64 { return 0.1 * float64(k%2) }  // ±0.1 a step
	drift := func(k int) float64 { return 0.1 * float64(k) }    // +0.1 a step
	small := func(k int) float64 { return 0.01 * float64(k%2) } // ±0.01 a step
	for _, c2 := range []struct {
		name  string
		h     History
		until Until
		want  int
	}{
		{"swinging by the rate", run(2*p+1, 0, swing), UntilConverged, 1},
		{"swinging by the halved rate", run(2*p+1, 1, func(k int) float64 { return swing(k) / 2 }), UntilConverged, 2},
		{"swinging by a tenth of the rate", run(2*p+1, 0, small), UntilConverged, 0},
		{"drifting by the rate", run(2*p+1, 0, drift), UntilConverged, 0},
		{"swinging, too few steps", run(2*p, 0, swing), UntilConverged, 0},
		{"swinging at the last halving", run(2*p+1, MaxAdamHalvings, swing), UntilConverged, MaxAdamHalvings},
		{"swinging, a fixed number of steps", run(2*p+1, 0, swing), UntilSteps, 0},
	} {
		cc := c
		cc.Until = c2.until
		if got := cc.adamHalvings(c2.h); got != c2.want {
			t.Errorf("%s: %d halvings, want %d", c2.name, got, c2.want)
		}
	}
	// Halved within the window: no second halving until 2P steps later.
	h := run(2*p+1, 1, swing)
	h[p].AdamHalvings = 0
	if got := c.adamHalvings(h); got != 1 {
		t.Errorf("halved within the window: %d halvings, want 1", got)
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
	o := runSteps(t, ds, cfg, cap)
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

// Where the convergence test stops on the fast preset's recorded 200-step
// runs at n = 2000 (results/speed/fast-preset/out, stages ablation and
// stop): the rate alone (ConvergedGrad so large that it never decides) and
// with the default gradient bound. What the gradient bound costs on pol,
// and what it waits for on the synthetic set, whose σ still creeps down
// under a steady gradient when the rate alone stops it. The histories are
// fixed files, so these are exact; DESIGN.md ("A good model fast") quotes
// them.
func TestConvergedOnRecordedRuns(t *testing.T) {
	for _, c := range []struct {
		file           string
		rate, withGrad int
	}{
		{"ablation-steps200.json", 65, 85},
		{"stop-elevators-200.json", 74, 74},
		{"stop-synthetic-2000-8-3-200.json", 61, 74},
	} {
		b, err := os.ReadFile(filepath.Join("..", "results", "speed", "fast-preset", "out", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var res Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		stop := func(cfg Config) int {
			for s := 1; s <= len(res.History); s++ {
				if cfg.converged(res.History[:s], res.NTrain) {
					return s
				}
			}
			return 0
		}
		cfg := Fast()
		cfg, err = cfg.Resolve(res.D)
		if err != nil {
			t.Fatal(err)
		}
		cfg.NoiseMin = 0 // as the runs were made
		rate := cfg
		rate.ConvergedGrad = math.Inf(1)
		r, g := stop(rate), stop(cfg)
		t.Logf("%s: the rate alone stops at step %d, with the gradient bound at %d", c.file, r, g)
		if r != c.rate || g != c.withGrad {
			t.Errorf("%s: stops at %d and %d, want %d and %d", c.file, r, g, c.rate, c.withGrad)
		}
	}
}
