//go:build cuda || cudaemu

package cuda

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/mat"
)

// benchSizes returns GPNB_CUDA_BENCH_N (a comma-separated list; default
// 13500 and 43945, the n of pol and keggdirected, on a GPU, 512 in the
// emulation), the number of right-hand sides (17: y and 16 probes) and d.
func benchSizes(b *testing.B) (ns []int, m, d int) {
	m, d = 17, 8
	s := os.Getenv("GPNB_CUDA_BENCH_N")
	if s == "" {
		drv, err := getDriver(envDevice())
		if err == nil && strings.Contains(drv.info().Name, "emulation") {
			return []int{512}, m, d
		}
		return []int{13500, 43945}, m, d
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("GPNB_CUDA_BENCH_N=%q: want positive integers, comma-separated", s)
		}
		ns = append(ns, v)
	}
	return ns, m, d
}

// benchOperator returns the operator a benchmark measures: n random points
// in d dimensions from rng, Matérn-3/2 with θ = 1, on the device of
// GPNB_CUDA_DEVICE, closed when b's run ends. An operator the device
// cannot hold (the dense cache does not fit, say) skips b.
func benchOperator(b *testing.B, rng *rand.Rand, n, d int, opt Options) *Operator {
	b.Helper()
	opt.Device = envDevice()
	o, err := NewOperator(randDense(rng, n, d, 1), kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}, opt)
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { o.Close() })
	return o
}

// benchFirst starts a host-level benchmark: benchOperator on the first size
// of benchSizes, with the generator (seeded s1, s2) that then draws the
// right-hand sides, and the number of them.
func benchFirst(b *testing.B, s1, s2 uint64, opt Options) (o *Operator, rng *rand.Rand, m int) {
	needGPU(b)
	ns, m, d := benchSizes(b)
	rng = rand.New(rand.NewPCG(s1, s2))
	return benchOperator(b, rng, ns[0], d, opt), rng, m
}

// BenchmarkSpaceMul measures the device-resident product of a solve, the
// Space's Mul of 17 columns (no host copies), timed by CUDA events around
// the launches alone, and reports it against the device's memory bandwidth:
// the bytes of K read per product (n·ldk·elem; dense mode) per second, and
// for the matrix-free mode the kernel values per second. Run on the GPU
// (results/gpu/quick.sh):
//
//	./cuda.test -test.run '^$' -test.bench SpaceMul -test.benchtime 20x
//
// With GPNB_CUDA_BENCH_BLOCKS=384,768,... it measures each product once per
// chunking target (targetBlocks: how many blocks a column product aims at),
// the sweep of quick.sh's blocks stage.
func BenchmarkSpaceMul(b *testing.B) {
	needGPU(b)
	ns, m, d := benchSizes(b)
	blocks, named := benchBlocks(b)
	defer func(t int) { targetBlocks = t }(targetBlocks)
	for _, n := range ns {
		for _, c := range []struct {
			mode kernel.Mode
			prec Precision
		}{{kernel.ModeDense, Float64}, {kernel.ModeDense, Float32}, {kernel.ModeMatrixFree, Float64}} {
			for _, tb := range blocks {
				name := "n=" + strconv.Itoa(n) + "/" + c.mode.String() + "/" + c.prec.String()
				if named {
					name += "/blocks=" + strconv.Itoa(tb)
				}
				targetBlocks = tb
				benchSpaceMul(b, name, n, m, d, c.mode, c.prec)
			}
		}
	}
}

// benchBlocks returns the chunking targets BenchmarkSpaceMul measures:
// GPNB_CUDA_BENCH_BLOCKS (a comma-separated list of targetBlocks values, a
// sweep that says how many blocks keep the memory busy; the sub-benchmarks
// are then named blocks=N), or the default targetBlocks alone.
func benchBlocks(b *testing.B) (blocks []int, named bool) {
	s := os.Getenv("GPNB_CUDA_BENCH_BLOCKS")
	if s == "" {
		return []int{targetBlocks}, false
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("GPNB_CUDA_BENCH_BLOCKS=%q: want positive integers, comma-separated", s)
		}
		blocks = append(blocks, v)
	}
	return blocks, true
}

