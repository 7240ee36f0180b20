package solvers

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
)

func TestConvergesToCholesky(t *testing.T) {
	x := synthX(300, 3, 1)
	b := rhs(x, 5, 2)
	for _, noise := range []float64{1, 0.1} {
		sys := newKernelSystem(t, x, hyper(3, 1, 1, noise), b)
		methods := append(methodsUnderTest(), Cholesky{}, CG{PrecondRank: 20, PrecondNoise: noise * noise}, CG{PrecondRank: 20, PrecondNoise: noise * noise, PrecondDiagonal: true})
		for _, m := range methods {
			t.Run(fmt.Sprintf("%s/%+v/noise=%v", m.Name(), m, noise), func(t *testing.T) {
				sv, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{})
				if err != nil {
					t.Fatal(err)
				}
				st := sv.State()
				if !sv.Done() || !sv.Converged() || !st.Converged {
					t.Fatalf("not converged after %d iterations: %v", st.Iteration, st.RelResiduals)
				}
				rel := trueRel(sys.h, sv.Solution(), sys.b)
				for j, r := range rel {
					if r >= st.Settings.tol(j) {
						t.Errorf("column %d: true relative residual %.3g ≥ tolerance %g", j, r, st.Settings.tol(j))
					}
					// The state's residual is the true one (up to rounding).
					if math.Abs(r-st.RelResiduals[j]) > 1e-8*math.Max(r, 1e-3) {
						t.Errorf("column %d: state says %.12g, true %.12g", j, st.RelResiduals[j], r)
					}
				}
				// ‖v − v*‖ ≤ ‖H⁻¹‖‖r‖ = ‖r‖/λ_min.
				for j := range rel {
					var e mat.VecDense
					e.SubVec(sv.Solution().ColView(j), sys.vstar.ColView(j))
					rn := rel[j] * mat.Norm(sys.b.ColView(j), 2)
					if en := mat.Norm(&e, 2); en > rn/sys.lmin*(1+1e-9)+1e-12 {
						t.Errorf("column %d: ‖v−v*‖ = %g exceeds ‖r‖/λmin = %g", j, en, rn/sys.lmin)
					}
				}
				if len(st.Trace) != st.Iteration+1 {
					t.Errorf("trace has %d rows for %d iterations", len(st.Trace), st.Iteration)
				}
			})
		}
	}
}

func TestCholeskyMatchesGonum(t *testing.T) {
	x := synthX(200, 2, 5)
	sys := newKernelSystem(t, x, hyper(2, 0.7, 1.3, 0.2), rhs(x, 3, 6))
	sv, err := Solve(context.Background(), sys.op, Cholesky{}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if sv.State().Iteration != 1 || sv.State().Work.BlockFactorisations != 1 {
		t.Fatalf("iteration %d, factorisations %d; want 1, 1", sv.State().Iteration, sv.State().Work.BlockFactorisations)
	}
	var d mat.Dense
	d.Sub(sv.Solution(), sys.vstar)
	if e := mat.Norm(&d, 2) / mat.Norm(sys.vstar, 2); e > 1e-10 {
		t.Fatalf("relative error vs gonum Cholesky %g", e)
	}
}

// Each iteration's recorded residual is the true residual of that iterate;
// CG's and AP's errors in the H-norm never increase.
func TestTrajectories(t *testing.T) {
	x := synthX(250, 3, 9)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.3), rhs(x, 4, 10))
	for _, m := range []Method{CG{}, AP{BlockSize: 50}, CG{PrecondRank: 10, PrecondNoise: 0.09}} {
		t.Run(fmt.Sprintf("%s%+v", m.Name(), m), func(t *testing.T) {
			sv, err := m.Start(sys.op, sys.b, nil, Settings{RelTolMean: 1e-6, RelTolProbes: 1e-6})
			if err != nil {
				t.Fatal(err)
			}
			prev := energyErr(sys.h, sv.Solution(), sys.vstar)
			for !sv.Done() {
				if err := sv.Iterate(); err != nil {
					t.Fatal(err)
				}
				st := sv.State()
				rel := trueRel(sys.h, sv.Solution(), sys.b)
				last := st.Trace[len(st.Trace)-1]
				for j := range rel {
					if math.Abs(last[j]-rel[j]) > 1e-6*rel[j]+1e-12 {
						t.Fatalf("iteration %d column %d: trace %.10g, true residual %.10g", st.Iteration, j, last[j], rel[j])
					}
				}
				e := energyErr(sys.h, sv.Solution(), sys.vstar)
				for j := range e {
					if e[j] > prev[j]*(1+1e-9)+1e-13 {
						t.Fatalf("iteration %d column %d: H-norm error rose from %g to %g", st.Iteration, j, prev[j], e[j])
					}
				}
				prev = e
			}
			if !sv.Converged() {
				t.Fatalf("not converged: %v", sv.State().RelResiduals)
			}
		})
	}
}

// SGD's residual estimate is exact on the batch it last touched and the
// final, verified residuals are true.
func TestSGDResidualEstimate(t *testing.T) {
	x := synthX(200, 2, 12)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 1), rhs(x, 3, 13))
	sv, err := SGD{BatchSize: 40, Seed: 1}.Start(sys.op, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s := sv.(*sgdSolver)
	for !sv.Done() {
		vBefore := mat.DenseCopyOf(sv.Solution())
		if err := sv.Iterate(); err != nil {
			t.Fatal(err)
		}
		if s.st.SGD.Verifications > 0 {
			break
		}
		// R[I,:] = B[I,:] − H[I,:]·V_before for the active columns.
		var hv mat.Dense
		hv.Mul(sys.h, vBefore)
		for _, i := range s.idx {
			for _, j := range s.act {
				want := sys.b.At(i, j) - hv.At(i, j)
				if got := s.st.R[i*s.st.M+j]; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("iteration %d: R[%d,%d] = %g, want %g", s.st.Iteration, i, j, got, want)
				}
			}
		}
	}
	if err := Run(context.Background(), sv); err != nil {
		t.Fatal(err)
	}
	if !sv.Converged() {
		t.Fatal("SGD did not converge")
	}
	rel := trueRel(sys.h, sv.Solution(), sys.b)
	for j, r := range rel {
		if math.Abs(r-sv.State().RelResiduals[j]) > 1e-9 {
			t.Errorf("column %d: final residual %g is not the true %g", j, sv.State().RelResiduals[j], r)
		}
	}
}

