package main

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
)

// TestMLLCommand checks the printed MLL against an eigenvalue log-det and a
// direct solve, and the gradient's signs and shape against finite
// differences of that independent MLL.
func TestMLLCommand(t *testing.T) {
	got, _ := runJSON[mllResult](t, "mll", "--data", "synthetic-40-2-0", "--kernel", "matern52", "--noise", "0.3", "--signal", "1.1", "--lengthscales", "0.8,1.3", "--json", "-")
	ds, err := data.Synthetic(40, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	mll := func(theta []float64) float64 {
		n := ds.NTrain()
		k := kernel.Kernel{Family: kernel.Matern52, Hyper: kernel.HyperFromVector(theta)}
		h := gptest.SymH(ds.XTrain, k, k.Hyper.Noise)
		var eig mat.EigenSym
		eig.Factorize(h, false)
		ld := 0.0
		for _, l := range eig.Values(nil) {
			ld += math.Log(l)
		}
		var a mat.VecDense
		a.SolveVec(mat.DenseCopyOf(h), mat.NewVecDense(n, ds.YTrain))
		return -0.5*mat.Dot(&a, mat.NewVecDense(n, ds.YTrain)) - 0.5*ld - 0.5*float64(n)*math.Log(2*math.Pi)
	}
	theta := []float64{0.8, 1.3, 1.1, 0.3}
	if want := mll(theta); math.Abs(got.MLL-want) > 1e-8*math.Abs(want) {
		t.Errorf("mll %v, independent %v", got.MLL, want)
	}
	grad := []float64{got.Grad.Lengthscales[0], got.Grad.Lengthscales[1], got.Grad.Signal, got.Grad.Noise}
	for i := range theta {
		p := append([]float64(nil), theta...)
		m := append([]float64(nil), theta...)
		p[i] += 1e-5
		m[i] -= 1e-5
		fd := (mll(p) - mll(m)) / 2e-5
		if math.Abs(fd-grad[i]) > 1e-4*(1+math.Abs(fd)) {
			t.Errorf("grad[%d] = %v, finite difference %v", i, grad[i], fd)
		}
	}
}

func TestMLLCommandBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mll", "--data", "synthetic-30-3-0", "--lengthscales", "1,2"}, "length scales"},
		{[]string{"mll", "--data", "synthetic-30-4-0", "--noise", "0"}, "noise"},
		{[]string{"mll", "--data", "synthetic-30-4-0", "--kernel", "cubic"}, "unknown kernel"},
		{[]string{"mll", "--data", "synthetic-200-1-0", "--kernel", "rbf", "--lengthscales", "1000", "--noise", "1e-9"}, "increase the noise or add jitter"},
		{[]string{"mll"}, "--data is required"},
	} {
		code, _, errs := runCmd(t, c.args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 mentioning %q", c.args, code, errs, c.want)
		}
	}
}