// benchSpaceMul is one sub-benchmark of BenchmarkSpaceMul.
func benchSpaceMul(b *testing.B, name string, n, m, d int, mode kernel.Mode, prec Precision) {
	b.Run(name, func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		o := benchOperator(b, rng, n, d, Options{Mode: mode, Precision: prec})
		sp, err := o.NewSpace()
		if err != nil {
			b.Fatal(err)
		}
		defer sp.Close()
		v, _ := sp.NewBlock(n, m)
		hv, _ := sp.NewBlock(n, m)
		if err := sp.Upload(v, randDense(rng, n, m, 1).RawMatrix().Data); err != nil {
			b.Fatal(err)
		}
		sp.Mul(hv, v, nil) // warm up
		s := sp.(*Space)
		if err := s.syncReset(); err != nil {
			b.Fatal(err)
		}
		start, err := o.drv.record()
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sp.Mul(hv, v, nil)
		}
		end, err := o.drv.record()
		if err != nil {
			b.Fatal(err)
		}
		if err := s.syncReset(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		ms, err := o.drv.elapsed(start, end)
		if err != nil {
			b.Fatal(err)
		}
		o.drv.freeEvent(start)
		o.drv.freeEvent(end)
		sec := ms / 1e3 / float64(b.N)
		b.ReportMetric(sec*1e3, "ms/product")
		if mode == kernel.ModeDense {
			bytes := float64(n) * float64(o.ldk) * float64(o.elem)
			b.ReportMetric(bytes/sec/1e9, "GB/s")
			if bw := o.Device().Bandwidth(); bw > 0 {
				b.ReportMetric(100*bytes/sec/bw, "%bandwidth")
			}
		} else {
			b.ReportMetric(float64(n)*float64(n)/sec/1e9, "Gpairs/s")
		}
	})
}

// BenchmarkMulTo measures the host-level H·V for 17 right-hand sides,
// copies to and from the device included (what a caller outside a solver
// pays), wall clock.
func BenchmarkMulTo(b *testing.B) {
	o, rng, m := benchFirst(b, 1, 2, Options{})
	n := o.n
	v := randDense(rng, n, m, 1)
	dst := mat.NewDense(n, m, nil)
	o.MulTo(dst, v)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		o.MulTo(dst, v)
	}
	b.ReportMetric(time.Since(start).Seconds()*1e3/float64(b.N), "ms/product")
	if err := o.Err(); err != nil {
		b.Fatal(err)
	}
}

// benchD is the d of the benchmarks that depend on it (Reduce, Step):
// pol's 26.
const benchD = 26

// BenchmarkReduce measures the fused gradient reduction (Operator.Reduce,
// the Hutchinson estimator's W = A·Bᵀ with c = 17 columns) at d = 26, on
// float64 and float32 z, at the sizes of benchSizes: ms per reduction as
// the device's CUDA events time it (Work's ReduceSeconds: the copies of A
// and B in, the kernels, the d+2 results out), wall ms (the host's copies
// into pinned memory too), and pairs of the upper triangle per second.
func BenchmarkReduce(b *testing.B) {
	benchAtD(b, kernel.ModeMatrixFree, 3, func(b *testing.B, o *Operator, rng *rand.Rand, n, m int) {
		a, bb := randDense(rng, n, m, 1), randDense(rng, n, m, 1)
		dst := make([]float64, o.d+2)
		o.Reduce(dst, a, bb)
		w0 := o.Work()
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			o.Reduce(dst, a, bb)
		}
		wall := time.Since(start).Seconds() / float64(b.N)
		dev := (o.Work().ReduceSeconds - w0.ReduceSeconds) / float64(b.N)
		b.ReportMetric(dev*1e3, "ms/reduce")
		b.ReportMetric(wall*1e3, "wall-ms/reduce")
		b.ReportMetric(float64(n)*float64(n+1)/2/dev/1e9, "Gpairs/s")
		if err := o.Err(); err != nil {
			b.Fatal(err)
		}
	})
}

