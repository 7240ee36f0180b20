package solvers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// rulesSystem is a Matérn-3/2 system (n = 300, 1 mean column and 8 probes)
// on which every method converges within its default cap.
func rulesSystem(t *testing.T) *kernelSystem {
	t.Helper()
	x := synthX(300, 3, 41)
	return newKernelSystem(t, x, hyper(3, 0.8, 1, 0.3), rhs(x, 9, 42))
}

// ruleMet is the stopping rule computed here, independently of Settings.met:
// column 0 below 0.01 and the probes each (or on average) below 0.1, each
// tolerance widened by 1e-9 relative. rel comes from gonum's product, the
// solver judged its own: the two round differently in the last bits (about
// cond(H)·ε ≈ 1e-12 relative here), and a residual may sit that close to its
// tolerance.
func ruleMet(rel []float64, mean bool) bool {
	const slack = 1 + 1e-9
	if !(rel[0] < DefaultRelTolMean*slack) {
		return false
	}
	sum, worst := 0.0, 0.0
	for _, r := range rel[1:] {
		sum += r
		worst = math.Max(worst, r)
	}
	if mean {
		return sum/float64(len(rel)-1) < DefaultRelTolProbes*slack
	}
	return worst < DefaultRelTolProbes*slack
}

// TestRulesStopWhereTheySay: under every combination of ProbeRule and
// Freeze, every iterative method stops converged, and the true residuals
// (gonum's product) meet the rule it was given. The mean rule never takes
// more iterations than the each rule, and under FreezeJoint CG's columns
// that met their tolerance early end with no larger energy error than
// under FreezeColumn (CG minimises it over a growing Krylov space).
//
// CG's columns do not interact, so in exact arithmetic FreezeJoint and
// FreezeColumn stop at the same iteration. In floating point they do not
// compute the same bits: a frozen column leaves the products, which then
// take another shape, and BLAS kernels (OpenBLAS picks them by CPU) round
// products of different shapes differently in the last bits. A column
// whose residual sits within that rounding of its tolerance can then
// cross it one iteration apart, so the test allows ±1 iteration, and
// compares energy errors only where the joint run did at least as many
// iterations on the column as the column run, allowing 1e-6 relative: the
// rounding moves the iterates by about cond(H)·ε ≈ 1e-12 relative here,
// while one more CG iteration lowers the energy error by a factor of order
// one.
func TestRulesStopWhereTheySay(t *testing.T) {
	sys := rulesSystem(t)
	for _, m := range methodsUnderTest() {
		iters := map[string]int{}
		errs := map[string][]float64{}
		frozeAt := map[string][]int{} // the first iteration at which each column met its tolerance
		verifications := map[string]int{}
		for _, pr := range []ProbeRule{ProbeEach, ProbeMean} {
			for _, fr := range []Freeze{FreezeColumn, FreezeJoint} {
				name := fmt.Sprintf("%s/%v/%v", m.Name(), pr, fr)
				s := Settings{ProbeRule: pr, Freeze: fr}
				sv, err := Solve(context.Background(), sys.op, m, sys.b, nil, s)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				st := sv.State()
				if !sv.Converged() {
					t.Fatalf("%s: not converged after %d iterations: %v", name, st.Iteration, st.RelResiduals)
				}
				rel := trueRel(sys.h, sv.Solution(), sys.b)
				if !ruleMet(rel, pr == ProbeMean) {
					t.Errorf("%s: converged, but the true residuals %v do not meet the rule", name, rel)
				}
				if pr == ProbeEach && !ruleMet(rel, false) {
					t.Errorf("%s: a probe is above 0.1: %v", name, rel)
				}
				iters[name] = st.Iteration
				errs[name] = energyErr(sys.h, sv.Solution(), sys.vstar)
				frozeAt[name] = firstMet(st)
				if st.SGD != nil {
					verifications[name] = st.SGD.Verifications
				}
				t.Logf("%s: %d iterations, %d products, true residuals y %.4f probes max %.4f", name, st.Iteration, st.Work.OperatorProducts, rel[0], maxOf(rel[1:]))
			}
		}
		// The each rule implies the mean rule, and for one Freeze the two
		// runs do the same arithmetic until the mean rule is met (which
		// columns freeze depends on each column's own tolerance, not on
		// the probe rule), so the mean rule stops no later, by
		// construction, on any machine. SGD is the exception: a failed
		// verification replaces its residual estimates, which then decide
		// when columns freeze, so there it holds by construction only when
		// the mean run verified once, at its stop.
		for _, fr := range []Freeze{FreezeColumn, FreezeJoint} {
			e, mn := fmt.Sprintf("%s/each/%v", m.Name(), fr), fmt.Sprintf("%s/mean/%v", m.Name(), fr)
			if verifications[mn] > 1 {
				t.Logf("%s: %d verifications before the mean rule's stop: the runs part before it, not compared", mn, verifications[mn])
				continue
			}
			if iters[mn] > iters[e] {
				t.Errorf("%s: the mean rule took %d iterations, the each rule %d", m.Name(), iters[mn], iters[e])
			}
		}
		if m.Name() == "cg" {
			col, joint := errs["cg/each/column"], errs["cg/each/joint"]
			nj, nc := iters["cg/each/joint"], iters["cg/each/column"]
			if nj < nc-1 || nj > nc+1 {
				t.Errorf("cg: joint took %d iterations, column %d: CG's columns do not interact, so at most ±1 from rounding", nj, nc)
			}
			for j, at := range frozeAt["cg/each/column"] {
				if at <= nj && joint[j] > col[j]*(1+1e-6) {
					t.Errorf("cg column %d (met its tolerance at iteration %d of %d): energy error %g under joint > %g under column freezing", j, at, nj, joint[j], col[j])
				}
			}
		}
	}
}

