//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/gptest"
	"gonum.org/v1/gonum/mat"
)

// needGPU skips the test when no usable device is present.
func needGPU(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no usable GPU, skipping: %v", err)
	}
}

func randDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

func testKernel(f kernel.Family, d int, rng *rand.Rand) kernel.Kernel {
	h := kernel.DefaultHyper(d)
	for i := range h.Lengthscales {
		h.Lengthscales[i] = 0.5 + rng.Float64()*float64(d)/4
	}
	h.Signal, h.Noise = 1.3, 0.4
	return kernel.Kernel{Family: f, Hyper: h}
}

// relErr returns ‖got − want‖_F / ‖want‖_F.
func relErr(got, want mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(got, want)
	return mat.Norm(&d, 2) / mat.Norm(want, 2)
}

func relErrVec(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	return math.Sqrt(num / den)
}

// explicitH is H = K + σ²I from kernel.Kernel.At, the independent
// reference.
func explicitH(x *mat.Dense, k kernel.Kernel) *mat.Dense { return gptest.H(x, k, k.Hyper.Noise) }

type opCase struct {
	name string
	n, d int
	fam  kernel.Family
	mode kernel.Mode
	prec Precision
}

func (c opCase) tol() float64 {
	if c.prec == Float32 {
		return 2e-5
	}
	return 1e-10
}

// cases cover every kernel family, both modes, both precisions and the three
// kernel variants (d ≤ 8, d ≤ 32, generic), with n not a multiple of the
// 128-row blocks.
func cases() []opCase {
	var cs []opCase
	for _, fam := range []kernel.Family{kernel.Matern32, kernel.Matern12, kernel.Matern52, kernel.RBF} {
		for _, mode := range []kernel.Mode{kernel.ModeMatrixFree, kernel.ModeDense} {
			for _, prec := range []Precision{Float64, Float32} {
				cs = append(cs, opCase{n: 150, d: 3, fam: fam, mode: mode, prec: prec})
			}
		}
	}
	cs = append(cs,
		opCase{n: 131, d: 20, fam: kernel.Matern32, mode: kernel.ModeMatrixFree, prec: Float64},
		opCase{n: 131, d: 20, fam: kernel.RBF, mode: kernel.ModeDense, prec: Float32},
		opCase{n: 140, d: 40, fam: kernel.Matern52, mode: kernel.ModeMatrixFree, prec: Float64},
		opCase{n: 140, d: 40, fam: kernel.Matern12, mode: kernel.ModeDense, prec: Float64},
		opCase{n: 140, d: 40, fam: kernel.Matern32, mode: kernel.ModeMatrixFree, prec: Float32},
	)
	for i := range cs {
		c := &cs[i]
		c.name = fmt.Sprintf("%v/%v/%v/n%d_d%d", c.fam, c.mode, c.prec, c.n, c.d)
	}
	return cs
}

// pair makes the GPU operator and the CPU operator for the same X and θ.
func pair(t *testing.T, c opCase, seed uint64) (*Operator, *kernel.Operator, *mat.Dense, *rand.Rand) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	x := inputs(rng, c.n, c.d)
	g, cpu := operators(t, x, testKernel(c.fam, c.d, rng), Options{Mode: c.mode, Precision: c.prec})
	if g.Mode() != c.mode {
		t.Fatalf("Mode = %v, want %v", g.Mode(), c.mode)
	}
	return g, cpu, x, rng
}

// inputs returns random n×d inputs whose last row repeats the first: r = 0
// off the diagonal must behave.
func inputs(rng *rand.Rand, n, d int) *mat.Dense {
	x := randDense(rng, n, d, 1)
	for j := 0; j < d; j++ {
		x.Set(n-1, j, x.At(0, j))
	}
	return x
}

