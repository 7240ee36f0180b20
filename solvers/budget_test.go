package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/floatbits"
)

// TestBudget: under Settings.Budget no solve spends more epochs than the
// budget, one more iteration would have, the stop is reported as
// BudgetSpent (Done, not Converged, no error), and the relative residuals
// reported (RelResiduals and the last trace row) are the true residuals
// ‖b − Hv‖/‖b‖, recomputed here with gonum's product of the dense H.
func TestBudget(t *testing.T) {
	x := synthX(200, 3, 71)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.05), rhs(x, 4, 72))
	tight := Settings{RelTolMean: 1e-12, RelTolProbes: 1e-12}
	for _, tc := range []struct {
		m      Method
		budget float64
		iters  int   // iterations the budget allows
		rows   []int // rows of H an iteration may read
	}{
		{CG{}, 3, 3, []int{200}},
		{CG{}, 2.5, 2, []int{200}},
		{AP{BlockSize: 30}, 2, -1, []int{30, 20}}, // 6 blocks of 30 and one of 20
		{SGD{BatchSize: 40, Seed: 5}, 2, 10, []int{40}},
		{SGD{BatchSize: 40, Seed: 5}, 1.1, 5, []int{40}},
	} {
		for _, warm := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-%g-warm=%v", tc.m.Name(), tc.budget, warm), func(t *testing.T) {
				s := tight
				s.Budget = tc.budget
				var v0 *mat.Dense
				if warm {
					v0 = mat.NewDense(200, 4, nil)
					v0.Scale(0.9, sys.vstar)
				}
				sv, err := Solve(context.Background(), sys.op, tc.m, sys.b, v0, s)
				if err != nil {
					t.Fatalf("a budget stop is not an error: %v", err)
				}
				st := sv.State()
				if !sv.Done() || sv.Converged() || !st.BudgetSpent {
					t.Fatalf("Done %v Converged %v BudgetSpent %v: want true false true", sv.Done(), sv.Converged(), st.BudgetSpent)
				}
				if st.Epochs() > tc.budget {
					t.Errorf("spent %v epochs, over the budget %v", st.Epochs(), tc.budget)
				}
				if tc.iters >= 0 && st.Iteration != tc.iters {
					t.Errorf("%d iterations, want %d", st.Iteration, tc.iters)
				}
				largest := tc.rows[0]
				if st.Epochs()+float64(largest)/200 <= tc.budget {
					t.Errorf("stopped at %v epochs though an iteration of %d rows still fits the budget %v", st.Epochs(), largest, tc.budget)
				}
				if st.Iteration >= st.Settings.MaxIterations {
					t.Errorf("stopped at the iteration cap, not the budget")
				}
				want := trueRel(sys.h, sv.Solution(), sys.b)
				last := st.Trace[len(st.Trace)-1]
				for j, w := range want {
					if math.Abs(st.RelResiduals[j]-w) > 1e-9*w {
						t.Errorf("column %d: reported residual %.15g, true %.15g", j, st.RelResiduals[j], w)
					}
					if last[j] != st.RelResiduals[j] {
						t.Errorf("column %d: last trace row %v, RelResiduals %v", j, last[j], st.RelResiduals[j])
					}
				}
				// Iterate after a budget stop does nothing.
				before := st.Iteration
				if err := sv.Iterate(); err != nil || sv.State().Iteration != before {
					t.Errorf("Iterate after the budget stop: %v, iteration %d → %d", err, before, sv.State().Iteration)
				}
			})
		}
	}
}

// TestBudgetAccumulates: solves stopped by a budget and warm-started from
// each other keep reducing the residual (progress accumulates), and a
// budget that the solve does not need changes nothing.
func TestBudgetAccumulates(t *testing.T) {
	x := synthX(200, 3, 73)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.05), rhs(x, 3, 74))
	for _, m := range []Method{CG{}, AP{BlockSize: 50}, SGD{BatchSize: 50, Seed: 1}} {
		t.Run(m.Name(), func(t *testing.T) {
			s := Settings{RelTolMean: 1e-10, RelTolProbes: 1e-10, Budget: 2}
			var v0 *mat.Dense
			prev := math.Inf(1)
			for round := 0; round < 4; round++ {
				sv, err := Solve(context.Background(), sys.op, m, sys.b, v0, s)
				if err != nil {
					t.Fatal(err)
				}
				r := sv.State().RelResiduals[0]
				if !(r < prev) {
					t.Fatalf("round %d: residual %v did not fall below %v", round, r, prev)
				}
				prev, v0 = r, mat.DenseCopyOf(sv.Solution())
			}
			free, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{})
			if err != nil {
				t.Fatal(err)
			}
			roomy, err := Solve(context.Background(), sys.op, m, sys.b, nil, Settings{Budget: 1e6})
			if err != nil {
				t.Fatal(err)
			}
			a, b := free.State(), roomy.State()
			if a.Iteration != b.Iteration || !floatbits.Equal(a.V, b.V) || b.BudgetSpent || !b.Converged {
				t.Errorf("an unused budget changed the solve: %d vs %d iterations, spent %v", a.Iteration, b.Iteration, b.BudgetSpent)
			}
		})
	}
}