// firstMet returns, per column, the first iteration after which its
// relative residual in st.Trace met its tolerance (len(st.Trace) if never).
func firstMet(st *State) []int {
	at := make([]int, st.M)
	for j := range at {
		at[j] = len(st.Trace)
		for t, row := range st.Trace {
			if row[j] < st.Settings.tol(j) {
				at[j] = t
				break
			}
		}
	}
	return at
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// TestSettingsMet checks the rule on hand-made residuals.
func TestSettingsMet(t *testing.T) {
	s, _ := Settings{}.withDefaults(1)
	mean := s
	mean.ProbeRule = ProbeMean
	cases := []struct {
		rel        []float64
		each, mean bool
	}{
		{[]float64{0.005, 0.05, 0.09}, true, true},
		{[]float64{0.005, 0.05, 0.12}, false, true}, // mean 0.085
		{[]float64{0.005, 0.09, 0.12}, false, false},
		{[]float64{0.02, 0.01, 0.01}, false, false}, // the mean column binds
		{[]float64{0.005}, true, true},              // no probes
		{[]float64{0.005, math.NaN()}, false, false},
	}
	for _, c := range cases {
		if got := s.met(c.rel); got != c.each {
			t.Errorf("each: met(%v) = %v", c.rel, got)
		}
		if got := mean.met(c.rel); got != c.mean {
			t.Errorf("mean: met(%v) = %v", c.rel, got)
		}
	}
}

// TestMaxEpochs: the cap is ⌈E·n/rows⌉ (CG: E), stored in the State, and a
// solve that cannot converge stops there; MaxEpochs with MaxIterations is
// refused, and Resolve leaves the cap to Start.
func TestMaxEpochs(t *testing.T) {
	sys := rulesSystem(t) // n = 300
	tight := Settings{RelTolMean: 1e-12, RelTolProbes: 1e-12, MaxEpochs: 2.5}
	for _, c := range []struct {
		m    Method
		want int
	}{
		{CG{}, 3},                 // ⌈2.5⌉
		{AP{BlockSize: 64}, 12},   // ⌈2.5·300/64⌉ = ⌈11.7⌉
		{SGD{BatchSize: 64}, 12},  // the same
		{SGD{BatchSize: 1000}, 3}, // batch capped at n: ⌈2.5⌉
		{AP{BlockSize: 7}, 108},   // ⌈107.1⌉
		{Cholesky{}, 1},           // one solve, whatever the cap
		{SGD{BatchSize: 300}, 3},  // one epoch per iteration
		{AP{BlockSize: 150}, 5},   // two blocks: ⌈5⌉
		{SGD{BatchSize: 299}, 3},  // ⌈2.508⌉
		{SGD{BatchSize: 301}, 3},  // capped at n
		{AP{BlockSize: 1}, 750},   // one row a block
		{SGD{BatchSize: 1, Seed: 1}, 750},
	} {
		sv, err := Solve(context.Background(), sys.op, c.m, sys.b, nil, tight)
		if err != nil {
			t.Fatalf("%s: %v", c.m.Name(), err)
		}
		st := sv.State()
		if st.Settings.MaxIterations != c.want || (c.m.Name() != "cholesky" && st.Iteration != c.want) {
			t.Errorf("%s %+v: MaxIterations %d, %d iterations; want %d", c.m.Name(), c.m, st.Settings.MaxIterations, st.Iteration, c.want)
		}
	}
	if _, err := CG.Start(CG{}, sys.op, sys.b, nil, Settings{MaxEpochs: 2, MaxIterations: 5}); err == nil {
		t.Error("MaxEpochs with MaxIterations was accepted")
	}
	if _, err := (Settings{MaxEpochs: -1}).Resolve(CG{}); err == nil {
		t.Error("MaxEpochs −1 was accepted")
	}
	r, err := Settings{MaxEpochs: 1000}.Resolve(SGD{})
	if err != nil || r.MaxIterations != 0 || r.MaxEpochs != 1000 || r.RelTolMean != DefaultRelTolMean {
		t.Errorf("Resolve with MaxEpochs: %+v, %v", r, err)
	}
	if r2, err := r.Resolve(SGD{}); err != nil || r2 != r {
		t.Errorf("resolving again changed %+v to %+v (%v)", r, r2, err)
	}
}

// TestSGDResidualStart: ResidualB starts a warm solve's estimate at B (no
// product; every estimate 1), ResidualTrue at B − H·V0 (one product).
func TestSGDResidualStart(t *testing.T) {
	sys := rulesSystem(t)
	v0 := mat.DenseCopyOf(sys.vstar)
	v0.Scale(0.9, v0)
	for _, rs := range []SGDResidualStart{ResidualTrue, ResidualB} {
		sv, err := SGD{BatchSize: 64, Seed: 3, ResidualStart: rs}.Start(sys.op, sys.b, v0, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		st := sv.State()
		truth := trueRel(sys.h, v0, sys.b)
		for j, r := range st.RelResiduals {
			want := truth[j]
			if rs == ResidualB {
				want = 1
			}
			if math.Abs(r-want) > 1e-12 {
				t.Errorf("%v: column %d starts at %g, want %g", rs, j, r, want)
			}
		}
		if wantP := map[SGDResidualStart]int{ResidualTrue: 9, ResidualB: 0}[rs]; st.Work.OperatorProducts != wantP {
			t.Errorf("%v: %d products at Start, want %d", rs, st.Work.OperatorProducts, wantP)
		}
		if err := Run(context.Background(), sv); err != nil || !sv.Converged() {
			t.Errorf("%v: %v, converged %v", rs, err, sv.Converged())
		}
	}
}

// TestSGDNoVerify: without verification SGD stops on its estimates with no
// product at all, and its Converged says the estimates met the rule.
func TestSGDNoVerify(t *testing.T) {
	sys := rulesSystem(t)
	for _, fr := range []Freeze{FreezeColumn, FreezeJoint} {
		sv, err := Solve(context.Background(), sys.op, SGD{BatchSize: 64, Seed: 3, NoVerify: true}, sys.b, nil, Settings{Freeze: fr})
		if err != nil {
			t.Fatal(err)
		}
		st := sv.State()
		if st.SGD.Verifications != 0 || st.Work.OperatorProducts != 0 {
			t.Errorf("%v: %d verifications, %d products", fr, st.SGD.Verifications, st.Work.OperatorProducts)
		}
		if !sv.Converged() || !ruleMet(st.RelResiduals, false) {
			t.Errorf("%v: converged %v with estimates %v", fr, sv.Converged(), st.RelResiduals)
		}
		// The estimate is close to the truth at the stop (the paper's
		// "approximate upper bound"): within a factor 2 here.
		truth := trueRel(sys.h, sv.Solution(), sys.b)
		for j := range truth {
			if truth[j] > 2*st.RelResiduals[j] {
				t.Errorf("%v: column %d: true residual %g, estimate %g", fr, j, truth[j], st.RelResiduals[j])
			}
		}
	}
}

// TestAPPickAll: the first block update picks argmax_b Σ_j ‖R[I_b,j]‖²/‖b_j‖²
// over the columns the rule names, computed here from R.
func TestAPPickAll(t *testing.T) {
	base := rulesSystem(t)
	n, m := base.b.Dims()
	const bs = 64
	// The probes' mass sits in a block other than the one where b_0 is
	// largest, and the warm start leaves residuals 0.95·b_0 (column 0, which
	// meets a loose tolerance 0.99) and 0.03·z_j (above their tolerance
	// 0.02): PickAll then follows b_0, PickUnconverged the probes.
	top, topE := 0, -1.0
	for lo := 0; lo < n; lo += bs {
		e := 0.0
		for i := lo; i < min(lo+bs, n); i++ {
			e += base.b.At(i, 0) * base.b.At(i, 0)
		}
		if e > topE {
			top, topE = lo/bs, e
		}
	}
	probeBlock := (top + 1) % ((n + bs - 1) / bs)
	b := mat.DenseCopyOf(base.b)
	for i := 0; i < n; i++ {
		if i/bs != probeBlock {
			for j := 1; j < m; j++ {
				b.Set(i, j, 1e-3*b.At(i, j))
			}
		}
	}
	sys := newSystem(t, base.h, b)
	v0 := mat.DenseCopyOf(sys.vstar)
	for i := 0; i < n; i++ {
		v0.Set(i, 0, 0.05*v0.At(i, 0))
		for j := 1; j < m; j++ {
			v0.Set(i, j, 0.97*v0.At(i, j))
		}
	}
	picks := map[APPick]int{}
	for _, p := range []APPick{PickUnconverged, PickAll} {
		sv, err := AP{BlockSize: bs, Pick: p}.Start(sys.op, sys.b, v0, Settings{RelTolMean: 0.99, RelTolProbes: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		st := sv.State()
		if !st.ColumnConverged[0] {
			t.Fatalf("column 0 starts at %g, not converged", st.RelResiduals[0])
		}
		r := mat.NewDense(n, m, append([]float64(nil), st.R...))
		want, best := -1, -1.0
		for bl := 0; bl+1 < len(st.AP.Starts); bl++ {
			s := 0.0
			for j := 0; j < m; j++ {
				if p == PickUnconverged && j == 0 {
					continue
				}
				bn := mat.Norm(sys.b.ColView(j), 2)
				for i := st.AP.Starts[bl]; i < st.AP.Starts[bl+1]; i++ {
					s += r.At(i, j) * r.At(i, j) / (bn * bn)
				}
			}
			if s > best {
				want, best = bl, s
			}
		}
		if err := sv.Iterate(); err != nil {
			t.Fatal(err)
		}
		if got := sv.State().AP.Last; got != want {
			t.Errorf("%v: picked block %d, want %d", p, got, want)
		}
		picks[p] = want
	}
	if picks[PickUnconverged] == picks[PickAll] {
		t.Errorf("both rules picked block %d: the test problem does not tell them apart", picks[PickAll])
	}
}

// TestRuleNamesRoundTrip: the enumerations marshal as their names, parse
// them back, refuse unknown names and values, and a Settings or method with
// them survives JSON.
func TestRuleNamesRoundTrip(t *testing.T) {
	s := Settings{ProbeRule: ProbeMean, Freeze: FreezeJoint, MaxEpochs: 1000}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"max_epochs":1000,"probe_rule":"mean","freeze":"joint"}`; string(b) != want {
		t.Errorf("Settings JSON %s, want %s", b, want)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if b, _ := json.Marshal(Settings{}); string(b) != "{}" {
		t.Errorf("zero Settings JSON %s: the defaults must be omitted", b)
	}
	for _, m := range []Method{AP{Pick: PickAll}, SGD{ResidualStart: ResidualB, NoVerify: true}} {
		b, err := MarshalMethod(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := UnmarshalMethod(b)
		if err != nil || back != m {
			t.Errorf("%s: %+v, %v", b, back, err)
		}
	}
	var p ProbeRule
	if err := p.UnmarshalText([]byte("median")); err == nil {
		t.Error("probe rule median was accepted")
	}
	if _, err := Freeze(7).MarshalText(); err == nil {
		t.Error("Freeze(7) marshalled")
	}
	if _, err := (Settings{Freeze: 3}).Resolve(CG{}); err == nil {
		t.Error("Freeze(3) resolved")
	}
	if err := Check(AP{Pick: 5}); err == nil {
		t.Error("AP.Pick 5 passed Check")
	}
	if err := Check(SGD{ResidualStart: -1}); err == nil {
		t.Error("SGD.ResidualStart −1 passed Check")
	}
}

// TestRulesResume: a solve under the non-default rules, paused, saved with
// gob and resumed, ends in the same State (Work aside) as the straight run,
// at GOMAXPROCS 1 and 2 alike.
func TestRulesResume(t *testing.T) {
	h, b, v0 := goldenProblem()
	op, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	cases := []goldenCase{
		{"cg-joint-mean", CG{}, true, Settings{ProbeRule: ProbeMean, Freeze: FreezeJoint}, 8},
		{"cg-column-mean", CG{}, false, Settings{ProbeRule: ProbeMean}, 8},
		{"ap-all-epochs", AP{BlockSize: 64, Pick: PickAll}, true, Settings{MaxEpochs: 30}, 37},
		{"sgd-joint-b-noverify", SGD{BatchSize: 50, Seed: 5, ResidualStart: ResidualB, NoVerify: true}, true, Settings{Freeze: FreezeJoint, ProbeRule: ProbeMean, MaxIterations: 400}, 123},
		{"sgd-joint", SGD{BatchSize: 100, Seed: 8}, false, Settings{Freeze: FreezeJoint, RelTolMean: 0.05, RelTolProbes: 0.2, MaxIterations: 5000}, 50},
	}
	for _, c := range cases {
		var first [4]string
		for _, p := range []int{1, 2} {
			runtime.GOMAXPROCS(p)
			got, sameButWork, iters := goldenRun(t, c, op, b, v0)
			if !sameButWork {
				t.Errorf("%s, GOMAXPROCS %d: the resumed State differs from the straight run's in more than Work", c.name, p)
			}
			if p == 1 {
				first = got
				t.Logf("%s: %d iterations", c.name, iters)
			} else if got != first {
				t.Errorf("%s: GOMAXPROCS 2 gives other bits than 1", c.name)
			}
		}
	}
}

// TestRulesApply: RulesAuthors sets every rule field of the settings and
// of each method to the authors' value, RulesPaperText leaves them, and
// RulesOf names what fields hold.
func TestRulesApply(t *testing.T) {
	for _, m := range Methods() {
		s, got := RulesAuthors.Apply(Settings{RelTolMean: 0.02}, m)
		if s != (Settings{RelTolMean: 0.02, ProbeRule: ProbeMean, Freeze: FreezeJoint}) {
			t.Errorf("%s: authors' settings %+v", m.Name(), s)
		}
		switch g := got.(type) {
		case AP:
			if g.Pick != PickAll {
				t.Errorf("ap: authors' pick %v", g.Pick)
			}
		case SGD:
			if g.ResidualStart != ResidualB || !g.NoVerify {
				t.Errorf("sgd: authors' residual start %v, no verify %v", g.ResidualStart, g.NoVerify)
			}
		}
		if r := RulesOf(s, got); r != RulesAuthors {
			t.Errorf("%s: RulesOf the authors' fields = %v", m.Name(), r)
		}
		if s2, m2 := RulesPaperText.Apply(s, got); s2 != s || m2 != got {
			t.Errorf("%s: RulesPaperText changed the fields", m.Name())
		}
		if r := RulesOf(Settings{}, m); r != RulesPaperText {
			t.Errorf("%s: RulesOf zero fields = %v", m.Name(), r)
		}
		if r := RulesOf(Settings{Freeze: FreezeJoint}, m); r != RulesPaperText {
			t.Errorf("%s: RulesOf one authors' rule = %v", m.Name(), r)
		}
	}
	for _, name := range []string{"authors", "paper-text"} {
		var r Rules
		if err := r.UnmarshalText([]byte(name)); err != nil || r.String() != name || r.Check() != nil {
			t.Errorf("%q: %v, %v", name, r, err)
		}
	}
	var r Rules
	if err := r.UnmarshalText([]byte("paper")); !errors.Is(err, ErrSettings) {
		t.Errorf("unknown rule set: %v", err)
	}
	if err := Rules(7).Check(); !errors.Is(err, ErrSettings) {
		t.Errorf("Rules(7).Check() = %v", err)
	}
}

// TestFieldErrors: a bad field's error is a FieldError naming it, and
// matches ErrSettings.
func TestFieldErrors(t *testing.T) {
	for _, tc := range []struct {
		err   error
		field string
	}{
		{func() error { _, err := (Settings{RelTolMean: -1}).Resolve(CG{}); return err }(), "RelTolMean"},
		{func() error { _, err := (Settings{Budget: math.Inf(1)}).Resolve(CG{}); return err }(), "Budget"},
		{func() error { _, err := (Settings{Freeze: 7}).Resolve(AP{}); return err }(), "Freeze"},
		{func() error { _, err := (Settings{MaxEpochs: 2, MaxIterations: 3}).Resolve(SGD{}); return err }(), "MaxIterations"},
		{Check(SGD{Momentum: 1}), "SGD.Momentum"},
		{Check(SGD{LearningRate: 1, RawLearningRate: 2}), "SGD.LearningRate"},
		{Check(AP{BlockSize: -1}), "AP.BlockSize"},
		{Check(CG{PrecondRank: PrecondRankAuto - 1}), "CG.PrecondRank"},
		{Rules(9).Check(), "Rules"},
	} {
		var fe *FieldError
		if !errors.As(tc.err, &fe) || fe.Field != tc.field || !errors.Is(tc.err, ErrSettings) {
			t.Errorf("%v: want a FieldError of %s", tc.err, tc.field)
		}
	}
}
