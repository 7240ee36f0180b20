package kernel

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/gptest"
)

// testX returns n×d inputs offset far from the origin (to exercise the
// centring), with an exact duplicate row and a near-duplicate row, the
// cases where the gemm-shaped distance formula loses precision.
func testX(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 50+rng.NormFloat64())
		}
	}
	if n > 10 {
		x.SetRow(5, x.RawRowView(3))
		for j := 0; j < d; j++ {
			x.Set(7, j, x.At(6, j)+1e-9*float64(j+1))
		}
	}
	return x
}

func testKernel(f Family, d int) Kernel {
	ls := make([]float64, d)
	for j := range ls {
		ls[j] = 0.7 + 0.4*float64(j)
	}
	return Kernel{Family: f, Hyper: Hyper{Lengthscales: ls, Signal: 1.3, Noise: 0.4}}
}

func randDense(r, c int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 11))
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	return m
}

// explicitH is H = K + σ²I entry by entry, the independent reference.
func explicitH(x *mat.Dense, k Kernel) *mat.Dense { return gptest.H(x, k, k.Hyper.Noise) }

// checkProduct compares got with A·B entry by entry, within rel·(|A|·|B|)_ij:
// the standard bound for a sum of products with elements perturbed by rel.
func checkProduct(t *testing.T, name string, got, a, b *mat.Dense, rel float64) {
	t.Helper()
	var want, scale, aa, bb mat.Dense
	want.Mul(a, b)
	aa.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, a)
	bb.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, b)
	scale.Mul(&aa, &bb)
	r, c := want.Dims()
	if gr, gc := got.Dims(); gr != r || gc != c {
		t.Fatalf("%s: got %d×%d, want %d×%d", name, gr, gc, r, c)
	}
	bad := 0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if e := math.Abs(got.At(i, j) - want.At(i, j)); !(e <= rel*scale.At(i, j)) {
				if bad++; bad <= 3 {
					t.Errorf("%s[%d,%d] = %.17g, want %.17g (error %.3g, allowed %.3g)", name, i, j, got.At(i, j), want.At(i, j), e, rel*scale.At(i, j))
				}
			}
		}
	}
}

// withSmallTiles shrinks the tiling so that n ≈ 100 spans many row tiles and
// column chunks, including ragged last ones.
func withSmallTiles(t *testing.T) {
	rt, cc, st := rowTile, colChunk, symTile
	rowTile, colChunk, symTile = 16, 40, 24
	t.Cleanup(func() { rowTile, colChunk, symTile = rt, cc, st })
}

type opCase struct {
	name string
	opt  Options
	rel  float64 // relative tolerance: float64 rounding, or float32 storage
}

// rel32 bounds a float32 product's error relative to |K|·|V| for the test
// sizes (n ≈ 100): K and V rounded (2⁻²⁴ each) and the gemm's sums of n
// products, n·2⁻²⁴ at worst.
const rel32 = 110 * 0x1p-24

var opCases = []opCase{
	{"dense", Options{Mode: ModeDense}, 1e-13},
	{"dense32", Options{Mode: ModeDense, Precision: Float32}, rel32},
	{"matrixfree", Options{Mode: ModeMatrixFree}, 1e-13},
	{"matrixfree2w", Options{Mode: ModeMatrixFree, Workers: 2}, 1e-13},
	{"matrixfree32", Options{Mode: ModeMatrixFree, Precision: Float32}, rel32},
}

