//go:build cuda || cudaemu

package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/mat"
)

// spacePair is a device Space and solvers.HostSpace over the CPU operator
// for the same X and θ, with helpers that make the same random block in
// both.
type spacePair struct {
	t    *testing.T
	g    *Operator
	cpu  *kernel.Operator
	dev  solvers.Space
	host solvers.Space
	rng  *rand.Rand
}

func newSpacePair(t *testing.T, n, d int, mode kernel.Mode, prec Precision, seed uint64) *spacePair {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 11))
	x := inputs(rng, n, d)
	g, cpu := operators(t, x, testKernel(kernel.Matern32, d, rng), Options{Mode: mode, Precision: prec})
	dev, err := g.NewSpace()
	if err != nil {
		t.Fatal(err)
	}
	return &spacePair{t: t, g: g, cpu: cpu, dev: dev, host: solvers.HostSpace(cpu), rng: rng}
}

// bpair is a block in both spaces.
type bpair struct{ d, h solvers.Block }

func (p *spacePair) block(r, c int, fill func(i, j int) float64) bpair {
	p.t.Helper()
	data := make([]float64, r*c)
	for i := range data {
		data[i] = fill(i/c, i%c)
	}
	d, err := p.dev.NewBlock(r, c)
	if err != nil {
		p.t.Fatal(err)
	}
	h, err := p.host.NewBlock(r, c)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.dev.Upload(d, data); err != nil {
		p.t.Fatal(err)
	}
	if err := p.host.Upload(h, data); err != nil {
		p.t.Fatal(err)
	}
	return bpair{d, h}
}

func (p *spacePair) rand(r, c int) bpair {
	return p.block(r, c, func(int, int) float64 { return 2*p.rng.Float64() - 1 })
}

func (p *spacePair) index(idx []int) (solvers.Index, solvers.Index) {
	p.t.Helper()
	d, err := p.dev.NewIndex(idx)
	if err != nil {
		p.t.Fatal(err)
	}
	h, err := p.host.NewIndex(idx)
	if err != nil {
		p.t.Fatal(err)
	}
	return d, h
}

// get returns the device and host contents of a block.
func (p *spacePair) get(b bpair) (dv, hv []float64) {
	p.t.Helper()
	r, c := b.h.Dims()
	dv, hv = make([]float64, r*c), make([]float64, r*c)
	if err := p.dev.Download(dv, b.d); err != nil {
		p.t.Fatal(err)
	}
	if err := p.host.Download(hv, b.h); err != nil {
		p.t.Fatal(err)
	}
	return dv, hv
}

// same checks that a block has the same bits in both spaces.
func (p *spacePair) same(what string, b bpair) {
	p.t.Helper()
	dv, hv := p.get(b)
	for i := range dv {
		if math.Float64bits(dv[i]) != math.Float64bits(hv[i]) {
			_, c := b.h.Dims()
			p.t.Fatalf("%s: (%d,%d) = %v on the device, %v on the host", what, i/c, i%c, dv[i], hv[i])
		}
	}
}

// near checks that a block agrees to tol relative to each column's norm
// (and exactly in the columns not selected).
func (p *spacePair) near(what string, b bpair, tol float64) {
	p.t.Helper()
	dv, hv := p.get(b)
	r, c := b.h.Dims()
	colsNorm(p.t, what+" against the host", dv, hv, r, c, tol)
}