// Warm starting from the solution at nearby hyperparameters needs fewer
// iterations than starting from zero.
func TestWarmStartFewerIterations(t *testing.T) {
	x := synthX(300, 3, 21)
	b := rhs(x, 5, 22)
	old := newKernelSystem(t, x, hyper(3, 1, 1, 0.5), b)
	cur := newKernelSystem(t, x, hyper(3, 1.05, 1.03, 0.49), b)
	for _, m := range methodsUnderTest() {
		t.Run(m.Name(), func(t *testing.T) {
			cold, err := Solve(context.Background(), cur.op, m, b, nil, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			warm, err := Solve(context.Background(), cur.op, m, b, old.vstar, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if !cold.Converged() || !warm.Converged() {
				t.Fatal("not converged")
			}
			ci, wi := cold.State().Iteration, warm.State().Iteration
			t.Logf("%s: cold %d iterations, warm %d", m.Name(), ci, wi)
			if wi >= ci {
				t.Fatalf("warm start took %d iterations, zero init %d", wi, ci)
			}
			// The warm start's initial residual is the true residual of V0.
			rel0 := trueRel(cur.h, old.vstar, b)
			for j, r := range rel0 {
				if math.Abs(warm.State().Trace[0][j]-r) > 1e-9*(1+r) {
					t.Fatalf("column %d: initial residual %g, true %g", j, warm.State().Trace[0][j], r)
				}
			}
		})
	}
}

func roundTrip(t *testing.T, st *State, codec string) *State {
	t.Helper()
	var out State
	switch codec {
	case "gob":
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(st); err != nil {
			t.Fatal(err)
		}
		if err := gob.NewDecoder(&buf).Decode(&out); err != nil {
			t.Fatal(err)
		}
	case "json":
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	return &out
}

// Pausing, serialising and resuming gives the same iterate, bit for bit, as
// running straight through.
func TestPauseResumeBitIdentical(t *testing.T) {
	x := synthX(200, 3, 31)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.3), rhs(x, 4, 32))
	methods := []Method{CG{}, CG{PrecondRank: 8, PrecondNoise: 0.09}, CG{PrecondRank: 8, PrecondNoise: 0.09, PrecondDiagonal: true}, AP{BlockSize: 30}, SGD{BatchSize: 30, Seed: 9}, Cholesky{}}
	for _, m := range methods {
		for _, codec := range []string{"gob", "json"} {
			t.Run(fmt.Sprintf("%s%+v/%s", m.Name(), m, codec), func(t *testing.T) {
				s := Settings{MaxIterations: 12, RelTolMean: 1e-8, RelTolProbes: 1e-8}
				if m.Name() == "cholesky" {
					s.MaxIterations = 0
				}
				straight, err := m.Start(sys.op, sys.b, nil, s)
				if err != nil {
					t.Fatal(err)
				}
				if err := Run(context.Background(), straight); err != nil {
					t.Fatal(err)
				}
				paused, err := m.Start(sys.op, sys.b, nil, s)
				if err != nil {
					t.Fatal(err)
				}
				stop := straight.State().Iteration / 2
				for paused.State().Iteration < stop {
					if err := paused.Iterate(); err != nil {
						t.Fatal(err)
					}
				}
				st := roundTrip(t, paused.State(), codec)
				resumed, err := Resume(sys.op, m, sys.b, st)
				if err != nil {
					t.Fatal(err)
				}
				if err := Run(context.Background(), resumed); err != nil {
					t.Fatal(err)
				}
				a, b := straight.State(), resumed.State()
				if a.Iteration != b.Iteration || a.Converged != b.Converged {
					t.Fatalf("iteration %d/%d converged %v/%v", a.Iteration, b.Iteration, a.Converged, b.Converged)
				}
				if !floatbits.Equal(a.V, b.V) || !floatbits.Equal(a.R, b.R) || !floatbits.Equal(a.RelResiduals, b.RelResiduals) {
					t.Fatal("V, R or residuals differ after resume")
				}
				for i := range a.Trace {
					if !floatbits.Equal(a.Trace[i], b.Trace[i]) {
						t.Fatalf("trace row %d differs", i)
					}
				}
				if a.SGD != nil && (!floatbits.Equal(a.SGD.Velocity, b.SGD.Velocity) || !bytes.Equal(a.SGD.RNG, b.SGD.RNG)) {
					t.Fatal("SGD velocity or RNG differ")
				}
				if a.CG != nil && (!floatbits.Equal(a.CG.P, b.CG.P) || !floatbits.Equal(a.CG.RZ, b.CG.RZ)) {
					t.Fatal("CG directions differ")
				}
			})
		}
	}
}

func TestMaxIterationsReported(t *testing.T) {
	x := synthX(200, 3, 41)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.1), rhs(x, 3, 42))
	for _, m := range methodsUnderTest() {
		t.Run(m.Name(), func(t *testing.T) {
			sv, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{MaxIterations: 2})
			if err != nil {
				t.Fatal(err)
			}
			st := sv.State()
			if !sv.Done() || sv.Converged() || st.Converged || st.Iteration != 2 {
				t.Fatalf("Done %v Converged %v iteration %d; want true false 2", sv.Done(), sv.Converged(), st.Iteration)
			}
			if err := sv.Iterate(); err != nil || st.Iteration != 2 {
				t.Fatalf("Iterate after Done: err %v, iteration %d", err, st.Iteration)
			}
		})
	}
}

func TestContextCancelResumable(t *testing.T) {
	x := synthX(150, 2, 43)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.3), rhs(x, 2, 44))
	sv, err := CG{}.Start(sys.op, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, sv); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with cancelled context: %v", err)
	}
	if sv.State().Iteration != 0 {
		t.Fatalf("cancelled run iterated %d times", sv.State().Iteration)
	}
	r, err := Resume(sys.op, CG{}, sys.b, sv.State().Clone())
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), r); err != nil || !r.Converged() {
		t.Fatalf("resumed run: %v converged %v", err, r.Converged())
	}
}