// operators makes the GPU operator with opt (closed when the test ends)
// and the dense CPU operator, its reference, for the same X and kernel.
func operators(t *testing.T, x *mat.Dense, k kernel.Kernel, opt Options) (*Operator, *kernel.Operator) {
	t.Helper()
	g, err := NewOperator(x, k, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cpu, err := kernel.NewOperator(x, k, kernel.Options{Mode: kernel.ModeDense})
	if err != nil {
		t.Fatal(err)
	}
	return g, cpu
}

// Every product of the GPU operator against the CPU operator, and MulTo
// against the explicit matrix.
func TestProductsMatchCPU(t *testing.T) {
	needGPU(t)
	testProductsMatchCPU(t)
}

// The same with the sums cut into many chunks (as on a large problem),
// forced here on small ones, so that the partial sums and gpnb_sumpart are
// checked too.
func TestProductsMatchCPUChunked(t *testing.T) {
	needGPU(t)
	defer forceChunks()()
	if nz, _ := chunking(1, 150); nz < 4 {
		t.Fatalf("chunking(1, 150) = %d chunks: the test must force several", nz)
	}
	testProductsMatchCPU(t)
}

// forceChunks makes every product of a few hundred terms run in several
// chunks; the returned function restores the defaults.
func forceChunks() func() {
	b, r, c := targetBlocks, rowsTargetBlocks, minChunk
	targetBlocks, rowsTargetBlocks, minChunk = 1<<20, 1<<20, 16
	return func() { targetBlocks, rowsTargetBlocks, minChunk = b, r, c }
}

// chunking covers the terms exactly with no empty chunk and respects its
// limits; pol's product gets enough blocks to fill an H100.
func TestChunking(t *testing.T) {
	for _, c := range []struct{ rowBlocks, nj int }{{27, 13500}, {2, 150}, {86, 43945}, {1000, 50000}, {1, 0}, {3, 5}, {16, 2000}} {
		nz, chunk := chunking(c.rowBlocks, c.nj)
		if nz < 1 || chunk < 1 || (nz-1)*chunk >= max(c.nj, 1) || nz*chunk < c.nj {
			t.Errorf("chunking(%d, %d) = %d chunks of %d: must cover %d terms with no empty chunk", c.rowBlocks, c.nj, nz, chunk, c.nj)
		}
		if nz > 1 && chunk < minChunk {
			t.Errorf("chunking(%d, %d): chunk %d < %d", c.rowBlocks, c.nj, chunk, minChunk)
		}
	}
	// pol's and keggdirected's dense products (blocks of mulkThreads·mulkRows
	// rows) fill an H100 in one wave of at most targetBlocks, at least two
	// blocks per multiprocessor; SGD's mini-batch of 1000 rows (250 blocks
	// of 4) gets many small blocks.
	rb := mulkThreads * mulkRows
	for _, c := range []struct{ rowBlocks, nj, min int }{{blocks(13500, rb), 13500, 264}, {blocks(43945, rb), 43945, 264}} {
		if nz, _ := chunking(c.rowBlocks, c.nj); c.rowBlocks*nz < c.min || c.rowBlocks*nz > max(targetBlocks, c.rowBlocks) {
			t.Errorf("chunking(%d, %d) = %d chunks: %d blocks", c.rowBlocks, c.nj, nz, c.rowBlocks*nz)
		}
	}
	if nz, _ := rowsChunking(250, 13500); 250*nz < 2048 {
		t.Errorf("rowsChunking(250, 13500) = %d chunks: too few blocks for a mini-batch", nz)
	}
}

func testProductsMatchCPU(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			g, cpu, x, rng := pair(t, c, 1)
			tol := c.tol()
			n := c.n
			v := randDense(rng, n, 17, 1)

			var got, want mat.Dense
			g.MulTo(&got, v)
			cpu.MulTo(&want, v)
			e := relErr(&got, &want)
			if !(e < tol) {
				t.Errorf("MulTo: relative error %.3g vs CPU, want < %g", e, tol)
			}
			t.Logf("MulTo relative error vs CPU: %.3g", e)
			var ref mat.Dense
			ref.Mul(explicitH(x, g.Kernel()), v)
			if e := relErr(&got, &ref); !(e < tol) {
				t.Errorf("MulTo: relative error %.3g vs explicit H·V, want < %g", e, tol)
			}

			// Rows: unsorted, repeated, crossing block boundaries.
			idx := []int{n - 1, 0, 5, 5, 129 % n, 77}
			var gr, cr mat.Dense
			g.RowsMulTo(&gr, idx, v)
			cpu.RowsMulTo(&cr, idx, v)
			if e := relErr(&gr, &cr); !(e < tol) {
				t.Errorf("RowsMulTo: relative error %.3g, want < %g", e, tol)
			}

			// Columns: H[:,idx]·D with a repeated index.
			dm := randDense(rng, len(idx), 3, 1)
			var gc, cc mat.Dense
			g.ColsMulTo(&gc, idx, dm)
			cpu.ColsMulTo(&cc, idx, dm)
			if e := relErr(&gc, &cc); !(e < tol) {
				t.Errorf("ColsMulTo: relative error %.3g, want < %g", e, tol)
			}

			// Block H[idx,idx] (upper triangle of a SymDense).
			var gb, cb mat.SymDense
			g.BlockTo(&gb, idx)
			cpu.BlockTo(&cb, idx)
			if e := relErr(&gb, &cb); !(e < tol) {
				t.Errorf("BlockTo: relative error %.3g, want < %g", e, tol)
			}

			gd, cd := make([]float64, n), make([]float64, n)
			g.DiagTo(gd)
			cpu.DiagTo(cd)
			if e := relErrVec(gd, cd); e > 1e-15 {
				t.Errorf("DiagTo: relative error %.3g", e)
			}

			// Cross products at 37 test points, one of them a training input.
			xs := randDense(rng, 37, c.d, 1.2)
			xs.SetRow(3, x.RawRowView(10))
			var gx, cx mat.Dense
			g.CrossMulTo(&gx, xs, v)
			cpu.CrossMulTo(&cx, xs, v)
			if e := relErr(&gx, &cx); !(e < tol) {
				t.Errorf("CrossMulTo: relative error %.3g, want < %g", e, tol)
			}
			if err := g.Err(); err != nil {
				t.Errorf("Err = %v after successful calls", err)
			}
		})
	}
}