// Every operation of the device Space against solvers.HostSpace on random
// inputs: the element-wise ones bit for bit, Dots and the products to 1e-12
// (float64) relative, with every column selection the solvers use, in both
// operator modes, with products cut into several chunks, and with more
// columns than one product group takes.
func TestSpaceOpsMatchHost(t *testing.T) {
	needGPU(t)
	type tc struct {
		name    string
		n, d, m int
		mode    kernel.Mode
		prec    Precision
		chunks  bool
	}
	cases := []tc{
		{"dense", 150, 3, 5, kernel.ModeDense, Float64, false},
		{"matrixfree", 150, 3, 5, kernel.ModeMatrixFree, Float64, false},
		{"dense/chunked", 150, 3, 5, kernel.ModeDense, Float64, true},
		{"matrixfree/d20/chunked", 140, 20, 5, kernel.ModeMatrixFree, Float64, true},
		{"dense/37cols", 70, 2, 37, kernel.ModeDense, Float64, false},
		{"dense/float32", 150, 3, 5, kernel.ModeDense, Float32, false},
		{"matrixfree/float32", 150, 3, 5, kernel.ModeMatrixFree, Float32, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.chunks {
				defer forceChunks()()
			}
			p := newSpacePair(t, c.n, c.d, c.mode, c.prec, 1)
			defer p.dev.Close()
			n, m := c.n, c.m
			prodTol := 1e-12
			if c.prec == Float32 {
				prodTol = 1e-6 // K (and Z) rounded to float32
			}
			rows := []int{2, 5, 11, 12, 30, 64, 65, n - 1}
			ixd, ixh := p.index(rows)
			k := len(rows)
			subsets := [][]int{nil, {0, 2, 3, 4}, {1, 3}}
			if m > 32 {
				all := make([]int, 0, m)
				for j := 0; j < m; j++ {
					if j != 7 {
						all = append(all, j)
					}
				}
				subsets = [][]int{nil, all}
			}
			for _, cols := range subsets {
				sel := len(cols)
				if cols == nil {
					sel = m
				}
				coef := make([]float64, sel)
				for a := range coef {
					coef[a] = []float64{0.5, -2, 0, 1.25}[a%4]
				}
				label := func(op string) string { return fmt.Sprintf("%s cols %v", op, cols) }

				// Element-wise: the host's bits.
				x, y := p.rand(n, m), p.rand(n, m)
				p.dev.Axpy(y.d, coef, x.d, cols)
				p.host.Axpy(y.h, coef, x.h, cols)
				p.same(label("Axpy"), y)
				p.dev.Xpby(y.d, x.d, coef, cols)
				p.host.Xpby(y.h, x.h, coef, cols)
				p.same(label("Xpby"), y)
				z := p.block(n, m, func(i, j int) float64 {
					if i == 3 {
						return math.NaN() // Scale by 0 gives +0 even here
					}
					return float64(i - j)
				})
				p.dev.Scale(z.d, coef, cols)
				p.host.Scale(z.h, coef, cols)
				p.same(label("Scale"), z)
				p.dev.Copy(y.d, x.d, cols)
				p.host.Copy(y.h, x.h, cols)
				p.same(label("Copy"), y)
				g := p.rand(k, m)
				p.dev.GatherRows(g.d, ixd, x.d, cols)
				p.host.GatherRows(g.h, ixh, x.h, cols)
				p.same(label("GatherRows"), g)
				g = p.rand(k, m)
				p.dev.ScatterRows(y.d, ixd, g.d, cols)
				p.host.ScatterRows(y.h, ixh, g.h, cols)
				p.same(label("ScatterRows"), y)
				p.dev.AxpyRows(y.d, ixd, coef, g.d, cols)
				p.host.AxpyRows(y.h, ixh, coef, g.h, cols)
				p.same(label("AxpyRows"), y)
				dcol := p.rand(n, 1)
				p.dev.ScaleRows(y.d, dcol.d, cols)
				p.host.ScaleRows(y.h, dcol.h, cols)
				p.same(label("ScaleRows"), y)

				// Dots: 1e-12 of Σ|x·y| per entry, one segment or AP's.
				for _, segs := range [][]int{nil, {0, n / 3, n / 3, 2 * n / 3, n}} {
					nseg := 1
					if segs != nil {
						nseg = len(segs) - 1
					}
					got, want := make([]float64, nseg*sel), make([]float64, nseg*sel)
					if err := p.dev.Dots(got, x.d, y.d, cols, segs); err != nil {
						t.Fatal(err)
					}
					if err := p.host.Dots(want, x.h, y.h, cols, segs); err != nil {
						t.Fatal(err)
					}
					xs, _ := p.get(x)
					ys, _ := p.get(y)
					for s := 0; s < nseg; s++ {
						lo, hi := 0, n
						if segs != nil {
							lo, hi = segs[s], segs[s+1]
						}
						for a := 0; a < sel; a++ {
							j := a
							if cols != nil {
								j = cols[a]
							}
							abs := 0.0
							for i := lo; i < hi; i++ {
								abs += math.Abs(xs[i*m+j] * ys[i*m+j])
							}
							if e := math.Abs(got[s*sel+a] - want[s*sel+a]); !(e <= 1e-12*abs) {
								t.Fatalf("%s segs %v: [%d,%d] = %v, host %v", label("Dots"), segs, s, a, got[s*sel+a], want[s*sel+a])
							}
						}
					}
				}

				// Products with H.
				out := p.rand(n, m)
				p.dev.Mul(out.d, x.d, cols)
				p.host.Mul(out.h, x.h, cols)
				p.near(label("Mul"), out, prodTol)
				gr := p.rand(k, m)
				p.dev.MulRows(gr.d, ixd, x.d, cols)
				p.host.MulRows(gr.h, ixh, x.h, cols)
				p.near(label("MulRows"), gr, prodTol)
				dd := p.rand(k, m)
				out = p.rand(n, m)
				p.dev.MulCols(out.d, ixd, dd.d, cols)
				p.host.MulCols(out.h, ixh, dd.h, cols)
				p.near(label("MulCols"), out, prodTol)

				// Small dense algebra (the preconditioner's).
				const r = 4
				xr := p.rand(n, r)
				tt := p.rand(r, m)
				p.dev.MulT(tt.d, xr.d, x.d, cols)
				p.host.MulT(tt.h, xr.h, x.h, cols)
				p.near(label("MulT"), tt, 1e-12)
				out = p.rand(n, m)
				p.dev.MulAdd(out.d, -0.75, xr.d, tt.d, cols)
				p.host.MulAdd(out.h, -0.75, xr.h, tt.h, cols)
				p.near(label("MulAdd"), out, 1e-12)

				// Principal block, its factor, and Solve (also in place).
				f := p.rand(k, k)
				p.dev.Principal(f.d, ixd)
				p.host.Principal(f.h, ixh)
				fd, fh := p.get(f)
				for a := 0; a < k; a++ {
					for b := a; b < k; b++ {
						if e := math.Abs(fd[a*k+b] - fh[a*k+b]); e > prodTol*math.Abs(fh[a*k+b]) {
							t.Fatalf("Principal (%d,%d) = %v, host %v", a, b, fd[a*k+b], fh[a*k+b])
						}
					}
				}
				if err := p.dev.Factorize(f.d); err != nil {
					t.Fatal(err)
				}
				if err := p.host.Factorize(f.h); err != nil {
					t.Fatal(err)
				}
				src := p.rand(k, m)
				sol := p.rand(k, m)
				p.dev.Solve(sol.d, f.d, src.d, cols)
				p.host.Solve(sol.h, f.h, src.h, cols)
				p.near(label("Solve"), sol, 100*prodTol) // cond(H[I,I]) ≈ 10
				p.dev.Solve(src.d, f.d, src.d, cols)
				p.host.Solve(src.h, f.h, src.h, cols)
				p.near(label("Solve in place"), src, 100*prodTol)
			}
		})
	}
}