// Converged columns leave CG's active set: later products take fewer
// columns, and a zero right-hand side costs nothing.
func TestCGActiveSetAndZeroColumn(t *testing.T) {
	x := synthX(200, 2, 51)
	b := rhs(x, 4, 52)
	for i := 0; i < 200; i++ {
		b.Set(i, 2, 0) // a zero column
	}
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.3), b)
	rec := &recordingOp{Operator: sys.op}
	v0 := mat.NewDense(200, 4, nil)
	v0.Set(3, 2, 5) // the solution of a zero column is zero whatever V0 says
	sv, err := Solve(context.Background(), rec, CG{}, b, v0, Settings{RelTolMean: 1e-6, RelTolProbes: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if !sv.Converged() {
		t.Fatal("not converged")
	}
	if sv.Solution().At(3, 2) != 0 || sv.State().RelResiduals[2] != 0 {
		t.Fatal("zero column: solution or residual not zero")
	}
	// The first products have 3 columns (zero column excluded), the last
	// only the mean column, which has the tighter tolerance.
	if rec.cols[1] != 3 || rec.cols[len(rec.cols)-2] != 1 {
		t.Fatalf("product widths %v", rec.cols)
	}
	total := 0
	for _, c := range rec.cols {
		total += c
	}
	if total != sv.State().Work.OperatorProducts {
		t.Fatalf("Work.OperatorProducts %d, operator saw %d", sv.State().Work.OperatorProducts, total)
	}
}

type noiseOp struct {
	Operator
	s2 float64
}

func (o noiseOp) NoiseVariance() float64 { return o.s2 }

type recordingOp struct {
	Operator
	cols []int
}

func (r *recordingOp) MulTo(dst, v *mat.Dense) {
	_, c := v.Dims()
	r.cols = append(r.cols, c)
	r.Operator.MulTo(dst, v)
}

func TestPreconditionerFewerIterations(t *testing.T) {
	x := synthX(300, 2, 61)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.05), rhs(x, 3, 62))
	plain, err := Solve(context.Background(), sys.op, CG{}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	pre, err := Solve(context.Background(), sys.op, CG{PrecondRank: 30, PrecondNoise: 0.05 * 0.05}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CG %d iterations, rank-30 preconditioned %d", plain.State().Iteration, pre.State().Iteration)
	// PrecondNoise 0 takes σ² from an operator that reports it: same bits.
	auto, err := Solve(context.Background(), noiseOp{sys.op, 0.05 * 0.05}, CG{PrecondRank: 30}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !floatbits.Equal(auto.State().V, pre.State().V) {
		t.Fatal("NoiseVariancer path differs from explicit PrecondNoise")
	}
	if !pre.Converged() || pre.State().Iteration >= plain.State().Iteration {
		t.Fatalf("preconditioned CG: converged %v, %d iterations vs %d", pre.Converged(), pre.State().Iteration, plain.State().Iteration)
	}
}

// The Woodbury preconditioner applies (LLᵀ + D)⁻¹ exactly, and with the
// diagonal correction P reproduces H's diagonal; so it does when its build
// and application are cut into many tiles and blocks, to selected columns.
func TestPivCholWoodbury(t *testing.T) {
	x := synthX(60, 2, 63)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.3), rhs(x, 3, 64))
	for _, tiles := range [][2]int{{precondTile, precondBlock}, {16, 4}} {
		defer setPrecondTiles(tiles[0], tiles[1])()
		for _, diag := range []bool{false, true} {
			var w Work
			pc, err := newPivChol(sys.op, 10, false, 0.09, diag, &w)
			if err != nil {
				t.Fatal(err)
			}
			if w.RowEvaluations != 10 {
				t.Fatalf("RowEvaluations %d, want 10", w.RowEvaluations)
			}
			l := mat.NewDense(60, pc.k, nil) // L = D·W
			for i := 0; i < 60; i++ {
				for j := 0; j < pc.k; j++ {
					l.Set(i, j, pc.w[i*pc.k+j]/pc.dinv[i])
				}
			}
			var p mat.Dense
			p.Mul(l, l.T())
			for i := 0; i < 60; i++ {
				if diag {
					// D = σ²I + diag(K − LLᵀ), so P_ii = H_ii.
					p.Set(i, i, sys.h.At(i, i))
				} else {
					p.Set(i, i, p.At(i, i)+0.09)
				}
			}
			sp := HostSpace(sys.op)
			pre, err := pc.upload(sp, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, cols := range [][]int{nil, {0, 2}} {
				z := mat.NewDense(60, 3, nil)
				rb := sp.(*hostSpace).wrap(mat.DenseCopyOf(sys.b).RawMatrix().Data, 60, 3)
				zb := sp.(*hostSpace).wrap(z.RawMatrix().Data, 60, 3)
				pre.apply(sp, zb, rb, cols)
				var back mat.Dense
				back.Mul(&p, z)
				for _, j := range []int{0, 1, 2} {
					if cols != nil && !slices.Contains(cols, j) {
						if c := mat.Col(nil, j, z); floats.Norm(c, 2) != 0 {
							t.Fatalf("tiles %v, diag %v: column %d is not selected but was written", tiles, diag, j)
						}
						continue
					}
					e := floats.Distance(mat.Col(nil, j, &back), mat.Col(nil, j, sys.b), 2) / floats.Norm(mat.Col(nil, j, sys.b), 2)
					if e > 1e-10 {
						t.Fatalf("tiles %v, diag %v, columns %v: P·(P⁻¹b) − b in column %d relative %g", tiles, diag, cols, j, e)
					}
				}
			}
			// LLᵀ ≤ K on the diagonal (a pivoted Cholesky never overshoots).
			var llt mat.Dense
			llt.Mul(l, l.T())
			for i := 0; i < 60; i++ {
				if llt.At(i, i) > sys.h.At(i, i)-0.09+1e-12 {
					t.Fatalf("(LLᵀ)_%d%d = %g exceeds K_ii = %g", i, i, llt.At(i, i), sys.h.At(i, i)-0.09)
				}
			}
		}
	}
}

// As σ² → 0 the preconditioner's diagonal keeps precondJitter·tr(K)
// (P = LLᵀ + σ_p²I, σ_p² = max(σ², 10⁻⁹·tr K)), and its Woodbury form then
// still applies P⁻¹ to 10⁻⁶ (P·(P⁻¹b) = b): with σ² = 10⁻¹⁴ on a smooth
// kernel of 200 points the small system's condition would be 10¹⁶ without
// it. Preconditioned CG on H = K + 10⁻⁸I (K numerically of low rank) then
// converges to the exact solution.
func TestPivCholJitter(t *testing.T) {
	const n = 200
	x := synthX(n, 2, 67)
	k := hyper(2, 2, 1, 1e-7)
	sys := newKernelSystem(t, x, k, rhs(x, 2, 68))
	trace := 0.0
	for i := 0; i < n; i++ {
		trace += sys.h.At(i, i) - 1e-14
	}
	var w Work
	pc, err := newPivChol(sys.op, 40, false, 1e-14, false, &w)
	if err != nil {
		t.Fatal(err)
	}
	sp2 := precondJitter * trace
	for i, d := range pc.dinv {
		if d != 1/sp2 {
			t.Fatalf("D⁻¹[%d] = %g, want 1/(10⁻⁹·tr K) = %g", i, d, 1/sp2)
		}
	}
	// P = LLᵀ + σ_p²I from the factor, L = D·W.
	l := mat.NewDense(n, pc.k, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < pc.k; j++ {
			l.Set(i, j, pc.w[i*pc.k+j]*sp2)
		}
	}
	var p mat.Dense
	p.Mul(l, l.T())
	for i := 0; i < n; i++ {
		p.Set(i, i, p.At(i, i)+sp2)
	}
	sp := HostSpace(sys.op)
	pre, err := pc.upload(sp, 2)
	if err != nil {
		t.Fatal(err)
	}
	z := mat.NewDense(n, 2, nil)
	pre.apply(sp, sp.(*hostSpace).wrap(z.RawMatrix().Data, n, 2), sp.(*hostSpace).wrap(mat.DenseCopyOf(sys.b).RawMatrix().Data, n, 2), nil)
	var back mat.Dense
	back.Mul(&p, z)
	for j := 0; j < 2; j++ {
		if e := floats.Distance(mat.Col(nil, j, &back), mat.Col(nil, j, sys.b), 2) / floats.Norm(mat.Col(nil, j, sys.b), 2); e > 1e-6 {
			t.Errorf("column %d: P·(P⁻¹b) − b relative %g", j, e)
		}
	}

	k.Hyper.Noise = 1e-4 // σ² = 10⁻⁸
	tiny := newKernelSystem(t, x, k, rhs(x, 2, 68))
	sv, err := Solve(context.Background(), tiny.op, CG{PrecondRank: PrecondRankAuto, PrecondNoise: 1e-8}, tiny.b, nil, Settings{RelTolMean: 1e-6, RelTolProbes: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	rel := trueRel(tiny.h, sv.Solution(), tiny.b)
	t.Logf("σ² = 10⁻⁸: rank %d, %d iterations, true residuals %.2g", sv.State().CG.PrecondRank, sv.State().Iteration, rel)
	if !sv.Converged() || rel[0] > 1e-6 || rel[1] > 1e-6 {
		t.Errorf("σ² = 10⁻⁸: converged %v, true residuals %v", sv.Converged(), rel)
	}
}

// setPrecondTiles sets the preconditioner's tile and block sizes and
// returns a function that restores them.
func setPrecondTiles(tile, block int) func() {
	t, b := precondTile, precondBlock
	precondTile, precondBlock = tile, block
	return func() { precondTile, precondBlock = t, b }
}

// The tiled build and application of the preconditioner give the same
// bits on any number of cores, and pick the pivots of one serial scan.
func TestPivCholTilesDeterministic(t *testing.T) {
	n := 70
	x := synthX(n, 2, 65)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.3), rhs(x, 3, 66))
	run := func(procs int) ([]float64, []float64, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var w Work
		pc, err := newPivChol(sys.op, 20, false, 0.09, false, &w)
		if err != nil {
			t.Fatal(err)
		}
		sp := HostSpace(sys.op)
		pre, err := pc.upload(sp, 3)
		if err != nil {
			t.Fatal(err)
		}
		z := make([]float64, n*3)
		pre.apply(sp, sp.(*hostSpace).wrap(z, n, 3), sp.(*hostSpace).wrap(mat.DenseCopyOf(sys.b).RawMatrix().Data, n, 3), nil)
		return pc.w, pc.c, z
	}
	serialW, serialC, serialZ := run(1) // one tile, one block: the serial build
	defer setPrecondTiles(8, 6)()
	w1, c1, z1 := run(1)
	for _, procs := range []int{2, 5} {
		w, c, z := run(procs)
		if !floatbits.Equal(w, w1) || !floatbits.Equal(c, c1) || !floatbits.Equal(z, z1) {
			t.Fatalf("GOMAXPROCS %d: the tiled preconditioner's bits differ from one core's", procs)
		}
	}
	// Against the serial build: the same pivots (W's zero pattern) and
	// values up to rounding in the tiles' order of summation.
	for _, c := range []struct {
		name      string
		got, want []float64
	}{{"W", w1, serialW}, {"C", c1, serialC}, {"P⁻¹b", z1, serialZ}} {
		for i := range c.want {
			if (c.got[i] == 0) != (c.want[i] == 0) || math.Abs(c.got[i]-c.want[i]) > 1e-12*(1+math.Abs(c.want[i])) {
				t.Fatalf("%s[%d] = %v tiled, %v serial", c.name, i, c.got[i], c.want[i])
			}
		}
	}
}

func TestNotPositiveDefinite(t *testing.T) {
	n := 20
	h := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		h.SetSym(i, i, 1)
		if i+1 < n {
			h.SetSym(i, i+1, 0.9) // indefinite: eigenvalues 1 + 1.8cos(kπ/(n+1))
		}
	}
	dense, _ := NewDenseOperator(h)
	b := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		b.Set(i, 0, float64(i%3)-1)
		b.Set(i, 1, math.Sin(float64(i)))
	}
	for _, m := range []Method{CG{}, AP{BlockSize: n}, SGD{BatchSize: n, LearningRate: 1}, Cholesky{}} {
		for _, sp := range spaceKinds {
			t.Run(m.Name()+"/"+sp.name, func(t *testing.T) {
				_, err := Solve(context.Background(), sp.wrap(dense), m, b, nil, Settings{RelTolMean: 1e-10, RelTolProbes: 1e-10})
				want := ErrNotPositiveDefinite
				if m.Name() == "sgd" {
					want = ErrDiverged
				}
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
				if !strings.Contains(err.Error(), "noise") && !strings.Contains(err.Error(), "LearningRate") {
					t.Fatalf("error %q gives no advice", err)
				}
			})
		}
	}
}