func TestOperatorAgainstExplicit(t *testing.T) {
	withSmallTiles(t)
	const n, d, m = 103, 3, 4
	x := testX(n, d, 1)
	idx := []int{3, 5, 7, 6, 0, 102, 50, 51, 52, 17, 99, 3, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42}
	v := randDense(n, m, 2)
	dIdx := randDense(len(idx), m, 3)
	xs := testX(37, d, 4)
	for _, f := range families {
		k := testKernel(f, d)
		h := explicitH(x, k)
		for _, c := range opCases {
			name := f.String() + "/" + c.name
			op, err := NewOperator(x, k, c.opt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if want := c.opt.Mode; op.Mode() != want {
				t.Fatalf("%s: mode %v, want %v", name, op.Mode(), want)
			}
			if op.Size() != n {
				t.Fatalf("%s: Size = %d", name, op.Size())
			}
			dst := mat.NewDense(n, m, nil)
			op.MulTo(dst, v)
			checkProduct(t, name+" MulTo", dst, h, v, c.rel)

			hr := mat.NewDense(len(idx), n, nil)
			for i, r := range idx {
				hr.SetRow(i, h.RawRowView(r))
			}
			rdst := mat.NewDense(len(idx), m, nil)
			op.RowsMulTo(rdst, idx, v)
			checkProduct(t, name+" RowsMulTo", rdst, hr, v, c.rel)

			var hc mat.Dense
			hc.CloneFrom(hr.T())
			cdst := mat.NewDense(n, m, nil)
			op.ColsMulTo(cdst, idx, dIdx)
			checkProduct(t, name+" ColsMulTo", cdst, &hc, dIdx, c.rel)

			var blk mat.SymDense
			op.BlockTo(&blk, idx)
			for i, a := range idx {
				for j, b := range idx {
					if !closeTo(blk.At(i, j), h.At(a, b), 1e-300, c.rel) {
						t.Errorf("%s BlockTo[%d,%d] = %g, want %g", name, i, j, blk.At(i, j), h.At(a, b))
					}
				}
			}

			diag := make([]float64, n)
			op.DiagTo(diag)
			for i, v := range diag {
				if !closeTo(v, h.At(i, i), 0, 1e-15) {
					t.Errorf("%s DiagTo[%d] = %g, want %g", name, i, v, h.At(i, i))
				}
			}

			kx := mat.NewDense(37, n, nil)
			for a := 0; a < 37; a++ {
				for b := 0; b < n; b++ {
					kx.Set(a, b, k.At(xs.RawRowView(a), x.RawRowView(b)))
				}
			}
			xdst := mat.NewDense(37, m, nil)
			op.CrossMulTo(xdst, xs, v)
			checkProduct(t, name+" CrossMulTo", xdst, kx, v, 1e-13) // always computed in float64
		}
	}
}

// TestColumnTo: a column of H read without a product is the column
// ColsMulTo gives for a coefficient 1, bit for bit, in every mode and
// precision, and the explicit H's column (within the precision's rounding
// of K).
func TestColumnTo(t *testing.T) {
	const n, d = 57, 3
	x := testX(n, d, 5)
	k := testKernel(Matern32, d)
	h := explicitH(x, k)
	one := mat.NewDense(1, 1, []float64{1})
	for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
		for _, prec := range []Precision{Float64, Float32, Mixed} {
			op, err := NewOperator(x, k, Options{Mode: mode, Precision: prec})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, n)
			want := mat.NewDense(n, 1, nil)
			for _, j := range []int{0, 17, n - 1} {
				op.ColumnTo(got, j)
				op.ColsMulTo(want, []int{j}, one)
				for i, v := range got {
					if math.Float64bits(v) != math.Float64bits(want.At(i, 0)) {
						t.Fatalf("%v %v: ColumnTo(%d)[%d] = %v, ColsMulTo gives %v", mode, prec, j, i, v, want.At(i, 0))
					}
					if !closeTo(v, h.At(i, j), 1e-300, rel32) {
						t.Fatalf("%v %v: ColumnTo(%d)[%d] = %v, H has %v", mode, prec, j, i, v, h.At(i, j))
					}
				}
			}
		}
	}
}