// Factorize on the device: the factor of larger blocks (several 32-blocks
// of the right-looking loop and of the triangular inverse) solves to 1e-12,
// a NaN is ErrNotFinite, an indefinite block ErrNotPositiveDefinite, and the
// strict lower triangle is never read.
func TestSpaceFactorize(t *testing.T) {
	needGPU(t)
	p := newSpacePair(t, 120, 3, kernel.ModeDense, Float64, 2)
	defer p.dev.Close()
	for _, k := range []int{1, 31, 32, 33, 100} {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = i * (120 / k)
		}
		ixd, ixh := p.index(idx)
		f := p.block(k, k, func(int, int) float64 { return math.NaN() }) // lower triangle: garbage
		p.dev.Principal(f.d, ixd)
		p.host.Principal(f.h, ixh)
		if err := p.dev.Factorize(f.d); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if err := p.host.Factorize(f.h); err != nil {
			t.Fatal(err)
		}
		src := p.rand(k, 3)
		sol := p.rand(k, 3)
		p.dev.Solve(sol.d, f.d, src.d, nil)
		p.host.Solve(sol.h, f.h, src.h, nil)
		p.near(fmt.Sprintf("Solve k=%d", k), sol, 1e-11)
	}
	bad := p.block(3, 3, func(i, j int) float64 { return []float64{1, math.NaN(), 0, 0, 1, 0, 0, 0, 1}[i*3+j] })
	if err := p.dev.Factorize(bad.d); !errors.Is(err, solvers.ErrNotFinite) {
		t.Fatalf("Factorize with NaN: %v", err)
	}
	ind := p.block(40, 40, func(i, j int) float64 {
		if i == j {
			return 1
		}
		if i == 35 && j == 36 {
			return 2 // the leading 37×37 block is indefinite
		}
		return 0
	})
	if err := p.dev.Factorize(ind.d); !errors.Is(err, solvers.ErrNotPositiveDefinite) {
		t.Fatalf("Factorize of an indefinite block: %v", err)
	}
	low := p.block(2, 2, func(i, j int) float64 { return []float64{4, 2, math.NaN(), 3}[i*2+j] })
	if err := p.dev.Factorize(low.d); err != nil {
		t.Fatalf("Factorize read the lower triangle: %v", err)
	}
	// After a failed factorisation the space goes on working.
	out := p.rand(120, 2)
	x := p.rand(120, 2)
	p.dev.Mul(out.d, x.d, nil)
	p.host.Mul(out.h, x.h, nil)
	p.near("Mul after a failed Factorize", out, 1e-12)
}