// TestBudgetResume: a solve paused mid-budget, serialised and resumed stops
// at the same iteration with the same bits as one run straight through.
func TestBudgetResume(t *testing.T) {
	x := synthX(200, 3, 75)
	sys := newKernelSystem(t, x, hyper(3, 1, 1, 0.05), rhs(x, 3, 76))
	for _, m := range []Method{CG{}, AP{BlockSize: 30}, SGD{BatchSize: 40, Seed: 2}} {
		for _, codec := range []string{"gob", "json"} {
			t.Run(m.Name()+"/"+codec, func(t *testing.T) {
				s := Settings{RelTolMean: 1e-12, RelTolProbes: 1e-12, Budget: 4}
				straight, err := Solve(context.Background(), sys.op, m, sys.b, nil, s)
				if err != nil {
					t.Fatal(err)
				}
				paused, err := m.Start(sys.op, sys.b, nil, s)
				if err != nil {
					t.Fatal(err)
				}
				for paused.State().Iteration < straight.State().Iteration/2 {
					if err := paused.Iterate(); err != nil {
						t.Fatal(err)
					}
				}
				resumed, err := Resume(sys.op, m, sys.b, roundTrip(t, paused.State(), codec))
				if err != nil {
					t.Fatal(err)
				}
				if err := Run(context.Background(), resumed); err != nil {
					t.Fatal(err)
				}
				a, b := straight.State(), resumed.State()
				if a.Iteration != b.Iteration || a.Rows != b.Rows || a.BudgetSpent != b.BudgetSpent || !b.BudgetSpent {
					t.Fatalf("iterations %d/%d rows %d/%d budget spent %v/%v", a.Iteration, b.Iteration, a.Rows, b.Rows, a.BudgetSpent, b.BudgetSpent)
				}
				if !floatbits.Equal(a.V, b.V) || !floatbits.Equal(a.RelResiduals, b.RelResiduals) {
					t.Fatal("V or residuals differ after resume")
				}
			})
		}
	}
}

// TestBudgetErrors: a negative or non-finite budget, and one below a single
// iteration's cost, are ErrSettings with advice; Cholesky ignores budgets.
func TestBudgetErrors(t *testing.T) {
	x := synthX(100, 2, 77)
	sys := newKernelSystem(t, x, hyper(2, 1, 1, 0.1), rhs(x, 2, 78))
	for _, b := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := (CG{}).Start(sys.op, sys.b, nil, Settings{Budget: b}); !errors.Is(err, ErrSettings) {
			t.Errorf("Budget %v: got %v, want ErrSettings", b, err)
		}
		if _, err := (Settings{Budget: b}).Resolve(CG{}); !errors.Is(err, ErrSettings) {
			t.Errorf("Resolve with Budget %v: got %v, want ErrSettings", b, err)
		}
	}
	for _, tc := range []struct {
		m      Method
		budget float64
	}{{CG{}, 0.5}, {AP{BlockSize: 50}, 0.4}, {SGD{BatchSize: 50}, 0.25}} {
		if _, err := tc.m.Start(sys.op, sys.b, nil, Settings{Budget: tc.budget}); !errors.Is(err, ErrSettings) {
			t.Errorf("%s with Budget %v below one iteration: got %v, want ErrSettings", tc.m.Name(), tc.budget, err)
		}
	}
	sv, err := Solve(context.Background(), sys.op, Cholesky{}, sys.b, nil, Settings{Budget: 0.01})
	if err != nil || !sv.Converged() || sv.State().BudgetSpent {
		t.Errorf("Cholesky with a budget: %v, converged %v", err, sv != nil && sv.Converged())
	}
}