// TestNearDuplicates checks that points a tiny distance apart get the same
// kernel value as direct per-pair evaluation. Matern12's e^{−r} has slope −1
// at r = 0, so an error δ in r² ≈ 0 would show up as √δ in K.
func TestNearDuplicates(t *testing.T) {
	const n, d = 40, 5
	rng := rand.New(rand.NewPCG(3, 3))
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i += 2 {
		for j := 0; j < d; j++ {
			v := 3 * rng.NormFloat64()
			x.Set(i, j, v)
			// The partner is a tiny step away (10⁻⁶…10⁻¹⁰), or identical.
			x.Set(i+1, j, v+math.Pow(10, -6-float64(i%10)/2)*rng.NormFloat64()*float64(i%8))
		}
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	for _, f := range families {
		k := Kernel{Family: f, Hyper: DefaultHyper(d)}
		h := explicitH(x, k)
		for _, c := range opCases[:3] {
			op, err := NewOperator(x, k, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			var blk mat.SymDense
			op.BlockTo(&blk, idx)
			for a := 0; a < n; a++ {
				for b := 0; b < n; b++ {
					// float32 storage: relative rounding 2⁻²⁴ above the
					// smallest normal float32, absolute ≤ 2⁻¹⁴⁹ below it.
					abs := 0.0
					if c.opt.Precision == Float32 {
						abs = 1e-44
					}
					if !closeTo(blk.At(a, b), h.At(a, b), abs, c.rel) {
						t.Errorf("%v/%s: H[%d,%d] = %.17g, want %.17g", f, c.name, a, b, blk.At(a, b), h.At(a, b))
					}
				}
			}
		}
	}
}

func TestModeAutoAndBudget(t *testing.T) {
	x := testX(50, 2, 1)
	k := testKernel(Matern32, 2)
	op, err := NewOperator(x, k, Options{MemoryBudget: 50 * 50 * 8})
	if err != nil || op.Mode() != ModeDense {
		t.Fatalf("auto within budget: mode %v, err %v; want dense", op.Mode(), err)
	}
	op, err = NewOperator(x, k, Options{MemoryBudget: 50*50*8 - 1})
	if err != nil || op.Mode() != ModeMatrixFree {
		t.Fatalf("auto over budget: mode %v, err %v; want matrixfree", op.Mode(), err)
	}
	op, err = NewOperator(x, k, Options{MemoryBudget: 50*50*8 - 1, Precision: Float32})
	if err != nil || op.Mode() != ModeDense {
		t.Fatalf("auto float32: mode %v, err %v; want dense", op.Mode(), err)
	}
	if _, err = NewOperator(x, k, Options{Mode: ModeDense, MemoryBudget: 1000}); err == nil || !strings.Contains(err.Error(), "ModeMatrixFree") {
		t.Errorf("dense over budget: err = %v, want an error suggesting ModeMatrixFree", err)
	}
	if b := DefaultMemoryBudget(); b <= 0 {
		t.Errorf("DefaultMemoryBudget = %d", b)
	}
	if pm := PhysicalMemory(); pm > 0 && DefaultMemoryBudget() != pm/2 {
		t.Errorf("DefaultMemoryBudget %d is not half of PhysicalMemory %d", DefaultMemoryBudget(), pm)
	} else if pm == 0 && runtime.GOOS == "linux" {
		t.Error("PhysicalMemory is 0 on Linux: /proc/meminfo was not read")
	}
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{}, "dense float64"},
		{Options{Precision: Float32}, "dense float32"},
		{Options{Mode: ModeMatrixFree}, "matrix-free"},
		{Options{Mode: ModeMatrixFree, Precision: Float32}, "matrix-free float32"},
		{Options{MemoryBudget: 100}, "matrix-free"},
	} {
		op, err := NewOperator(x, k, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := Describe(op); got != tc.want || op.Storage() != tc.want {
			t.Errorf("%+v: Describe = %q, Storage = %q, want %q", tc.opt, got, op.Storage(), tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"", 0}, {"auto", 0}, {"0", 0}, {"1234", 1234}, {"16GiB", 16 << 30}, {"16 gib", 16 << 30},
		{"13.5G", 13_500_000_000}, {"13.5gb", 13_500_000_000}, {"500MiB", 500 << 20}, {"2k", 2000},
		{"1TiB", 1 << 40}, {"7b", 7},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"-1", "lots", "16XB", "GiB", "NaN", "1e30", "1.5.2G"} {
		if v, err := ParseBytes(bad); err == nil || !strings.Contains(err.Error(), "16GiB") {
			t.Errorf("ParseBytes(%q) = %d, %v; want an error with an example", bad, v, err)
		}
	}
}

func TestNewOperatorErrors(t *testing.T) {
	good := testX(20, 3, 1)
	nan := mat.DenseCopyOf(good)
	nan.Set(4, 1, math.NaN())
	inf := mat.DenseCopyOf(good)
	inf.Set(0, 0, math.Inf(-1))
	k := testKernel(Matern32, 3)
	badLs := testKernel(Matern32, 2)
	badFam := k
	badFam.Family = Family(42)
	negNoise := testKernel(Matern32, 3)
	negNoise.Hyper.Noise = -1
	cases := []struct {
		name string
		x    *mat.Dense
		k    Kernel
		opt  Options
		want string
	}{
		{"nil X", nil, k, Options{}, "empty"},
		{"empty X", &mat.Dense{}, k, Options{}, "empty"},
		{"NaN", nan, k, Options{}, "X[4,1] is NaN"},
		{"Inf", inf, k, Options{}, "finite"},
		{"length scales", good, badLs, Options{}, "2 length scales for 3"},
		{"family", good, badFam, Options{}, "unknown family"},
		{"noise", good, negNoise, Options{}, "noise"},
		{"mode", good, k, Options{Mode: Mode(9)}, "unknown mode"},
		{"workers", good, k, Options{Workers: -1}, "Workers"},
		{"budget", good, k, Options{MemoryBudget: -5}, "MemoryBudget"},
		{"dense budget", good, k, Options{Mode: ModeDense, MemoryBudget: 100}, "memory budget"},
	}
	for _, c := range cases {
		op, err := NewOperator(c.x, c.k, c.opt)
		if err == nil || op != nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewOperator = %v, %v; want an error containing %q", c.name, op, err, c.want)
		}
	}
	op, err := NewOperator(good, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.SetKernel(badLs); err == nil {
		t.Error("SetKernel with wrong length scales: nil error")
	}
	if got := op.Kernel().Hyper.Lengthscales; len(got) != 3 {
		t.Errorf("failed SetKernel changed the kernel: %v", got)
	}
}

func TestShapePanics(t *testing.T) {
	op, err := NewOperator(testX(10, 2, 1), testKernel(RBF, 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := mat.NewDense(10, 2, nil)
	cases := map[string]func(){
		"MulTo dst":      func() { op.MulTo(mat.NewDense(9, 2, nil), v) },
		"MulTo V":        func() { op.MulTo(mat.NewDense(10, 2, nil), mat.NewDense(9, 2, nil)) },
		"MulTo alias":    func() { op.MulTo(v, v) },
		"RowsMulTo idx":  func() { op.RowsMulTo(mat.NewDense(1, 2, nil), []int{10}, v) },
		"ColsMulTo D":    func() { op.ColsMulTo(mat.NewDense(10, 2, nil), []int{1, 2}, mat.NewDense(3, 2, nil)) },
		"BlockTo dst":    func() { op.BlockTo(mat.NewSymDense(3, nil), []int{1, 2}) },
		"DiagTo":         func() { op.DiagTo(make([]float64, 9)) },
		"ColumnTo dst":   func() { op.ColumnTo(make([]float64, 9), 1) },
		"ColumnTo j":     func() { op.ColumnTo(make([]float64, 10), 10) },
		"CrossMulTo Xs":  func() { op.CrossMulTo(mat.NewDense(4, 2, nil), mat.NewDense(4, 3, nil), v) },
		"Reduce dst":     func() { op.Reduce(make([]float64, 3), v, v) },
		"ReduceDense W":  func() { op.ReduceDense(make([]float64, 4), mat.NewDense(10, 9, nil)) },
		"Reduce A vs B:": func() { op.Reduce(make([]float64, 4), v, mat.NewDense(10, 3, nil)) },
	}
	for name, f := range cases {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.HasPrefix(s, "kernel: ") {
					t.Errorf("%s: recovered %v, want a panic with a kernel: message", name, r)
				}
			}()
			f()
		}()
	}
}

// explicitReduce returns Σ_ab W_ab ∂H_ab/∂θ_k from Kernel.GradAt, and the
// error scale Σ_ab |W_ab ∂H_ab/∂θ_k|.
func explicitReduce(x, w *mat.Dense, k Kernel) (want, scale []float64) {
	n, d := x.Dims()
	want = make([]float64, d+2)
	scale = make([]float64, d+2)
	g := make([]float64, d+1)
	sig := k.Hyper.Noise
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			xa, xb := x.RawRowView(a), x.RawRowView(b)
			k.GradAt(g, xa, xb)
			wab := w.At(a, b)
			for i := 0; i <= d; i++ {
				want[i] += wab * g[i]
				scale[i] += math.Abs(wab * g[i])
			}
			if a == b {
				want[d+1] += wab * 2 * sig
				scale[d+1] += math.Abs(wab * 2 * sig)
			}
		}
	}
	return want, scale
}

