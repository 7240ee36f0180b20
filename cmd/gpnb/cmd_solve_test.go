package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
)

func solveCmd(t *testing.T, args ...string) (int, solveResult, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"solve"}, args...), &out, &errb)
	var res solveResult
	if code == 0 && strings.Contains(strings.Join(args, " "), "--json -") {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("bad JSON %q: %v", out.String(), err)
		}
	}
	return code, res, errb.String() + out.String()
}

// solveTestH builds H = K + σ²I for --data synthetic-120-2-0 at the default hyperparameters (all 1.0), entry by entry.
func solveTestH(t *testing.T) (*mat.SymDense, []float64) {
	t.Helper()
	ds, err := data.Synthetic(120, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(2)}
	return gptest.SymH(ds.XTrain, k, k.Hyper.Noise), ds.YTrain
}

func TestSolveCommandSolvers(t *testing.T) {
	h, _ := solveTestH(t)
	var eig mat.EigenSym
	eig.Factorize(h, false)
	vals := eig.Values(nil)
	kappa := vals[len(vals)-1] / vals[0]
	base := []string{"--data", "synthetic-120-2-0", "--probes", "3", "--json", "-"}
	for _, c := range []struct {
		solver string
		extra  []string
	}{
		{"cg", nil},
		{"cg", []string{"--precond-rank", "10"}},
		{"cg", []string{"--precond-rank", "10", "--precond-diagonal"}},
		{"ap", []string{"--block-size", "30"}},
		{"sgd", []string{"--batch-size", "30", "--seed", "4"}},
		{"cholesky", nil},
	} {
		t.Run(c.solver+strings.Join(c.extra, ""), func(t *testing.T) {
			code, res, msg := solveCmd(t, append(append(append([]string{}, base...), "--solver", c.solver), c.extra...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			if res.Solver != c.solver || res.N != 120 || len(res.RelResiduals) != 4 || !res.Converged || res.Iteration < 1 {
				t.Fatalf("result %+v", res)
			}
			if res.RelResiduals[0] >= 0.01 {
				t.Errorf("mean residual %g", res.RelResiduals[0])
			}
			for _, r := range res.RelResiduals[1:] {
				if r >= 0.1 {
					t.Errorf("probe residual %g", r)
				}
			}
			// ‖v−v*‖/‖v*‖ ≤ κ(H)·‖r‖/‖b‖.
			if res.RelErrorVsCholesky == nil || *res.RelErrorVsCholesky > kappa*0.1 {
				t.Errorf("relative error vs Cholesky %v, bound %g", res.RelErrorVsCholesky, kappa*0.1)
			}
			if c.solver == "cholesky" && *res.RelErrorVsCholesky != 0 {
				t.Errorf("Cholesky against itself: %g", *res.RelErrorVsCholesky)
			}
		})
	}
}

// One CG iteration from zero is v = αy with α = yᵀy/yᵀHy: its residual has
// a closed form.
func TestSolveCommandOneCGStep(t *testing.T) {
	h, y := solveTestH(t)
	yv := mat.NewVecDense(len(y), y)
	var hy mat.VecDense
	hy.MulVec(h, yv)
	alpha := mat.Dot(yv, yv) / mat.Dot(yv, &hy)
	var r mat.VecDense
	r.AddScaledVec(yv, -alpha, &hy)
	want := mat.Norm(&r, 2) / mat.Norm(yv, 2)

	code, res, msg := solveCmd(t, "--data", "synthetic-120-2-0", "--probes", "0", "--solver", "cg", "--max-iterations", "1", "--json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if res.Iteration != 1 || res.Converged || len(res.RelResiduals) != 1 {
		t.Fatalf("result %+v", res)
	}
	if math.Abs(res.RelResiduals[0]-want) > 1e-10 {
		t.Fatalf("residual after one CG step %.12g, closed form %.12g", res.RelResiduals[0], want)
	}
	if res.Work.OperatorProducts != 1 {
		t.Fatalf("work %+v, want one product", res.Work)
	}
}

func TestSolveCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "synthetic-500-4-0", "--solver", "gmres"}, "cg, ap, sgd, cholesky"},
		{[]string{"--data", "synthetic-500-4-0", "--probes", "-1"}, "--probes"},
		{[]string{"--data", "synthetic-500-4-0", "--tol-mean", "0"}, "--tol-mean"},
		{[]string{"--data", "synthetic-500-4-0", "--sgd-lr", "-1", "--solver", "sgd"}, "--sgd-lr"},
		{[]string{"--data", "synthetic-500-4-0", "--momentum", "1.5", "--solver", "sgd"}, "--momentum"},
		{[]string{"--data", "synthetic-500-4-0", "--block-size", "-3", "--solver", "ap"}, "--block-size"},
		{[]string{"--data", "synthetic-500-4-0", "--lengthscales", "1,2,3"}, "--noise/--signal/--lengthscales"},
		{[]string{"--data", "synthetic-500-4-0", "--noise", "-1"}, "noise"},
		{[]string{"--solver", "cg"}, "--data is required"},
		{[]string{"--data", "synthetic-500-4-0", "--max-iterations", "-1"}, "--max-iterations"},
	} {
		code, _, msg := solveCmd(t, c.args...)
		if code == 0 || !strings.Contains(msg, c.want) {
			t.Errorf("%v: exit %d, message %q does not mention %q", c.args, code, msg, c.want)
		}
	}
	// Max iterations reached is reported, not an error.
	code, res, msg := solveCmd(t, "--data", "synthetic-60-4-0", "--solver", "ap", "--block-size", "10", "--max-iterations", "2", "--json", "-")
	if code != 0 || res.Converged || res.Iteration != 2 {
		t.Fatalf("max iters: exit %d converged %v iterations %d: %s", code, res.Converged, res.Iteration, msg)
	}
}

func TestSolveCommandText(t *testing.T) {
	code, _, msg := solveCmd(t, "--data", "synthetic-50-4-0", "--solver", "cg")
	if code != 0 || !strings.Contains(msg, "converged true") || !strings.Contains(msg, "relative error vs Cholesky") {
		t.Fatalf("exit %d: %s", code, msg)
	}
}
