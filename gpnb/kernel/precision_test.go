package kernel

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestParsePrecision(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Precision
	}{
		{"float64", Float64}, {"F64", Float64}, {"", Float64}, {"double", Float64},
		{"float32", Float32}, {" single ", Float32}, {"FP32", Float32},
		{"mixed", Mixed}, {"MIXED", Mixed},
	} {
		got, err := ParsePrecision(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePrecision(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParsePrecision(got.String()); err != nil || back != got {
			t.Errorf("%v.String() = %q does not parse back", got, got.String())
		}
	}
	for _, bad := range []string{"half", "float16", "64"} {
		if _, err := ParsePrecision(bad); err == nil || !strings.Contains(err.Error(), "float64, float32 or mixed") {
			t.Errorf("ParsePrecision(%q): err = %v, want one naming the choices", bad, err)
		}
	}
	if Float32.Epsilon() != math.Pow(2, -24) || Float64.Epsilon() != math.Pow(2, -53) || Mixed.Epsilon() != math.Pow(2, -53) {
		t.Errorf("Epsilon: %g, %g, %g", Float32.Epsilon(), Float64.Epsilon(), Mixed.Epsilon())
	}
	if Float64.Stores32() || !Float32.Stores32() || !Mixed.Stores32() {
		t.Errorf("Stores32: float64 %v, float32 %v, mixed %v", Float64.Stores32(), Float32.Stores32(), Mixed.Stores32())
	}
	if Precision(5).Valid() || Precision(5).String() != "Precision(5)" {
		t.Errorf("Precision(5): Valid %v, String %q", Precision(5).Valid(), Precision(5).String())
	}
	x := testX(20, 2, 1)
	if _, err := NewOperator(x, testKernel(RBF, 2), Options{Precision: 7}); err == nil || !strings.Contains(err.Error(), "unknown precision") {
		t.Errorf("NewOperator with Precision 7: err = %v", err)
	}
	for _, p := range []Precision{Float64, Float32, Mixed} {
		for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
			op, err := NewOperator(x, testKernel(RBF, 2), Options{Mode: mode, Precision: p})
			if err != nil {
				t.Fatal(err)
			}
			if op.Precision() != p || PrecisionOf(op) != p {
				t.Errorf("%v %v: Precision() = %v, PrecisionOf = %v", mode, p, op.Precision(), PrecisionOf(op))
			}
		}
	}
}