func TestReduceAgainstExplicit(t *testing.T) {
	withSmallTiles(t)
	const n, d, c = 90, 3, 3
	x := testX(n, d, 5)
	a, b := randDense(n, c, 6), randDense(n, c, 7)
	var w mat.Dense
	w.Mul(a, b.T())
	for _, f := range families {
		for _, lsScale := range []float64{0.05, 1, 20} {
			k := testKernel(f, d)
			for i := range k.Hyper.Lengthscales {
				k.Hyper.Lengthscales[i] *= lsScale
			}
			want, scale := explicitReduce(x, &w, k)
			for _, oc := range opCases[:3] {
				op, err := NewOperator(x, k, oc.opt)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float64, d+2)
				gotD := make([]float64, d+2)
				op.Reduce(got, a, b)
				op.ReduceDense(gotD, &w)
				for i := range want {
					// Rounding: pairs summed in expanded form have
					// |z_a|²+|z_b|² < r²/nearTau = 1024·r², so the terms
					// that cancel are at most ~1024× the true ones and
					// the error is ≲ 1024·few·ε ≈ 1e-12 of Σ|W·∂H|.
					// Near pairs are summed directly (exact to ~ε).
					tol := 1e-12 * scale[i]
					if math.Abs(got[i]-want[i]) > tol || math.Abs(gotD[i]-want[i]) > tol {
						t.Errorf("%v ℓ×%g %s θ_%d: Reduce %.15g, ReduceDense %.15g, explicit %.15g (tol %.3g)", f, lsScale, oc.name, i, got[i], gotD[i], want[i], tol)
					}
				}
			}
		}
	}
}