// The fused derivative reductions against the CPU operator.
func TestReduceMatchesCPU(t *testing.T) {
	needGPU(t)
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			g, cpu, _, rng := pair(t, c, 2)
			tol := c.tol()
			if c.prec == Float32 {
				tol = 1e-4 // W and Z rounded to float32, sums in float64
			}
			a, b := randDense(rng, c.n, 17, 1), randDense(rng, c.n, 17, 1)
			got, want := make([]float64, c.d+2), make([]float64, c.d+2)
			g.Reduce(got, a, b)
			cpu.Reduce(want, a, b)
			e := relErrVec(got, want)
			if !(e < tol) {
				t.Errorf("Reduce: relative error %.3g, want < %g\n got %v\nwant %v", e, tol, got, want)
			}
			t.Logf("Reduce relative error vs CPU: %.3g", e)
			w := randDense(rng, c.n, c.n, 1)
			g.ReduceDense(got, w)
			cpu.ReduceDense(want, w)
			if e := relErrVec(got, want); !(e < tol) {
				t.Errorf("ReduceDense: relative error %.3g, want < %g\n got %v\nwant %v", e, tol, got, want)
			}
		})
	}
}

// Reduce against central finite differences of Σ_ab W_ab H_ab(θ) on explicit
// matrices: an independent check of the derivative formulas and of the
// order θ = (ℓ_1..ℓ_d, s, σ).
func TestReduceFiniteDifferences(t *testing.T) {
	needGPU(t)
	for _, fam := range []kernel.Family{kernel.Matern32, kernel.Matern12, kernel.Matern52, kernel.RBF} {
		t.Run(fam.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(fam)))
			n, d := 40, 3
			x := randDense(rng, n, d, 1)
			k := testKernel(fam, d, rng)
			g, err := NewOperator(x, k, Options{Mode: kernel.ModeMatrixFree})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			a, b := randDense(rng, n, 5, 1), randDense(rng, n, 5, 1)
			var w mat.Dense
			w.Mul(a, b.T())
			got := make([]float64, d+2)
			g.Reduce(got, a, b)
			f := func(theta []float64) float64 {
				h := explicitH(x, kernel.Kernel{Family: fam, Hyper: kernel.HyperFromVector(theta)})
				var s float64
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						s += w.At(i, j) * h.At(i, j)
					}
				}
				return s
			}
			theta := k.Hyper.Vector()
			for i := range theta {
				hs := 1e-5 * theta[i]
				p, m := append([]float64(nil), theta...), append([]float64(nil), theta...)
				p[i] += hs
				m[i] -= hs
				fd := (f(p) - f(m)) / (2 * hs)
				if math.Abs(got[i]-fd) > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("θ_%d: Reduce %.10g, finite difference %.10g", i, got[i], fd)
				}
			}
		})
	}
}

