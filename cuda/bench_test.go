//go:build cuda || cudaemu

package cuda

import (
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

// BenchmarkReduce measures the fused gradient reduction for c = 17 columns.
func BenchmarkReduce(b *testing.B) {
	o, rng, m := benchFirst(b, 3, 4, Options{Mode: kernel.ModeMatrixFree})
	n := o.n
	a, bb := randDense(rng, n, m, 1), randDense(rng, n, m, 1)
	dst := make([]float64, o.d+2)
	o.Reduce(dst, a, bb)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		o.Reduce(dst, a, bb)
	}
	sec := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(float64(n)*float64(n)/sec/1e9, "Gpairs/s")
	b.ReportMetric(sec*1e3, "ms/reduce")
	if err := o.Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCGIteration measures one iteration of CG on the device (a Mul of
// 17 columns, two Dots, the vector updates), wall clock: the per-iteration
// cost a solve pays, launches and synchronisations included.
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