// TestDeterminism checks bitwise equal results at GOMAXPROCS 1 and 2 and for
// 1, 2 and 3 workers, in every mode.
func TestDeterminism(t *testing.T) {
	withSmallTiles(t)
	const n, d, m = 97, 4, 5
	x := testX(n, d, 8)
	v := randDense(n, m, 9)
	idx := []int{90, 1, 2, 3, 40, 41, 42, 5}
	dd := randDense(len(idx), m, 10)
	run := func(opt Options) []float64 {
		op, err := NewOperator(x, testKernel(Matern32, d), opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		dst := mat.NewDense(n, m, nil)
		op.MulTo(dst, v)
		out = append(out, dst.RawMatrix().Data...)
		op.ColsMulTo(dst, idx, dd)
		out = append(out, dst.RawMatrix().Data...)
		r := mat.NewDense(len(idx), m, nil)
		op.RowsMulTo(r, idx, v)
		out = append(out, r.RawMatrix().Data...)
		g := make([]float64, d+2)
		op.Reduce(g, v, v)
		out = append(out, g...)
		wn := mat.NewDense(n, n, nil) // an unsymmetric W
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				wn.Set(i, j, v.At(i, j%m)*v.At(j, i%m))
			}
		}
		op.ReduceDense(g, wn)
		out = append(out, g...)
		op.CrossMulTo(r, mat.NewDense(len(idx), d, x.RawMatrix().Data[:len(idx)*d]), v)
		return append(out, r.RawMatrix().Data...)
	}
	checkSameBits(t, run)
}

// TestGemmDeterministic checks that the BLAS in use gives the same bits at
// GOMAXPROCS 1 and 2 for a gemm large enough for gonum to run in parallel.
// gonum partitions the output, never the inner dimension.
func TestGemmDeterministic(t *testing.T) {
	a, b := randDense(300, 300, 1), randDense(300, 300, 2)
	mul := func() []float64 {
		c := blas64.General{Rows: 300, Cols: 300, Stride: 300, Data: make([]float64, 300*300)}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a.RawMatrix(), b.RawMatrix(), 0, c)
		return c.Data
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	ref := mul()
	runtime.GOMAXPROCS(2)
	got := mul()
	for i := range ref {
		if math.Float64bits(got[i]) != math.Float64bits(ref[i]) {
			t.Fatalf("%s gemm differs at GOMAXPROCS 2: element %d", BLASName(), i)
		}
	}
}