// Reduce with many columns: [A B] staged in many pieces of reduceCols.
func TestReduceManyColumns(t *testing.T) {
	needGPU(t)
	c := opCase{n: 70, d: 2, fam: kernel.Matern32, mode: kernel.ModeMatrixFree, prec: Float64}
	g, cpu, _, rng := pair(t, c, 4)
	a, b := randDense(rng, c.n, 20*reduceCols+3, 1), randDense(rng, c.n, 20*reduceCols+3, 1)
	got, want := make([]float64, c.d+2), make([]float64, c.d+2)
	g.Reduce(got, a, b)
	cpu.Reduce(want, a, b)
	if e := relErrVec(got, want); !(e < 1e-10) {
		t.Errorf("relative error %.3g\n got %v\nwant %v", e, got, want)
	}
}

// SetKernel rebuilds the operator for new θ: it then agrees with a CPU
// operator made for that θ, in both modes.
func TestSetKernel(t *testing.T) {
	needGPU(t)
	for _, mode := range []kernel.Mode{kernel.ModeMatrixFree, kernel.ModeDense} {
		c := opCase{n: 90, d: 4, fam: kernel.Matern52, mode: mode, prec: Float64}
		g, _, x, rng := pair(t, c, 5)
		k2 := testKernel(kernel.Matern52, 4, rng)
		k2.Hyper.Noise = 0.05
		if err := g.SetKernel(k2); err != nil {
			t.Fatal(err)
		}
		cpu, err := kernel.NewOperator(x, k2, kernel.Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := randDense(rng, c.n, 2, 1)
		var got, want mat.Dense
		g.MulTo(&got, v)
		cpu.MulTo(&want, v)
		if e := relErr(&got, &want); !(e < 1e-10) {
			t.Errorf("%v: after SetKernel, relative error %.3g", mode, e)
		}
		if g.NoiseVariance() != k2.Hyper.Noise*k2.Hyper.Noise {
			t.Errorf("NoiseVariance = %g", g.NoiseVariance())
		}
		// A bad θ is refused and leaves the operator as it was.
		bad := k2.Hyper.Clone()
		bad.Lengthscales[0] = math.NaN()
		if err := g.SetKernel(kernel.Kernel{Family: kernel.Matern52, Hyper: bad}); !errors.Is(err, kernel.ErrHyper) {
			t.Errorf("SetKernel(NaN ℓ) = %v, want ErrHyper", err)
		}
		g.MulTo(&got, v)
		if e := relErr(&got, &want); !(e < 1e-10) {
			t.Errorf("%v: a refused SetKernel changed the operator (error %.3g)", mode, e)
		}
	}
}

// The same call gives the same bits, run after run and whatever GOMAXPROCS.
func TestDeterministic(t *testing.T) {
	needGPU(t)
	c := opCase{n: 200, d: 5, fam: kernel.Matern32, mode: kernel.ModeMatrixFree, prec: Float64}
	g, _, _, rng := pair(t, c, 6)
	v := randDense(rng, c.n, 17, 1)
	a, b := randDense(rng, c.n, 17, 1), randDense(rng, c.n, 17, 1)
	run := func(procs int) (*mat.Dense, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var out mat.Dense
		g.MulTo(&out, v)
		r := make([]float64, c.d+2)
		g.Reduce(r, a, b)
		return &out, r
	}
	m1, r1 := run(1)
	m2, r2 := run(2)
	m3, r3 := run(2)
	if !mat.Equal(m1, m2) || !mat.Equal(m2, m3) {
		t.Error("MulTo differs between runs")
	}
	for i := range r1 {
		if r1[i] != r2[i] || r2[i] != r3[i] {
			t.Errorf("Reduce[%d] differs between runs: %v %v %v", i, r1[i], r2[i], r3[i])
		}
	}
}

// Bad input returns errors that say what to do; bad dimensions panic with a
// message, as they do for the CPU operator.
func TestErrors(t *testing.T) {
	needGPU(t)
	x := mat.NewDense(3, 2, []float64{0, 1, 2, 3, 4, 5})
	good := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(2)}
	nanX := mat.DenseCopyOf(x)
	nanX.Set(1, 1, math.NaN())
	wide := mat.NewDense(2, maxDims+1, nil)
	for _, tc := range []struct {
		name string
		x    *mat.Dense
		k    kernel.Kernel
		opt  Options
		want string
	}{
		{"nil X", nil, good, Options{}, "X is empty"},
		{"NaN", nanX, good, Options{}, "must be finite"},
		{"too wide", wide, kernel.Kernel{Family: kernel.RBF, Hyper: kernel.DefaultHyper(maxDims + 1)}, Options{}, "at most"},
		{"ℓ count", x, kernel.Kernel{Family: kernel.RBF, Hyper: kernel.DefaultHyper(3)}, Options{}, "length scales"},
		{"family", x, kernel.Kernel{Family: 99, Hyper: kernel.DefaultHyper(2)}, Options{}, "unknown family"},
		{"precision", x, good, Options{Precision: 7}, "unknown precision"},
		{"mixed precision", x, good, Options{Precision: kernel.Mixed}, "use --precision float32"},
		{"mode", x, good, Options{Mode: 9}, "unknown mode"},
		{"budget", x, good, Options{MemoryBudget: -1}, "MemoryBudget"},
		{"dense too big", x, good, Options{Mode: kernel.ModeDense, MemoryBudget: 10}, "budget"},
		{"device", x, good, Options{Device: 1 << 20}, "device"},
		{"negative device", x, good, Options{Device: -1}, "device"},
	} {
		o, err := NewOperator(tc.x, tc.k, tc.opt)
		if err == nil {
			o.Close()
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
	}

	o, err := NewOperator(x, good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r == nil {
				t.Errorf("%s: no panic", name)
			} else if !strings.Contains(fmt.Sprint(r), "cuda:") {
				t.Errorf("%s: panic %v does not name the package", name, r)
			}
		}()
		f()
	}
	v := mat.NewDense(3, 1, nil)
	mustPanic("MulTo rows", func() { o.MulTo(mat.NewDense(3, 1, nil), mat.NewDense(4, 1, nil)) })
	mustPanic("MulTo dst", func() { o.MulTo(mat.NewDense(2, 1, nil), v) })
	mustPanic("MulTo alias", func() { o.MulTo(v, v) })
	mustPanic("RowsMulTo idx", func() { o.RowsMulTo(mat.NewDense(1, 1, nil), []int{3}, v) })
	mustPanic("ColsMulTo D", func() { o.ColsMulTo(mat.NewDense(3, 1, nil), []int{0}, mat.NewDense(2, 1, nil)) })
	mustPanic("BlockTo idx", func() { o.BlockTo(mat.NewSymDense(1, nil), []int{-1}) })
	mustPanic("DiagTo", func() { o.DiagTo(make([]float64, 2)) })
	mustPanic("Reduce dst", func() { o.Reduce(make([]float64, 3), v, v) })
	mustPanic("ReduceDense W", func() { o.ReduceDense(make([]float64, 4), v) })
	mustPanic("CrossMulTo Xs", func() { o.CrossMulTo(mat.NewDense(1, 1, nil), mat.NewDense(1, 3, nil), v) })

	// After Close the methods fill NaN and report it through Err.
	o.Close()
	out := mat.NewDense(3, 1, nil)
	o.MulTo(out, mat.NewDense(3, 1, []float64{1, 2, 3}))
	if !math.IsNaN(out.At(0, 0)) || o.Err() == nil {
		t.Errorf("MulTo after Close: out %v, Err %v; want NaN and an error", out.RawMatrix().Data, o.Err())
	}
	if err := o.SetKernel(good); err == nil {
		t.Error("SetKernel after Close: no error")
	}
}

