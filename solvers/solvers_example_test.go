package solvers_test

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/solvers"
)

// Solve a small batch H V = [b_0, b_1] with conjugate gradients, then warm
// start a second solve at a slightly different H from the first solution.
func Example() {
	h := mat.NewSymDense(3, []float64{
		4, 1, 0,
		1, 3, 1,
		0, 1, 2,
	})
	op, err := solvers.NewDenseOperator(h)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := mat.NewDense(3, 2, []float64{
		1, 0,
		2, 1,
		3, 0,
	})
	s := solvers.Settings{RelTolMean: 1e-10, RelTolProbes: 1e-10}
	sv, err := solvers.Solve(context.Background(), op, solvers.CG{}, b, nil, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	st := sv.State()
	fmt.Printf("converged %v after %d iterations\n", st.Converged, st.Iteration)
	fmt.Printf("v_0 = %.4f\n", mat.Col(nil, 0, sv.Solution()))

	// Exact: v_0 = (2/9, 1/9, 13/9). Warm start: H changes a little,
	// V0 = the previous solution.
	h.SetSym(0, 0, 4.1)
	op2, _ := solvers.NewDenseOperator(h)
	warm, err := solvers.Solve(context.Background(), op2, solvers.CG{}, b, sv.Solution(), s)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("initial relative residual: zero init %.2f, warm start %.4f\n",
		st.Trace[0][0], warm.State().Trace[0][0])
	// Output:
	// converged true after 3 iterations
	// v_0 = [0.2222 0.1111 1.4444]
	// initial relative residual: zero init 1.00, warm start 0.0059
}

// Pause a solve, save its state as JSON, and resume it later.
func ExampleResume() {
	h := mat.NewSymDense(4, []float64{
		3, 1, 0, 0,
		1, 3, 1, 0,
		0, 1, 3, 1,
		0, 0, 1, 3,
	})
	op, _ := solvers.NewDenseOperator(h)
	b := mat.NewDense(4, 1, []float64{1, 2, 3, 4})
	method := solvers.AP{BlockSize: 2}
	sv, err := method.Start(op, b, nil, solvers.Settings{RelTolMean: 1e-8})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = sv.Iterate()            // one block update, then stop
	saved := sv.State().Clone() // e.g. json.Marshal(saved) to a file

	resumed, err := solvers.Resume(op, method, b, saved)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := solvers.Run(context.Background(), resumed); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("converged %v, v = %.4f\n", resumed.Converged(), mat.Col(nil, 0, resumed.Solution()))
	// Output:
	// converged true, v = [0.1818 0.4545 0.4545 1.1818]
}

// Resolve shows what a method and its stopping rules become on a given
// problem: the zero values the paper's defaults, SGD's batch capped at n.
func ExampleSGD_Resolve() {
	m, err := solvers.SGD{RawLearningRate: 50}.Resolve(600)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := solvers.Settings{}.Resolve(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("batch %d, momentum %g, raw learning rate %g\n", m.BatchSize, m.Momentum, m.RawLearningRate)
	fmt.Printf("tolerances %g / %g, at most %d iterations\n", s.RelTolMean, s.RelTolProbes, s.MaxIterations)
	// Output:
	// batch 600, momentum 0.9, raw learning rate 50
	// tolerances 0.01 / 0.1, at most 50000 iterations
}
