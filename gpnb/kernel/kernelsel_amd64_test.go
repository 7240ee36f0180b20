//go:build amd64 && cgo

package kernel

import (
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestKernelSelection: a build with cgo on amd64 (what `go build` and GoNB
// give there, no tags needed) evaluates kernel values with the vectorised
// kernel whenever the CPU has AVX2, takes its FMA path where Go's math.Exp
// does (AVX2 and FMA), and multiplies Mixed K by the mixed kernel; a new
// operator uses the vectorised evaluation unless ScalarKernel is set. The
// CPU's features come from /proc/cpuinfo, apart from the C code's cpuid.
func TestKernelSelection(t *testing.T) {
	flags := cpuFlags()
	if flags == nil {
		t.Skip("no /proc/cpuinfo to read the CPU's features from")
	}
	avx2, fma := slices.Contains(flags, "avx2"), slices.Contains(flags, "fma")
	want, wantMixed := "", ""
	switch {
	case avx2 && fma:
		want, wantMixed = "avx2+fma", "avx2+fma"
	case avx2:
		want = "avx2"
	}
	if got := VectorKernel(); got != want {
		t.Errorf("VectorKernel() = %q on a CPU with avx2 %v, fma %v: want %q", got, avx2, fma, want)
	}
	if got := MixedKernel(); got != wantMixed {
		t.Errorf("MixedKernel() = %q on a CPU with avx2 %v, fma %v: want %q", got, avx2, fma, wantMixed)
	}
	if b, h := ThisBuild(), ThisHost(); !b.Cgo || b.Vector != want || b.Mixed != wantMixed || h.AVX2 != avx2 || h.FMA != fma {
		t.Errorf("ThisBuild() = %+v, ThisHost() = %+v: want cgo, kernels %q and %q, avx2 %v, fma %v", b, h, want, wantMixed, avx2, fma)
	}
	x := mat.NewDense(3, 2, []float64{0, 1, 2, 3, 4, 5})
	k := Kernel{Family: Matern32, Hyper: Hyper{Lengthscales: []float64{1, 1}, Signal: 1, Noise: 0.1}}
	for _, scalar := range []bool{false, true} {
		op, err := NewOperator(x, k, Options{ScalarKernel: scalar})
		if err != nil {
			t.Fatal(err)
		}
		if wantVec := want != "" && !scalar; op.vec != wantVec {
			t.Errorf("ScalarKernel %v: the operator evaluates kernel values vectorised: %v, want %v", scalar, op.vec, wantVec)
		}
	}
}