// Empty index lists and zero columns are no-ops, as on the CPU.
func TestEmpty(t *testing.T) {
	needGPU(t)
	c := opCase{n: 10, d: 2, fam: kernel.RBF, mode: kernel.ModeMatrixFree, prec: Float64}
	g, _, _, rng := pair(t, c, 8)
	v := randDense(rng, c.n, 2, 1)
	var rows mat.Dense
	g.RowsMulTo(&rows, nil, v)
	var blk mat.SymDense
	g.BlockTo(&blk, nil)
	r := make([]float64, c.d+2)
	z := mat.NewDense(c.n, 1, nil)
	g.Reduce(r, z, z)
	for i, x := range r {
		if x != 0 {
			t.Errorf("Reduce with W = 0: dst[%d] = %g", i, x)
		}
	}
	if g.Err() != nil {
		t.Error(g.Err())
	}
}

func TestDevices(t *testing.T) {
	needGPU(t)
	ds, err := Devices()
	if err != nil || len(ds) == 0 {
		t.Fatalf("Devices = %v, %v", ds, err)
	}
	for _, d := range ds {
		if d.Name == "" || d.Major < 6 {
			t.Errorf("implausible device %+v", d)
		}
		t.Log(d)
	}
}

// Backend builds operators for gpnb.WithBackend.
func TestBackend(t *testing.T) {
	needGPU(t)
	x := mat.NewDense(4, 1, []float64{0, 1, 2, 3})
	op, err := Backend(Options{Precision: Float32})(x, kernel.Kernel{Family: kernel.RBF, Hyper: kernel.DefaultHyper(1)})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := op.(*Operator)
	if !ok || g.Size() != 4 || g.Precision() != Float32 {
		t.Fatalf("Backend built %T (size %d)", op, op.Size())
	}
	// Step records name it so, with the GPU, and readers tell the GPU's
	// steps by the prefix.
	if d, want := kernel.Describe(op), kernel.GPUStoragePrefix+"dense float32 on "+g.Device().Label(); d != want {
		t.Errorf("Describe = %q, want %q", d, want)
	}
	if err := g.Close(); err != nil {
		t.Error(err)
	}
}

// Work counts products, rows and kernel values as the CPU operator does.
func TestWork(t *testing.T) {
	needGPU(t)
	c := opCase{n: 50, d: 2, fam: kernel.Matern32, mode: kernel.ModeMatrixFree, prec: Float64}
	g, _, _, rng := pair(t, c, 10)
	w0 := g.Work()
	var out, rows mat.Dense
	g.MulTo(&out, randDense(rng, c.n, 17, 1))
	g.RowsMulTo(&rows, []int{1, 2, 3}, randDense(rng, c.n, 2, 1))
	w := g.Work()
	if got := w.Products - w0.Products; got != 17 {
		t.Errorf("Products += %d, want 17", got)
	}
	if got := w.RowsEvaluated - w0.RowsEvaluated; got != int64(c.n)+3 {
		t.Errorf("RowsEvaluated += %d, want %d", got, c.n+3)
	}
	// One column group for 17 columns, one for 2.
	if got, want := w.KernelEvals-w0.KernelEvals, int64(c.n*c.n+3*c.n); got != want {
		t.Errorf("KernelEvals += %d, want %d", got, want)
	}
}