// ulps returns the distance of a and b in units in the last place: the
// number of float64 values between them (0 when equal, ±0 included, or
// both NaN).
func ulps(a, b float64) uint64 {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return 0
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.Signbit(a) != math.Signbit(b) {
		return math.MaxUint64
	}
	ia, ib := math.Float64bits(math.Abs(a)), math.Float64bits(math.Abs(b))
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// vectorInputs are squared distances over every range the kernels see: 0,
// subnormal and tiny values (near-duplicate points), the bulk, and values
// where exp underflows to subnormals and to 0.
func vectorInputs() []float64 {
	r2 := []float64{0, 5e-324, 1e-300, 1e-30, 1e-16, 2.2e-16, 1e-8, 0.5, 1, 2, 3}
	rng := rand.New(rand.NewPCG(41, 42))
	for i := 0; i < 4000; i++ {
		r2 = append(r2, math.Pow(10, -12+16*rng.Float64()), 60*rng.Float64())
	}
	return append(r2, 1400, 1480, 1490, 1500, 2.5e5, 2.8e5, 3e5, 1e7, 1e300, math.MaxFloat64)
}

// TestVectorKernel checks the vectorised kernel evaluation against the Go
// one (math.Exp) value by value, for every family, every range of inputs
// and every tail length: the same bits (it ports math.Exp lane by lane; 4
// ulp would be the tolerance of an exp of its own), and the same bits
// wherever a value sits in its slice.
func TestVectorKernel(t *testing.T) {
	if VectorKernel() == "" {
		t.Skipf("no vectorised kernel evaluation in this build (cgo off, %s, or a CPU without AVX2): the Go path is the only one", runtime.GOARCH)
	}
	in := vectorInputs()
	for _, f := range families {
		for _, s2 := range []float64{1, 0.37, 4.2e3} {
			want := append([]float64(nil), in...)
			fillK(f, s2, want)
			got := append([]float64(nil), in...)
			fillKVec(f, s2, got)
			worst := uint64(0)
			for i := range in {
				u := ulps(got[i], want[i])
				if u != 0 {
					t.Errorf("%v s²=%g r²=%g: vector %.17g, Go %.17g (%d ulp)", f, s2, in[i], got[i], want[i], u)
				}
				worst = max(worst, u)
			}
			if worst != 0 {
				t.Logf("%v s²=%g: fillK up to %d ulp from Go", f, s2, worst)
			}
			// Tails of every length and offsets within the vector: a
			// value's bits do not depend on its position.
			for off := 0; off < 4; off++ {
				for l := 0; l < 9; l++ {
					part := append([]float64(nil), in[off:off+l]...)
					fillKVec(f, s2, part)
					for i, v := range part {
						if math.Float64bits(v) != math.Float64bits(got[off+i]) {
							t.Fatalf("%v: value %d of a slice [%d:%d] is %v, %v in the full slice", f, i, off, off+l, v, got[off+i])
						}
					}
				}
			}
		}
		m, dm := make([]float64, len(in)), make([]float64, len(in))
		vm, vdm := make([]float64, len(in)), make([]float64, len(in))
		fillMD(f, in, m, dm)
		fillMDVec(f, in, vm, vdm)
		for i := range in {
			if ulps(vm[i], m[i]) != 0 || ulps(vdm[i], dm[i]) != 0 {
				t.Errorf("%v r²=%g: vector m, m'/r = %.17g, %.17g; Go %.17g, %.17g", f, in[i], vm[i], vdm[i], m[i], dm[i])
			}
		}
		fillMDVec(f, in[:3], vm[:3], vdm[:3]) // a tail alone
		if vm[0] != 1 || (f == Matern12 && vdm[0] != 0) {
			t.Errorf("%v at r = 0: m = %v, m'/r = %v", f, vm[0], vdm[0])
		}
	}
}

// TestVectorBuild checks whole dense caches (float64 and float32, with
// ragged tiles) and reductions computed with the vectorised code against the
// Go code's: the same bits, and K exactly symmetric.
func TestVectorBuild(t *testing.T) {
	if VectorKernel() == "" {
		t.Skip("no vectorised kernel evaluation in this build")
	}
	const d = 4
	for _, n := range []int{700, 150, 203} {
		if n == 150 {
			withSmallTiles(t) // rowTile 16, colChunk 40: many ragged tiles
		}
		x := testX(n, d, 43)
		for _, f := range families {
			k := testKernel(f, d)
			for _, p := range []Precision{Float64, Float32} {
				vec, err := NewOperator(x, k, Options{Mode: ModeDense, Precision: p})
				if err != nil {
					t.Fatal(err)
				}
				sc, err := NewOperator(x, k, Options{Mode: ModeDense, Precision: p, ScalarKernel: true})
				if err != nil {
					t.Fatal(err)
				}
				if !vec.vec || sc.vec {
					t.Fatalf("vec flags: %v, %v", vec.vec, sc.vec)
				}
				kv, ks := make([]float64, n*n), make([]float64, n*n)
				gatherK(vec, kv, n, vec.iota, vec.iota)
				gatherK(sc, ks, n, sc.iota, sc.iota)
				for i := range kv {
					a, b := i/n, i%n
					if math.Float64bits(kv[i]) != math.Float64bits(ks[i]) || kv[i] != kv[b*n+a] {
						t.Fatalf("n=%d %v %v: K[%d,%d] = %.17g vectorised (K[%d,%d] = %.17g), %.17g scalar", n, f, p, a, b, kv[i], b, a, kv[b*n+a], ks[i])
					}
				}
				a, b := randDense(n, 3, 44), randDense(n, 3, 45)
				g1, g2 := make([]float64, d+2), make([]float64, d+2)
				vec.Reduce(g1, a, b)
				sc.Reduce(g2, a, b)
				for i := range g1 {
					if math.Float64bits(g1[i]) != math.Float64bits(g2[i]) {
						t.Errorf("n=%d %v %v: Reduce θ_%d = %.17g vectorised, %.17g scalar", n, f, p, i, g1[i], g2[i])
					}
				}
			}
		}
	}
}

// relColErr returns max_j ‖got_j − want_j‖/‖want_j‖ over the columns.
func relColErr(got, want *mat.Dense) float64 {
	_, c := want.Dims()
	worst := 0.0
	for j := 0; j < c; j++ {
		var e, w float64
		for i := 0; i < want.RawMatrix().Rows; i++ {
			e += (got.At(i, j) - want.At(i, j)) * (got.At(i, j) - want.At(i, j))
			w += want.At(i, j) * want.At(i, j)
		}
		worst = max(worst, math.Sqrt(e/w))
	}
	return worst
}

// TestFloat32Products checks every product of a float32 operator against
// the float64 one at a realistic size (n = 1500, 17 columns, one gemm per
// row tile summing 1500 float32 products): within 1e-5 relative per column,
// in both modes, for the kernels' whole range of length scales.
func TestFloat32Products(t *testing.T) {
	const n, d, m = 1500, 6, 17
	rng := rand.New(rand.NewPCG(51, 52))
	x := mat.NewDense(n, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	v := randDense(n, m, 53)
	idx := rng.Perm(n)[:300]
	block := make([]int, 400)
	for i := range block {
		block[i] = 700 + i
	}
	dIdx, dBlock := randDense(len(idx), m, 54), randDense(len(block), m, 55)
	for _, f := range []Family{Matern32, RBF} {
		for _, ls := range []float64{0.3, 1, 4} {
			k := Kernel{Family: f, Hyper: Hyper{Lengthscales: []float64{ls, ls, ls, ls, ls, ls}, Signal: 1.1, Noise: 0.05}}
			ref, err := NewOperator(x, k, Options{Mode: ModeDense})
			if err != nil {
				t.Fatal(err)
			}
			products := func(op *Operator) map[string]*mat.Dense {
				out := map[string]*mat.Dense{}
				var full, rows, colsS, colsB mat.Dense
				op.MulTo(&full, v)
				op.RowsMulTo(&rows, idx, v)
				op.ColsMulTo(&colsS, idx, dIdx)
				op.ColsMulTo(&colsB, block, dBlock)
				out["MulTo"], out["RowsMulTo"], out["ColsMulTo scattered"], out["ColsMulTo block"] = &full, &rows, &colsS, &colsB
				return out
			}
			want := products(ref)
			for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
				op, err := NewOperator(x, k, Options{Mode: mode, Precision: Float32})
				if err != nil {
					t.Fatal(err)
				}
				for name, got := range products(op) {
					e := relColErr(got, want[name])
					if !(e <= 1e-5) {
						t.Errorf("%v ℓ=%g %v float32 %s: relative error %.3g, want ≤ 1e-5", f, ls, mode, name, e)
					}
					if e == 0 && name == "MulTo" {
						t.Errorf("%v ℓ=%g %v: the float32 product equals the float64 one bit for bit: not computed in float32", f, ls, mode)
					}
				}
			}
		}
	}
}

// TestStepAllocs checks that one optimiser step's operator work (SetKernel
// for a new θ, products, the reduction) reuses the operator's buffers: after
// a first step, nothing that grows with n is allocated.
func TestStepAllocs(t *testing.T) {
	const n, d, m = 400, 3, 5
	x := testX(n, d, 61)
	v := randDense(n, m, 62)
	dst := mat.NewDense(n, m, nil)
	grad := make([]float64, d+2)
	k1, k2 := testKernel(Matern32, d), testKernel(Matern32, d)
	k2.Hyper.Lengthscales[1] *= 1.5
	for _, p := range []Precision{Float64, Float32, Mixed} {
		for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
			op, err := NewOperator(x, k1, Options{Mode: mode, Precision: p, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			step := func() {
				if err := op.SetKernel(k2); err != nil {
					t.Fatal(err)
				}
				op.MulTo(dst, v)
				op.Reduce(grad, v, v)
				k1, k2 = k2, k1
			}
			step()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for i := 0; i < 4; i++ {
				step()
			}
			runtime.ReadMemStats(&m1)
			// Far below one n×n cache (1.28 MB) or one row tile of buffers
			// (512 kB); what is left is closures and, in pure-Go builds,
			// gonum's parallel gemm bookkeeping (about 20 kB a step here).
			if b := (m1.TotalAlloc - m0.TotalAlloc) / 4; b > 64<<10 {
				t.Errorf("%v %v: %d bytes allocated per step, want ≤ 64 KiB", mode, p, b)
			}
		}
	}
}

// TestWorkTimers checks that the Work timers count where the time goes.
func TestWorkTimers(t *testing.T) {
	x := testX(200, 3, 63)
	op, err := NewOperator(x, testKernel(Matern52, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	w0 := op.Work()
	if w0.BuildSeconds <= 0 || w0.ProductSeconds != 0 || w0.ReduceSeconds != 0 {
		t.Fatalf("after NewOperator: %+v, want only BuildSeconds > 0", w0)
	}
	v := randDense(200, 3, 64)
	op.MulTo(mat.NewDense(200, 3, nil), v)
	w1 := op.Work().Sub(w0)
	if w1.ProductSeconds <= 0 || w1.BuildSeconds != 0 || w1.ReduceSeconds != 0 || w1.Products != 3 {
		t.Errorf("MulTo: %+v", w1)
	}
	op.Reduce(make([]float64, 5), v, v)
	if err := op.SetKernel(testKernel(Matern52, 3)); err != nil {
		t.Fatal(err)
	}
	w2 := op.Work().Sub(w0)
	if w2.ReduceSeconds <= 0 || w2.BuildSeconds <= 0 || w2.ProductSeconds != w1.ProductSeconds {
		t.Errorf("Reduce and SetKernel: %+v", w2)
	}
}