type nanInjectOp struct{ Operator }

func (o nanInjectOp) MulTo(dst, v *mat.Dense) { o.Operator.MulTo(dst, v); dst.Set(1, 0, math.NaN()) }
func (o nanInjectOp) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	o.Operator.RowsMulTo(dst, idx, v)
	dst.Set(0, 0, math.NaN())
}
func (o nanInjectOp) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	o.Operator.ColsMulTo(dst, idx, d)
	dst.Set(0, 0, math.NaN())
}
func (o nanInjectOp) BlockTo(dst *mat.SymDense, idx []int) {
	o.Operator.BlockTo(dst, idx)
	dst.SetSym(0, 0, math.NaN())
}

func TestNaNOperator(t *testing.T) {
	x := synthX(50, 2, 71)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 1), rhs(x, 2, 72))
	for _, sp := range spaceKinds {
		op := sp.wrap(nanInjectOp{sys.op})
		for _, m := range []Method{CG{}, AP{BlockSize: 10}, SGD{BatchSize: 10}, Cholesky{}} {
			t.Run(m.Name()+"/"+sp.name, func(t *testing.T) {
				sv, err := Solve(context.Background(), op, m, sys.b, nil, Settings{})
				if !errors.Is(err, ErrNotFinite) {
					t.Fatalf("error %v, want ErrNotFinite", err)
				}
				if sv == nil || !sv.Done() || sv.Converged() {
					t.Fatal("a failed solver must be Done and not Converged")
				}
				if err2 := sv.Iterate(); !errors.Is(err2, ErrNotFinite) {
					t.Fatalf("Iterate after failure: %v", err2)
				}
				// State is still finite and serialisable.
				if _, err := json.Marshal(sv.State()); err != nil {
					t.Fatal(err)
				}
			})
		}
		// A warm start's initial product already shows the NaN.
		if _, err := (CG{}).Start(op, sys.b, sys.b, Settings{}); !errors.Is(err, ErrNotFinite) {
			t.Fatalf("%s: Start with V0 on a NaN operator: %v", sp.name, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	x := synthX(30, 2, 81)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 1), rhs(x, 2, 82))
	nanB := mat.DenseCopyOf(sys.b)
	nanB.Set(4, 1, math.NaN())
	infV := mat.NewDense(30, 2, nil)
	infV.Set(0, 0, math.Inf(1))
	cases := []struct {
		name   string
		op     Operator
		b, v0  *mat.Dense
		s      Settings
		method Method
		want   error
	}{
		{"nil operator", nil, sys.b, nil, Settings{}, nil, ErrShape},
		{"nil B", sys.op, nil, nil, Settings{}, nil, ErrShape},
		{"empty B", sys.op, &mat.Dense{}, nil, Settings{}, nil, ErrShape},
		{"B rows", sys.op, mat.NewDense(29, 2, nil), nil, Settings{}, nil, ErrShape},
		{"V0 shape", sys.op, sys.b, mat.NewDense(30, 3, nil), Settings{}, nil, ErrShape},
		{"NaN in B", sys.op, nanB, nil, Settings{}, nil, ErrNotFinite},
		{"Inf in V0", sys.op, sys.b, infV, Settings{}, nil, ErrNotFinite},
		{"negative tolerance", sys.op, sys.b, nil, Settings{RelTolMean: -1}, nil, ErrSettings},
		{"NaN tolerance", sys.op, sys.b, nil, Settings{RelTolProbes: math.NaN()}, nil, ErrSettings},
		{"negative max iterations", sys.op, sys.b, nil, Settings{MaxIterations: -3}, nil, ErrSettings},
		{"AP block size", sys.op, sys.b, nil, Settings{}, AP{BlockSize: -1}, ErrSettings},
		{"SGD batch", sys.op, sys.b, nil, Settings{}, SGD{BatchSize: -5}, ErrSettings},
		{"SGD learning rate", sys.op, sys.b, nil, Settings{}, SGD{LearningRate: math.Inf(1)}, ErrSettings},
		{"SGD momentum", sys.op, sys.b, nil, Settings{}, SGD{Momentum: 1}, ErrSettings},
		{"CG rank", sys.op, sys.b, nil, Settings{}, CG{PrecondRank: -2}, ErrSettings},
		{"CG precond noise", sys.op, sys.b, nil, Settings{}, CG{PrecondRank: 5}, ErrSettings},
		{"CG precond noise NaN", sys.op, sys.b, nil, Settings{}, CG{PrecondRank: 5, PrecondNoise: math.NaN()}, ErrSettings},
		{"CG precond noise too big", sys.op, sys.b, nil, Settings{}, CG{PrecondRank: 5, PrecondNoise: 100}, ErrSettings},
	}
	for _, c := range cases {
		methods := []Method{CG{}, AP{}, SGD{}, Cholesky{}}
		if c.method != nil {
			methods = []Method{c.method}
		}
		for _, m := range methods {
			t.Run(c.name+"/"+m.Name(), func(t *testing.T) {
				_, err := m.Start(c.op, c.b, c.v0, c.s)
				if !errors.Is(err, c.want) {
					t.Fatalf("error %v, want %v", err, c.want)
				}
			})
		}
	}
	if _, err := (Cholesky{}).Start(bigOp{}, mat.NewDense(1, 1, []float64{1}), nil, Settings{}); !errors.Is(err, ErrSettings) {
		t.Fatalf("Cholesky over CholeskyMaxN: %v", err)
	}
	if _, err := NewDenseOperator(nil); !errors.Is(err, ErrShape) {
		t.Fatalf("NewDenseOperator(nil): %v", err)
	}
	bad := mat.NewSymDense(2, []float64{1, math.NaN(), math.NaN(), 1})
	if _, err := NewDenseOperator(bad); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("NewDenseOperator(NaN): %v", err)
	}
}