func TestSetKernelAndWork(t *testing.T) {
	const n, d = 60, 2
	x := testX(n, d, 3)
	k1, k2 := testKernel(Matern52, d), testKernel(RBF, d)
	k2.Hyper.Lengthscales[0] = 3
	for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
		op, err := NewOperator(x, k1, Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.SetKernel(k2); err != nil {
			t.Fatal(err)
		}
		if op.Kernel().Family != RBF || op.Kernel().Hyper.Lengthscales[0] != 3 {
			t.Fatalf("Kernel() = %+v after SetKernel", op.Kernel())
		}
		v := randDense(n, 3, 4)
		dst := mat.NewDense(n, 3, nil)
		before := op.Work()
		op.MulTo(dst, v)
		checkProduct(t, mode.String()+" MulTo after SetKernel", dst, explicitH(x, k2), v, 1e-13)
		w := op.Work()
		if w.Products-before.Products != 3 || w.RowsEvaluated-before.RowsEvaluated != n {
			t.Errorf("%v: Work delta %+v → %+v, want 3 products and %d rows", mode, before, w, n)
		}
		wantEvals := int64(0)
		if mode == ModeMatrixFree {
			wantEvals = n * n
		}
		if w.KernelEvals-before.KernelEvals != wantEvals {
			t.Errorf("%v: %d kernel evaluations, want %d", mode, w.KernelEvals-before.KernelEvals, wantEvals)
		}
		if op.X() == x || !mat.Equal(op.X(), x) {
			t.Errorf("X() should be an equal copy")
		}
	}
}

// TestViews checks products on strided views (column slices of wider
// matrices), the way solvers pass the mean and probe columns: MulTo and
// Reduce, and the fast paths of the partial products, with V, D and dst as
// views. (A BlockTo dst of the wrong size is refused: TestShapePanics.)
func TestViews(t *testing.T) {
	withSmallTiles(t)
	const n, d = 70, 3
	x := testX(n, d, 12)
	k := testKernel(Matern52, d)
	h := explicitH(x, k)
	wide := randDense(n, 7, 13)
	v := wide.Slice(0, n, 2, 5).(*mat.Dense)
	for _, c := range partialCases {
		op, err := NewOperator(x, k, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		out := mat.NewDense(n, 9, nil)
		dst := out.Slice(0, n, 4, 7).(*mat.Dense)
		op.MulTo(dst, v)
		checkProduct(t, c.name+" MulTo on views", dst, h, mat.DenseCopyOf(v), c.rel)
		checkOutside(t, c.name+": MulTo", out, 4, 7)
		g1, g2 := make([]float64, d+2), make([]float64, d+2)
		op.Reduce(g1, v, v)
		op.Reduce(g2, mat.DenseCopyOf(v), mat.DenseCopyOf(v))
		for i := range g1 {
			if g1[i] != g2[i] {
				t.Errorf("%s: Reduce on views θ_%d = %v, on copies %v", c.name, i, g1[i], g2[i])
			}
		}
		for _, idx := range [][]int{{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62}, {9, 2, 2, 44}} {
			hr := mat.NewDense(len(idx), n, nil)
			for i, r := range idx {
				hr.SetRow(i, h.RawRowView(r))
			}
			out := mat.NewDense(len(idx), 9, nil)
			rdst := out.Slice(0, len(idx), 5, 8).(*mat.Dense)
			op.RowsMulTo(rdst, idx, v)
			checkProduct(t, c.name+" RowsMulTo on views", rdst, hr, mat.DenseCopyOf(v), c.rel)
			wideD := randDense(len(idx), 7, 25)
			dd := wideD.Slice(0, len(idx), 1, 4).(*mat.Dense)
			outC := mat.NewDense(n, 9, nil)
			cdst := outC.Slice(0, n, 2, 5).(*mat.Dense)
			op.ColsMulTo(cdst, idx, dd)
			var hc mat.Dense
			hc.CloneFrom(hr.T())
			checkProduct(t, c.name+" ColsMulTo on views", cdst, &hc, mat.DenseCopyOf(dd), c.rel)
			checkOutside(t, c.name+": ColsMulTo", outC, 2, 5)
		}
	}
}

// checkOutside fails unless columns outside [j0, j1) of out are zero: a
// product into the view out[:, j0:j1] wrote nothing else.
func checkOutside(t *testing.T, what string, out *mat.Dense, j0, j1 int) {
	t.Helper()
	r, c := out.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if (j < j0 || j >= j1) && out.At(i, j) != 0 {
				t.Fatalf("%s wrote outside dst at [%d,%d]", what, i, j)
			}
		}
	}
}