// benchAtD runs f as one sub-benchmark per size of benchSizes and per
// precision (float64, float32), named n=N/d=26/PRECISION, on an operator of
// mode for n random points in benchD dimensions (benchOperator, the
// generator seeded seed, seed+1), with m right-hand sides.
func benchAtD(b *testing.B, mode kernel.Mode, seed uint64, f func(b *testing.B, o *Operator, rng *rand.Rand, n, m int)) {
	needGPU(b)
	ns, m, _ := benchSizes(b)
	for _, n := range ns {
		for _, prec := range []Precision{Float64, Float32} {
			b.Run("n="+strconv.Itoa(n)+"/d="+strconv.Itoa(benchD)+"/"+prec.String(), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(seed, seed+1))
				f(b, benchOperator(b, rng, n, benchD, Options{Mode: mode, Precision: prec}), rng, n, m)
			})
		}
	}
}

// BenchmarkStep measures where an Adam step of a warm-started CG solve goes
// on the device, at d = 26 and 17 right-hand sides, each part timed by CUDA
// events around its work: the K build for a new θ (SetKernel), the solver's
// Start (the initial residual B − H·V0 of the warm start: one product of
// all columns), an iteration (the mean of 20), and the gradient's Reduce
// (the solution downloaded, A and B copied in). Dense float64 and float32.
func BenchmarkStep(b *testing.B) {
	benchAtD(b, kernel.ModeDense, 7, func(b *testing.B, o *Operator, rng *rand.Rand, n, m int) {
		rhs, v0 := randDense(rng, n, m, 1), randDense(rng, n, m, 0.1)
		const iters = 20
		set := solvers.Settings{RelTolMean: 1e-300, RelTolProbes: 1e-300, MaxIterations: iters}
		var build, begin, iter, reduce float64
		dst := make([]float64, o.d+2)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := o.Kernel()
			k.Hyper.Signal *= 1.001
			w0 := o.Work()
			if err := o.SetKernel(k); err != nil {
				b.Fatal(err)
			}
			build += o.Work().BuildSeconds - w0.BuildSeconds
			var sv solvers.Solver
			sec, err := o.timed(func() (err error) {
				sv, err = solvers.CG{}.Start(o, rhs, v0, set)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			begin += sec
			sec, err = o.timed(func() error { return solvers.Run(context.Background(), sv) })
			if err != nil {
				b.Fatal(err)
			}
			iter += sec / iters
			w0 = o.Work()
			o.Reduce(dst, sv.Solution(), rhs)
			reduce += o.Work().ReduceSeconds - w0.ReduceSeconds
			if err := sv.Close(); err != nil {
				b.Fatal(err)
			}
		}
		nb := float64(b.N) / 1e3
		b.ReportMetric(build/nb, "ms/build")
		b.ReportMetric(begin/nb, "ms/start")
		b.ReportMetric(iter/nb, "ms/iteration")
		b.ReportMetric(reduce/nb, "ms/reduce")
		if err := o.Err(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCGIteration measures one iteration of CG on the device (a Mul of
// 17 columns and CGStep: two dots, α and β, the vector updates, one wait),
// wall clock: the per-iteration cost a solve pays, launches and the
// synchronisation included.
func BenchmarkCGIteration(b *testing.B) {
	o, rng, m := benchFirst(b, 5, 6, Options{})
	sv, err := solvers.CG{}.Start(o, randDense(rng, o.n, m, 1), nil, solvers.Settings{RelTolMean: 1e-300, RelTolProbes: 1e-300, MaxIterations: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	defer sv.Close()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N && !sv.Done(); i++ {
		if err := sv.Iterate(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()*1e3/float64(b.N), "ms/iteration")
}