type bigOp struct{ Operator }

func (bigOp) Size() int { return CholeskyMaxN + 1 }

func TestResumeValidation(t *testing.T) {
	x := synthX(40, 2, 91)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 1), rhs(x, 3, 92))
	sv, err := AP{BlockSize: 10}.Start(sys.op, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sv.Iterate(); err != nil {
		t.Fatal(err)
	}
	st := sv.State()
	otherB := mat.DenseCopyOf(sys.b)
	otherB.Set(0, 0, 42)
	x2 := synthX(41, 2, 91)
	op2, _ := NewDenseOperator(gramH(x2, hyper(2, 1, 1, 1)))
	cases := []struct {
		name string
		op   Operator
		m    Method
		b    *mat.Dense
		st   *State
	}{
		{"wrong method", sys.op, CG{}, sys.b, st.Clone()},
		{"wrong block size", sys.op, AP{BlockSize: 11}, sys.b, st.Clone()},
		{"other B", sys.op, AP{BlockSize: 10}, otherB, st.Clone()},
		{"fewer columns", sys.op, AP{BlockSize: 10}, sys.b.Slice(0, 40, 0, 2).(*mat.Dense), st.Clone()},
		{"other n", op2, AP{BlockSize: 10}, mat.NewDense(41, 3, nil), st.Clone()},
		{"nil state", sys.op, AP{BlockSize: 10}, sys.b, nil},
		{"nil method", sys.op, nil, sys.b, st.Clone()},
		{"truncated V", sys.op, AP{BlockSize: 10}, sys.b, func() *State { c := st.Clone(); c.V = c.V[:5]; return c }()},
		{"no AP part", sys.op, AP{BlockSize: 10}, sys.b, func() *State { c := st.Clone(); c.AP = nil; return c }()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Resume(c.op, c.m, c.b, c.st); err == nil {
				t.Fatal("Resume accepted a mismatched state")
			}
		})
	}
	if _, err := Resume(sys.op, AP{BlockSize: 10}, sys.b, st.Clone()); err != nil {
		t.Fatalf("valid resume: %v", err)
	}
}