// solveProblem is a kernel system for the solvers: the GPU operator, the
// CPU operator of the same H, and m right-hand sides.
func solveProblem(t *testing.T, n, m int, mode kernel.Mode) (*Operator, *kernel.Operator, *mat.Dense) {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 3))
	x := randDense(rng, n, 3, 1)
	// Noise 1: H's condition number is about 30, so CG's sensitivity to
	// rounding (two runs that differ by the order of a sum drift apart by
	// about cond^iterations·ε) leaves the device and CPU runs within 1e-10
	// of each other at a tight tolerance.
	g, cpu := operators(t, x, kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(3)}, Options{Mode: mode})
	return g, cpu, randDense(rng, n, m, 1)
}

// solverMethods are the methods the device tests run: the paper's three and
// CG with the preconditioner (MulT, MulAdd, ScaleRows, Solve of a small
// factor in every iteration).
func solverMethods() []solvers.Method {
	return []solvers.Method{
		solvers.CG{},
		solvers.CG{PrecondRank: 10},
		solvers.AP{BlockSize: 64},
		solvers.SGD{BatchSize: 40, Seed: 3},
		solvers.SGD{BatchSize: 40, RawLearningRate: 2, Seed: 3},
	}
}

// Each solver on the device agrees with the same solver on the CPU
// operator: within 1e-10 relative after a few iterations, and at
// convergence (same iteration count, same verdict).
func TestSolversOnDeviceMatchCPU(t *testing.T) {
	needGPU(t)
	for _, mode := range []kernel.Mode{kernel.ModeDense, kernel.ModeMatrixFree} {
		g, cpu, b := solveProblem(t, 200, 5, mode)
		for _, meth := range solverMethods() {
			t.Run(fmt.Sprintf("%v/%s%+v", mode, meth.Name(), meth), func(t *testing.T) {
				set := solvers.Settings{RelTolMean: 1e-12, RelTolProbes: 1e-11, MaxIterations: 4000}
				sgd := meth.Name() == "sgd"
				if sgd { // slow to converge: compare where the budget ends
					set.MaxIterations = 200
				}
				dev, err := meth.Start(g, b, nil, set)
				if err != nil {
					t.Fatal(err)
				}
				defer dev.Close()
				host, err := meth.Start(cpu, b, nil, set)
				if err != nil {
					t.Fatal(err)
				}
				defer host.Close()
				for i := 0; i < 6; i++ {
					if err := dev.Iterate(); err != nil {
						t.Fatal(err)
					}
					if err := host.Iterate(); err != nil {
						t.Fatal(err)
					}
				}
				if e := relErrVec(dev.State().V, host.State().V); !(e < 1e-10) {
					t.Fatalf("after 6 iterations V differs from the CPU's by %.3g relative", e)
				}
				if err := solvers.Run(context.Background(), dev); err != nil {
					t.Fatal(err)
				}
				if err := solvers.Run(context.Background(), host); err != nil {
					t.Fatal(err)
				}
				ds, hs := dev.State(), host.State()
				if ds.Converged != hs.Converged || ds.Iteration != hs.Iteration {
					t.Fatalf("device: %d iterations, converged %v; CPU: %d, %v", ds.Iteration, ds.Converged, hs.Iteration, hs.Converged)
				}
				if !ds.Converged && !sgd {
					t.Fatalf("no convergence in %d iterations", ds.Iteration)
				}
				if e := relErrVec(ds.V, hs.V); !(e < 1e-10) {
					t.Fatalf("at convergence V differs from the CPU's by %.3g relative", e)
				}
				t.Logf("%d iterations; V within %.2g of the CPU's", ds.Iteration, relErrVec(ds.V, hs.V))
			})
		}
	}
}

