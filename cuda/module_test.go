//go:build cuda

package cuda

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// The bits do not depend on which compiler made the machine code: the same
// products, Dots, factorisation and a short CG solve give the same bits
// with the embedded cubin (nvcc's ptxas), the embedded PTX compiled by this
// driver's JIT, and any module listed in GPNB_CUDA_BITS_MODULES
// (comma-separated files; results/gpu/quick.sh passes the kernels compiled
// by the GPU machine's own nvcc). On a device older than 9.0 the embedded
// module is the sm_60 PTX, and only the listed files are compared with it.
func TestModuleBits(t *testing.T) {
	needGPU(t)
	ord := envDevice()
	inf, dev, err := deviceInfo(ord)
	if err != nil {
		t.Fatal(err)
	}
	var mods []image
	switch {
	case inf.Major == 9 && inf.Minor == 0:
		mods = append(mods, image{"the embedded cubin for sm_90", cubinSM90})
		fallthrough
	case inf.Major >= 9:
		mods = append(mods, image{"the embedded PTX for sm_90", append(append([]byte(nil), ptxSM90...), 0)})
	default:
		mods = append(mods, image{"the embedded PTX for sm_60", append(append([]byte(nil), ptxSM60...), 0)})
	}
	for _, f := range strings.Split(os.Getenv("GPNB_CUDA_BITS_MODULES"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, image{f, append(b, 0)})
	}
	if len(mods) < 2 {
		t.Skip("one module only: set GPNB_CUDA_BITS_MODULES to compare others")
	}
	var ref []float64
	var refName string
	for _, m := range mods {
		d, err := openDriverImages(ord, inf, dev, []image{m})
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		got := fingerprint(t, d)
		d.close()
		if ref == nil {
			ref, refName = got, m.name
			t.Logf("%s: %d values", m.name, len(got))
			continue
		}
		diff := 0
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(ref[i]) {
				diff++
			}
		}
		if diff > 0 {
			t.Errorf("%s: %d of %d values differ in their bits from %s", m.name, diff, len(got), refName)
		} else {
			t.Logf("%s: the bits of %s", m.name, refName)
		}
	}
}

// fingerprint runs a fixed set of operations on driver d and returns every
// result: the dense K as built, products in both modes and precisions, Dots,
// Factorize and Solve, Reduce, and ten iterations of CG (α and β computed
// on the device).
func fingerprint(t *testing.T, d driver) []float64 {
	t.Helper()
	var out []float64
	for _, c := range []struct {
		mode kernel.Mode
		prec Precision
	}{{kernel.ModeDense, Float64}, {kernel.ModeDense, Float32}, {kernel.ModeMatrixFree, Float64}, {kernel.ModeMatrixFree, Float32}} {
		rng := rand.New(rand.NewPCG(7, 8))
		n, m := 3000, 17
		x := randDense(rng, n, 5, 1)
		o, err := newOperatorOn(d, x, testKernel(kernel.Matern52, 5, rng), Options{Mode: c.mode, Precision: c.prec})
		if err != nil {
			t.Fatal(err)
		}
		if c.mode == kernel.ModeDense {
			out = append(out, deviceArray(t, o, o.dK.p, n*o.ldk)...)
		}
		red := make([]float64, 5+2)
		o.Reduce(red, randDense(rng, n, m, 1), randDense(rng, n, m, 1))
		if err := o.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, red...)
		sp, err := o.NewSpace()
		if err != nil {
			t.Fatal(err)
		}
		v, _ := sp.NewBlock(n, m)
		hv, _ := sp.NewBlock(n, m)
		if err := sp.Upload(v, randDense(rng, n, m, 1).RawMatrix().Data); err != nil {
			t.Fatal(err)
		}
		sp.Mul(hv, v, nil)
		idx := make([]int, 500)
		for i := range idx {
			idx[i] = 5 * i
		}
		ix, _ := sp.NewIndex(idx)
		rows, _ := sp.NewBlock(500, m)
		sp.MulRows(rows, ix, v, []int{0, 3, 4, 16})
		f, _ := sp.NewBlock(500, 500)
		sp.Principal(f, ix)
		if err := sp.Factorize(f); err != nil {
			t.Fatal(err)
		}
		sol, _ := sp.NewBlock(500, m)
		sp.Solve(sol, f, rows, nil)
		dots := make([]float64, m)
		if err := sp.Dots(dots, v, hv, nil, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, dots...)
		for _, b := range []solvers.Block{hv, rows, sol} {
			r, c := b.Dims()
			h := make([]float64, r*c)
			if err := sp.Download(h, b); err != nil {
				t.Fatal(err)
			}
			out = append(out, h...)
		}
		sp.Close()
		if c.prec == Float64 {
			sv, err := solvers.CG{}.Start(o, randDense(rng, n, m, 1), nil, solvers.Settings{MaxIterations: 10, RelTolMean: 1e-300, RelTolProbes: 1e-300})
			if err != nil {
				t.Fatal(err)
			}
			if err := solvers.Run(context.Background(), sv); err != nil {
				t.Fatal(err)
			}
			out = append(out, sv.State().V...)
			sv.Close()
		}
		o.Close()
	}
	return out
}