func TestParseMethod(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Method
	}{{"cg", CG{}}, {"AP", AP{}}, {" sgd ", SGD{}}, {"cholesky", Cholesky{}}} {
		m, err := ParseMethod(c.in)
		if err != nil || m != c.want {
			t.Errorf("ParseMethod(%q) = %v, %v", c.in, m, err)
		}
	}
	_, err := ParseMethod("gmres")
	if err == nil || !strings.Contains(err.Error(), "cg, ap, sgd, cholesky") {
		t.Fatalf("unknown method error %v does not list the methods", err)
	}
}

// Results do not depend on GOMAXPROCS, with the dense operator (gonum's
// BLAS partitions its work deterministically) and with the parallel kernel
// operator of gpnb/kernel; the solvers' own loops are serial.
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	x := synthX(300, 3, 101)
	k := hyper(3, 1, 1, 0.3)
	sys := newKernelSystem(t, x, k, rhs(x, 4, 102))
	dense := func() Operator { return sys.op }
	matrixFree := func() Operator {
		// Built after GOMAXPROCS is set, in case it sizes its workers then.
		kop, err := kernel.NewOperator(x, k, kernel.Options{Mode: kernel.ModeMatrixFree})
		if err != nil {
			t.Fatal(err)
		}
		return kop
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, mk := range []func() Operator{dense, matrixFree} {
		for _, m := range []Method{CG{PrecondRank: 10, PrecondNoise: 0.09}, AP{BlockSize: 100}, SGD{BatchSize: 100, Seed: 4}, Cholesky{}} {
			var got [][]float64
			var op Operator
			for _, p := range []int{1, 2} {
				runtime.GOMAXPROCS(p)
				op = mk()
				sv, err := Solve(context.Background(), op, m, sys.b, nil, Settings{})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, sv.State().V)
			}
			if !floatbits.Equal(got[0], got[1]) {
				t.Errorf("%T %s: GOMAXPROCS 1 and 2 give different bits", op, m.Name())
			}
		}
	}
}

func TestDenseOperatorMatchesMatrix(t *testing.T) {
	x := synthX(40, 2, 111)
	h := gramH(x, hyper(2, 0.8, 1.2, 0.4))
	op, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	v := rhs(x, 3, 112)
	idx := []int{5, 0, 39, 17}
	var want mat.Dense
	want.Mul(h, v)
	got := mat.NewDense(40, 3, nil)
	op.MulTo(got, v)
	if !mat.EqualApprox(got, &want, 1e-12) {
		t.Fatal("MulTo")
	}
	rows := mat.NewDense(4, 3, nil)
	op.RowsMulTo(rows, idx, v)
	for r, i := range idx {
		for j := 0; j < 3; j++ {
			if math.Abs(rows.At(r, j)-want.At(i, j)) > 1e-12 {
				t.Fatal("RowsMulTo")
			}
		}
	}
	d := mat.NewDense(4, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	cols := mat.NewDense(40, 3, nil)
	op.ColsMulTo(cols, idx, d)
	for i := 0; i < 40; i++ {
		for j := 0; j < 3; j++ {
			s := 0.0
			for r, c := range idx {
				s += h.At(i, c) * d.At(r, j)
			}
			if math.Abs(cols.At(i, j)-s) > 1e-12 {
				t.Fatal("ColsMulTo")
			}
		}
	}
	blk := mat.NewSymDense(4, nil)
	op.BlockTo(blk, idx)
	diag := make([]float64, 40)
	op.DiagTo(diag)
	for a, i := range idx {
		for b, j := range idx {
			if blk.At(a, b) != h.At(i, j) {
				t.Fatal("BlockTo")
			}
		}
		if diag[i] != h.At(i, i) {
			t.Fatal("DiagTo")
		}
	}
}

func TestNegativeDiagonal(t *testing.T) {
	n := 12
	h := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		h.SetSym(i, i, 2)
	}
	h.SetSym(5, 5, -1)
	op, _ := NewDenseOperator(h)
	b := mat.NewDense(n, 1, nil)
	for i := 0; i < n; i++ {
		b.Set(i, 0, 1)
	}
	for _, m := range []Method{AP{BlockSize: 4}, SGD{BatchSize: n}, Cholesky{}} {
		if _, err := Solve(context.Background(), op, m, b, nil, Settings{}); !errors.Is(err, ErrNotPositiveDefinite) {
			t.Errorf("%s: error %v, want ErrNotPositiveDefinite", m.Name(), err)
		}
	}
}

