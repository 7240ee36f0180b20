package solvers

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// stallRun solves sys's right-hand sides on op with m under s (a cap far
// beyond where a stall shows) and checks what every stalled solve must be:
// done, not converged, not at the cap, no error, and its RelResiduals the
// true residuals b − op·v (computed here with one op.MulTo and gonum, to
// 1e-9 of ‖b‖ for sums in other orders), which do not meet the rule.
func stallRun(t *testing.T, sys *kernelSystem, op Operator, m Method, s Settings) *State {
	t.Helper()
	sv, err := Solve(context.Background(), op, m, sys.b, nil, s)
	if err != nil {
		t.Fatalf("%s: %v", m.Name(), err)
	}
	st := sv.State()
	if !st.Stalled || st.Converged || st.Iteration >= st.Settings.MaxIterations {
		t.Fatalf("%s: stalled %v, converged %v after %d of at most %d iterations: want a stall before the cap", m.Name(), st.Stalled, st.Converged, st.Iteration, st.Settings.MaxIterations)
	}
	n, m2 := sys.b.Dims()
	hv := mat.NewDense(n, m2, nil)
	op.MulTo(hv, sv.Solution())
	hv.Sub(sys.b, hv)
	rel := make([]float64, m2)
	for j := range rel {
		rel[j] = mat.Norm(hv.ColView(j), 2) / mat.Norm(sys.b.ColView(j), 2)
	}
	for j, r := range rel {
		if d := r - st.RelResiduals[j]; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: column %d: RelResiduals %.6g at the stall, true residual %.6g", m.Name(), j, st.RelResiduals[j], r)
		}
	}
	if st.Settings.met(rel) {
		t.Errorf("%s: stalled with true residuals %v that meet the rule", m.Name(), rel)
	}
	return st
}

// TestSGDStallsNearDivergence: SGD at 0.9 of the largest learning rate
// that does not diverge (found here by bisection, so on any machine) makes
// no progress, and the stall detection stops it within a few times
// StallEpochs epochs, where it would otherwise run to its cap of 100 000
// iterations; at half that rate the same system converges. The stalled
// solve, paused mid-way and resumed, ends bit for bit as the straight one.
func TestSGDStallsNearDivergence(t *testing.T) {
	sys := rulesSystem(t)
	const bs = 50
	set := Settings{MaxIterations: 100000}
	diverges := func(raw float64) bool {
		_, err := Solve(context.Background(), sys.op, SGD{BatchSize: bs, RawLearningRate: raw, Seed: 1}, sys.b, nil, set)
		if err != nil && !errors.Is(err, ErrDiverged) {
			t.Fatal(err)
		}
		return err != nil
	}
	ok, bad := 1.0, 0.0
	for !diverges(2 * ok) {
		if ok *= 2; ok > 1e6 {
			t.Fatal("SGD does not diverge at any learning rate")
		}
	}
	bad = 2 * ok
	for k := 0; k < 10; k++ {
		if mid := (ok + bad) / 2; diverges(mid) {
			bad = mid
		} else {
			ok = mid
		}
	}
	m := SGD{BatchSize: bs, RawLearningRate: 0.9 * ok, Seed: 1}
	st := stallRun(t, sys, sys.op, m, set)
	epochs := st.Epochs()
	t.Logf("diverges above raw rate %.4g; at %.4g: stalled after %d iterations (%.0f epochs), residuals %.3g", ok, m.RawLearningRate, st.Iteration, epochs, st.RelResiduals[0])
	// A stall needs stallMisses+1 checks, StallEpochs epochs apart at
	// least, after the last new low: 10 windows is ample.
	if limit := float64(10 * StallEpochs); epochs > limit {
		t.Errorf("stalled only after %.0f epochs, more than %.0f", epochs, limit)
	}
	half := m
	half.RawLearningRate = m.RawLearningRate / 2
	if sv, err := Solve(context.Background(), sys.op, half, sys.b, nil, set); err != nil || !sv.Converged() {
		t.Errorf("at half the rate (%.4g): converged %v, error %v", half.RawLearningRate, sv.Converged(), err)
	}

	// Resume in the middle of the stall checks.
	sv, err := m.Start(sys.op, sys.b, nil, set)
	if err != nil {
		t.Fatal(err)
	}
	for sv.State().Watch == nil || sv.State().Watch.Checked == 0 {
		if err := sv.Iterate(); err != nil || sv.Done() {
			t.Fatalf("no stall check before the end (error %v)", err)
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(sv.State()); err != nil {
		t.Fatal(err)
	}
	var saved State
	if err := gob.NewDecoder(&buf).Decode(&saved); err != nil {
		t.Fatal(err)
	}
	rs, err := Resume(sys.op, m, sys.b, &saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	got := rs.State()
	if hashState(got) != hashState(st) || *got.Watch != *st.Watch || !got.Stalled {
		t.Errorf("resumed at iteration %d: ends at iteration %d (stalled %v, watch %+v), straight at %d (watch %+v)", saved.Iteration, got.Iteration, got.Stalled, *got.Watch, st.Iteration, *st.Watch)
	}
}

// TestStallsBelowRounding: a tolerance that float64 products cannot reach
// (1e-16 of ‖b‖) stops SGD (by its stall checks) and AP (by its failed
// checks of b − Hv) as Stalled; AP with float32 products stalls at their
// floor (about 1e-7) at a tolerance of 1e-9 that float64 ones reach, where
// before it checked b − Hv it reported the tolerance met by its updated
// residual.
func TestStallsBelowRounding(t *testing.T) {
	sys := rulesSystem(t)
	tight := Settings{RelTolMean: 1e-16, RelTolProbes: 1e-16, MaxIterations: 200000}
	for _, m := range []Method{SGD{BatchSize: 50, Seed: 1}, AP{BlockSize: 50}} {
		st := stallRun(t, sys, sys.op, m, tight)
		t.Logf("%s at tolerance 1e-16: stalled after %d iterations, residuals %.3g", m.Name(), st.Iteration, st.RelResiduals)
	}
	x := synthX(300, 3, 41)
	op32, err := kernel.NewOperator(x, hyper(3, 0.8, 1, 0.3), kernel.Options{Precision: kernel.Float32})
	if err != nil {
		t.Fatal(err)
	}
	st := stallRun(t, sys, op32, AP{BlockSize: 50}, Settings{RelTolMean: 1e-9, RelTolProbes: 1e-9, MaxIterations: 200000})
	t.Logf("ap float32 at tolerance 1e-9: stalled after %d iterations, residuals %.3g", st.Iteration, st.RelResiduals)
	sv, err := Solve(context.Background(), sys.op, AP{BlockSize: 50}, sys.b, nil, Settings{RelTolMean: 1e-9, RelTolProbes: 1e-9})
	if err != nil || !sv.Converged() {
		t.Fatalf("AP in float64 at tolerance 1e-9: converged %v, error %v", sv.Converged(), err)
	}
	for j, r := range trueRel(sys.h, sv.Solution(), sys.b) {
		if !(r < 1e-9) {
			t.Errorf("AP converged, but column %d's true residual is %.3g", j, r)
		}
	}
}
