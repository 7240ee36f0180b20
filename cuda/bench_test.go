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
	"gonum.org/v1/gonum/mat"
)

// benchSize returns GPNB_CUDA_BENCH_N (default 20000 on a GPU, 512 in the
// emulation) and the number of right-hand sides (17: y and 16 probes).
func benchSize(b *testing.B, o func() DeviceInfo) (n, m, d int) {
	n, m, d = 20000, 17, 8
	if s := os.Getenv("GPNB_CUDA_BENCH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			b.Fatalf("GPNB_CUDA_BENCH_N=%q: want a positive integer", s)
		}
		n = v
	}
	if o != nil && strings.Contains(o().Name, "emulation") && os.Getenv("GPNB_CUDA_BENCH_N") == "" {
		n = 512
	}
	return n, m, d
}

// BenchmarkMulTo measures H·V for 17 right-hand sides and reports it against
// the device's peaks:
//
//   - matrix-free: pairs/s (per column group: 17 columns pad to one group of
//     32), and flop/s counting, per pair and group, 3d for the distance, ~40
//     for sqrt, exp and the Matérn polynomial, and 2 per column of the group,
//     as a fraction of the fp64 peak;
//   - dense: the bytes of K read per product (n²·elem per column group) per
//     second, as a fraction of the memory bandwidth.
//
// Run on the GPU (see run-on-gpu.sh):
//
//	./cuda.test -test.run '^$' -test.bench MulTo -test.benchtime 20x
func BenchmarkMulTo(b *testing.B) {
	needGPU(b)
	for _, mode := range []kernel.Mode{kernel.ModeMatrixFree, kernel.ModeDense} {
		for _, prec := range []Precision{Float64, Float32} {
			b.Run(mode.String()+"/"+prec.String(), func(b *testing.B) {
				drv, err := getDriver(envDevice())
				if err != nil {
					b.Skip(err)
				}
				n, m, d := benchSize(b, drv.info)
				rng := rand.New(rand.NewPCG(1, 2))
				x := randDense(rng, n, d, 1)
				k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}
				o, err := NewOperator(x, k, Options{Mode: mode, Precision: prec, Device: envDevice()})
				if err != nil {
					b.Skip(err) // e.g. the dense cache does not fit
				}
				defer o.Close()
				v := randDense(rng, n, m, 1)
				dst := mat.NewDense(n, m, nil)
				o.MulTo(dst, v) // warm up (JIT, allocations)
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					o.MulTo(dst, v)
				}
				sec := time.Since(start).Seconds() / float64(b.N)
				b.StopTimer()
				if err := o.Err(); err != nil {
					b.Fatal(err)
				}
				inf := o.Device()
				g, width := groups(roundUp(m, mc))
				groups := float64(g)
				pairs := float64(n) * float64(n)
				if mode == kernel.ModeMatrixFree {
					flops := pairs * (3*float64(d) + 40 + 2*float64(width)) * groups
					b.ReportMetric(pairs*groups/sec/1e9, "Gpairs/s")
					b.ReportMetric(flops/sec/1e9, "GFLOP/s")
					if p := inf.FP64Peak(); p > 0 {
						b.ReportMetric(100*flops/sec/p, "%fp64peak")
					}
				} else {
					bytes := pairs * float64(o.elem) * groups
					b.ReportMetric(bytes/sec/1e9, "GB/s")
					if bw := inf.Bandwidth(); bw > 0 {
						b.ReportMetric(100*bytes/sec/bw, "%bandwidth")
					}
				}
				b.ReportMetric(sec*1e3, "ms/product")
			})
		}
	}
}

// BenchmarkReduce measures the fused gradient reduction for c = 17 columns.
func BenchmarkReduce(b *testing.B) {
	needGPU(b)
	drv, err := getDriver(envDevice())
	if err != nil {
		b.Skip(err)
	}
	n, m, d := benchSize(b, drv.info)
	rng := rand.New(rand.NewPCG(3, 4))
	x := randDense(rng, n, d, 1)
	o, err := NewOperator(x, kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}, Options{Mode: kernel.ModeMatrixFree, Device: envDevice()})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	a, bb := randDense(rng, n, m, 1), randDense(rng, n, m, 1)
	dst := make([]float64, d+2)
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