// With short length scales H is nearly diagonal, a small batch revisits a
// coordinate rarely, and momentum would overshoot without the (1−ρ) factor
// of SGD's step: the default learning rate must still converge.
func TestSGDShortLengthscaleStable(t *testing.T) {
	x := synthX(600, 4, 121)
	sys := newKernelSystem(t, x, hyper(4, 0.2, 1, 1), rhs(x, 3, 122))
	sv, err := Solve(context.Background(), sys.op, SGD{BatchSize: 30, Seed: 5}, sys.b, nil, Settings{MaxIterations: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if !sv.Converged() {
		t.Fatalf("not converged after %d iterations", sv.State().Iteration)
	}
	t.Logf("%d iterations", sv.State().Iteration)
	// The unnormalised step η = 1/λ̂_I (no (1−ρ) factor) diverges here:
	// emulate it with LearningRate = 1/(1−ρ) = 10 capped by the 1/λ̂ term.
	_, err = Solve(context.Background(), sys.op, SGD{BatchSize: 30, Seed: 5, LearningRate: 10}, sys.b, nil, Settings{MaxIterations: 5000})
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("a 10× step should diverge here, got %v", err)
	}
}

// The kernel operator reports its σ², so CG{PrecondRank: k} needs no
// PrecondNoise with it, and the result equals the explicit setting.
func TestKernelOperatorNoiseVariance(t *testing.T) {
	x := synthX(120, 2, 131)
	k := hyper(2, 1, 1, 0.2)
	kop, err := kernel.NewOperator(x, k, kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var nv NoiseVariancer = kop
	if got := nv.NoiseVariance(); math.Abs(got-0.04) > 1e-15 {
		t.Fatalf("NoiseVariance %g, want 0.04", got)
	}
	b := rhs(x, 2, 132)
	auto, err := Solve(context.Background(), kop, CG{PrecondRank: 10}, b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s2 := k.Hyper.Noise * k.Hyper.Noise // at run time (the constant 0.2*0.2 is rounded differently)
	explicit, err := Solve(context.Background(), kop, CG{PrecondRank: 10, PrecondNoise: s2}, b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !auto.Converged() || !floatbits.Equal(auto.State().V, explicit.State().V) {
		t.Fatal("preconditioner with the operator's σ² differs from the explicit one")
	}
}

// Work counts what the operator was asked to do.
func TestWorkCounts(t *testing.T) {
	x := synthX(230, 2, 141)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.3), rhs(x, 3, 142))
	ap, err := Solve(context.Background(), sys.op, AP{BlockSize: 50}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	st := ap.State()
	rows, blocks := 0, 0
	for b, p := range st.AP.Picks {
		rows += p * (st.AP.Starts[b+1] - st.AP.Starts[b])
		if p > 0 {
			blocks++
		}
	}
	// One product of the 3 columns confirms the convergence with b − Hv.
	if st.Work.RowEvaluations != rows || st.Work.BlockFactorisations != blocks || st.Work.OperatorProducts != 3 {
		t.Fatalf("AP work %+v; want %d rows, %d factorisations, 3 column-products", st.Work, rows, blocks)
	}
	if len(st.AP.Starts) != 6 || st.AP.Starts[5] != 230 || st.AP.Starts[4] != 200 {
		t.Fatalf("AP blocks %v", st.AP.Starts)
	}
	sgd, err := Solve(context.Background(), sys.op, SGD{BatchSize: 40, Seed: 2}, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	st = sgd.State()
	if st.Work.RowEvaluations != 40*st.Iteration || st.Work.OperatorProducts != 3*st.SGD.Verifications || st.Work.BlockEntries != 1600*st.Iteration {
		t.Fatalf("SGD work %+v after %d iterations, %d verifications", st.Work, st.Iteration, st.SGD.Verifications)
	}
}

// RawLearningRate is the paper's parameterisation: from V = 0 (g = −B, no
// velocity yet) one iteration moves exactly the batch's rows to
// (raw/|I|)·B[I,:] and leaves the others at 0; every later iteration is
// heavy-ball with the fixed step raw/|I|, checked here against the update
// recomputed from the previous iterate, and no H[I,I] block is read.
func TestSGDRawLearningRate(t *testing.T) {
	x := synthX(150, 3, 21)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.5), rhs(x, 2, 22))
	const bs, raw, rho = 30, 3.0, 0.9
	sv, err := SGD{BatchSize: bs, RawLearningRate: raw, Seed: 4}.Start(sys.op, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	s := sv.(*sgdSolver)
	eta := raw / bs
	n, m := sys.b.Dims()
	vel := mat.NewDense(n, m, nil)
	for it := 0; it < 25; it++ {
		vBefore := mat.DenseCopyOf(sv.Solution())
		if err := sv.Iterate(); err != nil {
			t.Fatal(err)
		}
		if s.st.SGD.Verifications > 0 || s.st.Iteration != it+1 {
			break
		}
		// vel ← ρ·vel; vel[I] += η·(B − H·V_before)[I]; V = V_before + vel.
		var hv mat.Dense
		hv.Mul(sys.h, vBefore)
		vel.Scale(rho, vel)
		for _, i := range s.idx {
			for j := 0; j < m; j++ {
				vel.Set(i, j, vel.At(i, j)+eta*(sys.b.At(i, j)-hv.At(i, j)))
			}
		}
		var want mat.Dense
		want.Add(vBefore, vel)
		if it == 0 {
			for i := 0; i < n; i++ {
				for j := 0; j < m; j++ {
					if w := want.At(i, j); w != 0 && math.Abs(w-eta*sys.b.At(i, j)) > 1e-15*math.Abs(w) {
						t.Fatalf("first iteration: V[%d,%d] = %g, want (raw/|I|)·B = %g", i, j, w, eta*sys.b.At(i, j))
					}
				}
			}
		}
		if !mat.EqualApprox(sv.Solution(), &want, 1e-10) {
			t.Fatalf("iteration %d: V differs from the heavy-ball update with step raw/|I| = %g", it+1, eta)
		}
	}
	if got := s.st.Work.BlockEntries; got != 0 {
		t.Errorf("raw learning rate read %d entries of H[I,I]; it needs none", got)
	}
	if err := Run(context.Background(), sv); err != nil {
		t.Fatal(err)
	}
	if !sv.Converged() {
		t.Fatal("SGD with a raw learning rate did not converge")
	}
	// Converged means true residuals under the tolerances (0.01, 0.1).
	for j, r := range trueRel(sys.h, sv.Solution(), sys.b) {
		if r >= sv.State().Settings.tol(j) {
			t.Errorf("column %d: true relative residual %g above its tolerance", j, r)
		}
	}
}

// A raw rate far past the heavy-ball bound diverges with ErrDiverged naming
// RawLearningRate; bad or conflicting settings are ErrSettings.
func TestSGDRawLearningRateErrors(t *testing.T) {
	x := synthX(120, 2, 31)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.5), rhs(x, 1, 32))
	_, err := Solve(context.Background(), sys.op, SGD{BatchSize: 40, RawLearningRate: 4000, Seed: 1}, sys.b, nil, Settings{MaxIterations: 5000})
	if !errors.Is(err, ErrDiverged) || !strings.Contains(err.Error(), "RawLearningRate") {
		t.Errorf("raw rate 4000: err = %v, want ErrDiverged naming RawLearningRate", err)
	}
	for _, m := range []SGD{
		{RawLearningRate: -1},
		{RawLearningRate: math.NaN()},
		{RawLearningRate: math.Inf(1)},
		{RawLearningRate: 90, LearningRate: 2},
	} {
		if _, err := m.Start(sys.op, sys.b, nil, Settings{}); !errors.Is(err, ErrSettings) {
			t.Errorf("%+v: err = %v, want ErrSettings", m, err)
		}
	}
}

// TestDefaultMaxIterations: the cap DefaultMaxIterations reports is the one
// each method's Start fills in for Settings.MaxIterations = 0.
func TestDefaultMaxIterations(t *testing.T) {
	x := synthX(30, 2, 1)
	sys := newKernelSystem(t, x, hyper(2, 0.7, 1, 0.5), rhs(x, 3, 2))
	for _, m := range []Method{CG{}, AP{BlockSize: 10}, SGD{BatchSize: 10}, Cholesky{}} {
		sv, err := m.Start(sys.op, sys.b, nil, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		got, ok := DefaultMaxIterations(m.Name())
		if want := sv.State().Settings.MaxIterations; !ok || got != want {
			t.Errorf("%s: DefaultMaxIterations = %d, %v; Start filled in %d", m.Name(), got, ok, want)
		}
	}
	if n, ok := DefaultMaxIterations("gmres"); ok || n != 0 {
		t.Errorf("unknown method: %d, %v", n, ok)
	}
}

// TestResolve: the resolved Settings are the ones Start fills in, the
// resolved AP block is the one Start uses, a resolved method runs
// bit-for-bit like the original, resolving twice changes nothing, and
// invalid fields give Start's ErrSettings.
func TestResolve(t *testing.T) {
	const n = 30
	x := synthX(n, 2, 1)
	sys := newKernelSystem(t, x, hyper(2, 0.7, 1, 0.5), rhs(x, 3, 2))
	settings := []Settings{{}, {RelTolMean: 1e-3}, {RelTolProbes: 0.5, MaxIterations: 7}}
	for _, m := range []Method{CG{}, AP{BlockSize: 10}, AP{}, SGD{BatchSize: 10, Seed: 3}, SGD{Momentum: -1, Seed: 3}, SGD{RawLearningRate: 2, BatchSize: 10, Seed: 3}, Cholesky{}} {
		for _, s := range settings {
			got, err := s.Resolve(m)
			if err != nil {
				t.Fatalf("%s %+v: %v", m.Name(), s, err)
			}
			sv, err := m.Start(sys.op, sys.b, nil, s)
			if err != nil {
				t.Fatal(err)
			}
			if want := sv.State().Settings; got != want {
				t.Errorf("%s: Resolve(%+v) = %+v; Start filled in %+v", m.Name(), s, got, want)
			}
			if again, _ := got.Resolve(m); again != got {
				t.Errorf("%s: resolving %+v again gave %+v", m.Name(), got, again)
			}
		}
		resolved := m
		switch v := m.(type) {
		case AP:
			r, err := v.Resolve(n)
			if err != nil {
				t.Fatal(err)
			}
			sv, _ := v.Start(sys.op, sys.b, nil, Settings{})
			if want := sv.State().AP.BlockSize; r.BlockSize != want {
				t.Errorf("AP%+v: resolved block %d, Start uses %d", v, r.BlockSize, want)
			}
			if r2, _ := r.Resolve(n); r2 != r {
				t.Errorf("AP: resolving %+v again gave %+v", r, r2)
			}
			resolved = r
		case SGD:
			r, err := v.Resolve(n)
			if err != nil {
				t.Fatal(err)
			}
			if r.BatchSize < 1 || r.BatchSize > n || r.Momentum == 0 || (r.LearningRate > 0) == (r.RawLearningRate > 0) {
				t.Errorf("SGD%+v resolved to %+v: a field is still implicit", v, r)
			}
			if r2, _ := r.Resolve(n); r2 != r {
				t.Errorf("SGD: resolving %+v again gave %+v", r, r2)
			}
			resolved = r
		}
		s := Settings{MaxIterations: 40}
		a, errA := Solve(context.Background(), sys.op, m, sys.b, nil, s)
		b, errB := Solve(context.Background(), sys.op, resolved, sys.b, nil, s)
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v / %v", m.Name(), errA, errB)
		}
		if !mat.Equal(a.Solution(), b.Solution()) || a.State().Iteration != b.State().Iteration {
			t.Errorf("%s: resolved method %+v ran differently from %+v", m.Name(), resolved, m)
		}
	}
	if _, err := (AP{BlockSize: -1}).Resolve(n); !errors.Is(err, ErrSettings) {
		t.Errorf("AP block -1: err = %v, want ErrSettings", err)
	}
	for _, m := range []SGD{{BatchSize: -2}, {Momentum: 1}, {RawLearningRate: 90, LearningRate: 2}, {LearningRate: math.NaN()}} {
		if _, err := m.Resolve(n); !errors.Is(err, ErrSettings) {
			t.Errorf("SGD%+v: err = %v, want ErrSettings", m, err)
		}
	}
	if _, err := (Settings{RelTolMean: -1}).Resolve(CG{}); !errors.Is(err, ErrSettings) {
		t.Errorf("negative tolerance: err = %v, want ErrSettings", err)
	}
	if _, err := (Settings{}).Resolve(nil); !errors.Is(err, ErrSettings) {
		t.Errorf("nil method: err = %v, want ErrSettings", err)
	}
}

// PrecondRankAuto stops the pivoted Cholesky factorisation at the first
// rank whose largest remaining diagonal entry of K − LLᵀ is below σ²/10,
// else at AutoRankCap(n); the solve reports the rank it used. K = UUᵀ + εI
// with U of rank 3: after 3 pivots the remaining diagonal is about ε, so
// a small ε stops there and a large one goes on to the cap.
func TestPrecondAutoRank(t *testing.T) {
	for _, c := range []struct{ n, want int }{{10, 10}, {50, 16}, {100, 20}, {2000, 400}, {4000, 512}, {13500, 512}, {1 << 20, 512}} {
		if got := AutoRankCap(c.n); got != c.want {
			t.Errorf("AutoRankCap(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	const n, noise = 200, 0.05
	rng := rand.New(rand.NewPCG(5, 8))
	u := mat.NewDense(n, 3, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			u.Set(i, j, rng.NormFloat64())
		}
	}
	b := rhs(synthX(n, 2, 9), 3, 10)
	for _, c := range []struct {
		eps  float64
		rank int
		want int
	}{
		{0.001, PrecondRankAuto, 3},             // ≈ ε ≤ σ²/10 after 3 pivots
		{0.02, PrecondRankAuto, AutoRankCap(n)}, // ≈ ε > σ²/10: the cap
		{0.02, 5, 5},
	} {
		h := mat.NewSymDense(n, nil)
		h.SymOuterK(1, u)
		for i := 0; i < n; i++ {
			h.SetSym(i, i, h.At(i, i)+c.eps+noise)
		}
		op, err := NewDenseOperator(h)
		if err != nil {
			t.Fatal(err)
		}
		sv, err := Solve(context.Background(), op, CG{PrecondRank: c.rank, PrecondNoise: noise}, b, nil, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if got := sv.State().CG.PrecondRank; got != c.want || !sv.Converged() {
			t.Errorf("ε = %g, PrecondRank %d: rank %d (converged %v), want %d", c.eps, c.rank, got, sv.Converged(), c.want)
		}
	}
}

// An operator without ColumnTo gives the preconditioner its columns by
// ColsMulTo: the same values, so the same bits.
func TestPrecondColumnFallback(t *testing.T) {
	x := synthX(150, 2, 12)
	sys := newKernelSystem(t, x, hyper(2, 0.7, 1, 0.1), rhs(x, 3, 13))
	m := CG{PrecondRank: 12, PrecondNoise: 0.01, PrecondDiagonal: true}
	direct, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var plain Operator = struct{ Operator }{sys.op} // hides ColumnTo
	if _, ok := plain.(ColumnOperator); ok {
		t.Fatal("the wrapper still has ColumnTo")
	}
	fallback, err := Solve(context.Background(), plain, m, sys.b, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if hashState(direct.State()) != hashState(fallback.State()) {
		t.Fatal("the preconditioner built from ColsMulTo differs from the one built from ColumnTo")
	}
}