// TestSinglePoint covers n = 1: H = s² + σ², every method one element.
func TestSinglePoint(t *testing.T) {
	x := mat.NewDense(1, 2, []float64{3, -1})
	k := testKernel(Matern12, 2)
	want := k.Hyper.Signal*k.Hyper.Signal + k.Hyper.Noise*k.Hyper.Noise
	for _, c := range opCases {
		op, err := NewOperator(x, k, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		dst := mat.NewDense(1, 1, nil)
		op.MulTo(dst, mat.NewDense(1, 1, []float64{2}))
		if !closeTo(dst.At(0, 0), 2*want, 0, c.rel) {
			t.Errorf("%s: H·2 = %g, want %g", c.name, dst.At(0, 0), 2*want)
		}
		g := make([]float64, 4)
		op.Reduce(g, mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, 1, []float64{1}))
		if g[0] != 0 || g[1] != 0 || !closeTo(g[2], 2*k.Hyper.Signal, 0, 1e-15) || !closeTo(g[3], 2*k.Hyper.Noise, 0, 1e-15) {
			t.Errorf("%s: Reduce = %v, want [0 0 2s 2σ]", c.name, g)
		}
	}
}

// TestEmptyDst checks that an empty (zero-value) dst is resized.
func TestEmptyDst(t *testing.T) {
	const n = 12
	x := testX(n, 2, 4)
	k := testKernel(RBF, 2)
	op, err := NewOperator(x, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := randDense(n, 2, 5)
	var dst mat.Dense
	op.MulTo(&dst, v)
	checkProduct(t, "MulTo into empty dst", &dst, explicitH(x, k), v, 1e-13)
}

// checkSameBits runs run in both modes and every precision, with the
// vectorised kernel evaluation and without, at GOMAXPROCS 1 and then at
// GOMAXPROCS 2 with 0–3 workers, and fails unless every run gives the same
// bits as the GOMAXPROCS 1 run.
func checkSameBits(t *testing.T, run func(Options) []float64) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, mode := range []Mode{ModeDense, ModeMatrixFree} {
		for _, prec := range []Precision{Float64, Float32, Mixed} {
			for _, scalar := range []bool{false, true} {
				runtime.GOMAXPROCS(1)
				ref := run(Options{Mode: mode, Precision: prec, ScalarKernel: scalar})
				runtime.GOMAXPROCS(2)
				for _, w := range []int{0, 1, 2, 3} {
					got := run(Options{Mode: mode, Precision: prec, ScalarKernel: scalar, Workers: w})
					for i := range ref {
						if math.Float64bits(got[i]) != math.Float64bits(ref[i]) {
							t.Fatalf("%v %v scalar=%v workers=%d: element %d is %v, %v at GOMAXPROCS 1", mode, prec, scalar, w, i, got[i], ref[i])
						}
					}
				}
			}
		}
	}
}

// TestWithAllBLASThreads runs its function once and leaves products as they
// were: the same bits before and after (the BLAS is pinned again).
func TestWithAllBLASThreads(t *testing.T) {
	x := testX(300, 3, 2)
	op, err := NewOperator(x, testKernel(Matern32, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := randDense(300, 17, 3)
	before, after := mat.NewDense(300, 17, nil), mat.NewDense(300, 17, nil)
	op.MulTo(before, v)
	calls := 0
	WithAllBLASThreads(func() { calls++ })
	op.MulTo(after, v)
	if calls != 1 {
		t.Errorf("f called %d times", calls)
	}
	if !mat.Equal(before, after) {
		t.Error("a product differs after WithAllBLASThreads")
	}
}