// Pause, State and Resume on the device: a solve resumed from a State saved
// mid-way ends with the bits of the uninterrupted solve; and the same solve
// twice gives the same bits.
func TestSolversOnDeviceResumeBits(t *testing.T) {
	needGPU(t)
	g, _, b := solveProblem(t, 150, 4, kernel.ModeDense)
	for _, meth := range solverMethods() {
		t.Run(fmt.Sprintf("%s%+v", meth.Name(), meth), func(t *testing.T) {
			set := solvers.Settings{RelTolMean: 1e-8, RelTolProbes: 1e-6, MaxIterations: 60}
			run := func() *solvers.State {
				sv, err := meth.Start(g, b, nil, set)
				if err != nil {
					t.Fatal(err)
				}
				defer sv.Close()
				if err := solvers.Run(context.Background(), sv); err != nil {
					t.Fatal(err)
				}
				return sv.State().Clone()
			}
			full, again := run(), run()
			sv, err := meth.Start(g, b, nil, set)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 7 && !sv.Done(); i++ {
				if err := sv.Iterate(); err != nil {
					t.Fatal(err)
				}
			}
			mid := sv.State().Clone()
			if err := sv.Close(); err != nil {
				t.Fatal(err)
			}
			res, err := solvers.Resume(g, meth, b, mid)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			if err := solvers.Run(context.Background(), res); err != nil {
				t.Fatal(err)
			}
			got := res.State()
			for name, pair := range map[string][2][]float64{
				"V": {got.V, full.V}, "R": {got.R, full.R}, "again V": {again.V, full.V}, "again R": {again.R, full.R},
			} {
				if !floatbits.Equal(pair[0], pair[1]) {
					t.Errorf("%s differs in its bits", name)
				}
			}
			if got.Iteration != full.Iteration || !floatbits.Equal(got.RelResiduals, full.RelResiduals) {
				t.Errorf("resumed: iteration %d residuals %v; uninterrupted: %d %v", got.Iteration, got.RelResiduals, full.Iteration, full.RelResiduals)
			}
		})
	}
}

// A Space after Close: the methods with an error result return one, the
// others panic; the operator's Close closes its open spaces.
func TestSpaceClosed(t *testing.T) {
	needGPU(t)
	p := newSpacePair(t, 40, 2, kernel.ModeDense, Float64, 4)
	x := p.rand(40, 2)
	if err := p.dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.dev.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.dev.Dots(make([]float64, 2), x.d, x.d, nil, nil); !errors.Is(err, errSpaceClosed) {
		t.Errorf("Dots after Close: %v", err)
	}
	if _, err := p.dev.NewBlock(2, 2); !errors.Is(err, errSpaceClosed) {
		t.Errorf("NewBlock after Close: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("Mul after Close did not panic")
			}
		}()
		p.dev.Mul(x.d, x.d, nil)
	}()
	sp, err := p.g.NewSpace()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.g.Close(); err != nil {
		t.Fatal(err)
	}
	if !sp.(*Space).closed {
		t.Error("the operator's Close left a space open")
	}
	if _, err := p.g.NewSpace(); err == nil {
		t.Error("NewSpace on a closed operator: no error")
	}
}
