//go:build cudaemu && !cuda

package cuda

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/solvers"
)

// The emulation was compiled from the current kernels/gpnb.cu: Go's build
// cache does not see that file, so a stale emulation would test old kernels.
func TestEmuSource(t *testing.T) {
	src, err := os.ReadFile("kernels/gpnb.cu")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got, want := emuSource(), "sha256_"+hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("the cudaemu build is of another gpnb.cu (%s, the file is %s): run cuda/kernels/stamp.sh (gen.sh runs it)", got, want)
	}
}

// The emulation has every kernel the operator launches; a module without
// one fails when the device is opened, naming the kernel and gen.sh.
func TestModuleKernels(t *testing.T) {
	if _, err := openDriver(0); err != nil {
		t.Fatalf("the emulated module: %v", err)
	}
	emuHide["gpnb_mulk_f64_c20"] = true
	defer delete(emuHide, "gpnb_mulk_f64_c20")
	_, err := openDriver(0)
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "gpnb_mulk_f64_c20") || !strings.Contains(err.Error(), "gen.sh") {
		t.Fatalf("a module without gpnb_mulk_f64_c20: %v", err)
	}
}

// What crosses between host and device while a solver iterates on the
// device: per iteration only scalars (coefficients and column lists in,
// Dots' results out) and SGD's batch indices, never a vector (CG: one wait
// for 2k scalars, its α and β computed on the device); no device or
// pinned memory is allocated once the first iterations have grown the
// scratch (AP allocates a block's factor and indices when it first picks
// it); Progress copies nothing; State downloads exactly the bound vectors.
func TestSpaceTrafficScalarOnly(t *testing.T) {
	g, _, b := solveProblem(t, 200, 5, kernel.ModeDense)
	n, m := b.Dims()
	cases := []struct {
		meth    solvers.Method
		vectors int // n×m vectors State downloads: V, R and the method's
	}{
		{solvers.CG{}, 3},
		{solvers.CG{PrecondRank: 10}, 3},
		{solvers.AP{BlockSize: 64}, 2},
		{solvers.SGD{BatchSize: 40, RawLearningRate: 2, Seed: 1}, 3},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s%+v", tc.meth.Name(), tc.meth), func(t *testing.T) {
			sv, err := tc.meth.Start(g, b, nil, solvers.Settings{RelTolMean: 1e-12, RelTolProbes: 1e-12, MaxIterations: 40})
			if err != nil {
				t.Fatal(err)
			}
			defer sv.Close()
			for i := 0; i < 3; i++ { // first uses of the scratch
				if err := sv.Iterate(); err != nil {
					t.Fatal(err)
				}
			}
			picked := map[int]bool{}
			nblocks := 1
			if ap, ok := tc.meth.(solvers.AP); ok {
				nblocks = (n + ap.BlockSize - 1) / ap.BlockSize
				for bl, p := range sv.State().AP.Picks {
					picked[bl] = p > 0
				}
			}
			bs := 0
			if s, ok := tc.meth.(solvers.SGD); ok {
				bs = s.BatchSize
			}
			oneWait := 0 // CG iterations checked for their single wait
			for it := 0; it < 20 && !sv.Done(); it++ {
				pr := sv.Progress()
				active, products := 0, pr.Work.OperatorProducts
				for _, ok := range pr.ColumnConverged {
					if !ok {
						active++
					}
				}
				before := emuStats()
				emuZeroMax()
				if err := sv.Iterate(); err != nil {
					t.Fatal(err)
				}
				after := emuStats()
				// CG without a preconditioner: α and β on the device, one
				// wait per iteration for pᵀHp and rᵀr, unless the iteration
				// checked a true residual (a product of more columns).
				if cg, ok := tc.meth.(solvers.CG); ok && cg.PrecondRank == 0 && sv.Progress().Work.OperatorProducts-products == active {
					if s, out := after.syncs-before.syncs, after.dtohBytes-before.dtohBytes; s != 1 || out != int64(16*active) {
						t.Fatalf("CG iteration %d synchronised %d times and copied %d bytes out, want once and %d bytes (pᵀHp and rᵀr of %d columns)", it, s, out, 16*active, active)
					}
					oneWait++
				}
				first := false
				if tc.meth.Name() == "ap" {
					last := sv.State().AP.Last // State downloads: after the counts
					first = !picked[last]
					picked[last] = true
				}
				dAlloc := after.allocs - before.allocs
				if dAlloc != 0 && !first || after.hostAllocs != before.hostAllocs {
					t.Fatalf("iteration %d allocated %d device and %d pinned buffers", it, dAlloc, after.hostAllocs-before.hostAllocs)
				}
				if max := int64(8 * max(2*m, nblocks*m, bs)); after.maxCopy > max {
					t.Fatalf("iteration %d copied %d bytes at once (a vector is %d): want only scalars and indices (≤ %d)", it, after.maxCopy, 8*n, max)
				}
				out := after.dtohBytes - before.dtohBytes
				if out > int64(8*(5*m+nblocks*m+1)) {
					t.Fatalf("iteration %d copied %d bytes to the host; Dots' scalars are at most %d", it, out, 8*(5*m+nblocks*m+1))
				}
				in := after.htodBytes - before.htodBytes
				if in > int64(8*(40*m+bs)) {
					t.Fatalf("iteration %d copied %d bytes to the device", it, in)
				}
				if after.syncs-before.syncs > 8 {
					t.Fatalf("iteration %d synchronised %d times", it, after.syncs-before.syncs)
				}
			}
			if cg, ok := tc.meth.(solvers.CG); ok && cg.PrecondRank == 0 && oneWait < 10 {
				t.Fatalf("only %d CG iterations without a true-residual check", oneWait)
			}
			before := emuStats()
			_ = sv.Progress()
			if d := emuStats().dtohBytes - before.dtohBytes; d != 0 {
				t.Fatalf("Progress copied %d bytes", d)
			}
			before = emuStats()
			_ = sv.State()
			if d := emuStats().dtohBytes - before.dtohBytes; d != int64(tc.vectors*n*m*8) {
				t.Fatalf("State copied %d bytes, want %d (%d vectors)", d, tc.vectors*n*m*8, tc.vectors)
			}
		})
	}
}

// A solver per Adam step: the second solve on an operator takes the first
// one's pinned buffers, scratch and blocks, and allocates nothing.
func TestSpaceReusesBuffers(t *testing.T) {
	g, _, b := solveProblem(t, 100, 3, kernel.ModeDense)
	run := func() {
		sv, err := solvers.CG{}.Start(g, b, nil, solvers.Settings{MaxIterations: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := solvers.Run(context.Background(), sv); err != nil {
			t.Fatal(err)
		}
		if err := sv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	before := emuStats()
	run()
	after := emuStats()
	if d := after.hostAllocs - before.hostAllocs; d != 0 {
		t.Errorf("the second solve allocated %d pinned buffers", d)
	}
	if d := after.allocs - before.allocs; d != 0 {
		t.Errorf("the second solve allocated %d device buffers (its blocks come from the pool)", d)
	}
}

// An iteration allocates little Go memory either: no vector-sized buffers.
func TestSpaceIterateGoAllocations(t *testing.T) {
	g, _, b := solveProblem(t, 200, 5, kernel.ModeDense)
	n, m := b.Dims()
	for _, meth := range []solvers.Method{solvers.CG{}, solvers.SGD{BatchSize: 40, RawLearningRate: 2}} {
		sv, err := meth.Start(g, b, nil, solvers.Settings{RelTolMean: 1e-14, RelTolProbes: 1e-14, MaxIterations: 100})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := sv.Iterate(); err != nil {
				t.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const iters = 10
		for i := 0; i < iters; i++ {
			if err := sv.Iterate(); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / iters
		t.Logf("%s: %d bytes of Go memory per iteration (a vector: %d)", meth.Name(), per, n*m*8)
		if per > uint64(n*m*8/4) {
			t.Errorf("%s: %d bytes per iteration", meth.Name(), per)
		}
		sv.Close()
	}
}

// Out of device memory: the error wraps ErrOutOfMemory and says how to need
// less, whether the operator's K or a solver's block did not fit.
func TestOutOfMemory(t *testing.T) {
	defer func(l int64) { emuMemLimit = l }(emuMemLimit)
	_, _, b := solveProblem(t, 100, 3, kernel.ModeDense)
	x := randDense(rand.New(rand.NewPCG(1, 1)), 100, 3, 1)
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(3)}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "--precision float32") || !strings.Contains(err.Error(), "--operator matrixfree") {
			t.Errorf("%s: %v", what, err)
		}
	}
	d, _ := getDriver(0)
	e := d.(*emuDriver)
	emuMemLimit = e.used + 8000 // room for X and Z (2400 bytes each), not for K (102400)
	_, err := NewOperator(x, k, Options{Mode: kernel.ModeDense, MemoryBudget: 1 << 40})
	check("the dense K", err)
	emuMemLimit = 2 << 30
	g, err := NewOperator(x, k, Options{Mode: kernel.ModeDense})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	emuMemLimit = e.used + arenaBytes + 5000 // the staging area and two 100×3 blocks
	_, err = solvers.CG{}.Start(g, b, nil, solvers.Settings{})
	check("a CG solve", err)
}

// A kernel that fails while it runs (a fault on a GPU shows at the next
// synchronisation): the operations without an error result do nothing
// more, the next Dots returns the failure, a solver stops with it, and
// Close does not return it twice.
func TestAsyncFault(t *testing.T) {
	g, _, b := solveProblem(t, 100, 3, kernel.ModeDense)
	defer emuReset()
	sp, err := g.NewSpace()
	if err != nil {
		t.Fatal(err)
	}
	x, _ := sp.NewBlock(100, 3)
	y, _ := sp.NewBlock(100, 3)
	emuFault = "gpnb_vec"
	defer func() { emuFault = "" }()
	sp.Axpy(y, []float64{1, 2, 3}, x, nil)
	sp.Copy(y, x, nil)
	err = sp.Dots(make([]float64, 3), x, y, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "gpnb_vec failed") {
		t.Fatalf("Dots after a faulting Axpy: %v", err)
	}
	if err := sp.Upload(x, make([]float64, 300)); err == nil {
		t.Error("Upload after a fault: no error")
	}
	if err := sp.Close(); err != nil {
		t.Errorf("Close returned the fault again: %v", err)
	}
	emuReset()
	sv, err := solvers.CG{}.Start(g, b, nil, solvers.Settings{})
	if err == nil {
		err = sv.Iterate()
	}
	if err == nil || !strings.Contains(err.Error(), "gpnb_vec failed") {
		t.Fatalf("CG with a faulting kernel: %v", err)
	}
	if sv != nil {
		if !sv.Done() || !errors.Is(sv.Iterate(), err) {
			t.Error("the solver did not stop at the fault")
		}
		sv.Close()
	}
	emuFault = ""
	emuReset()
	// The device works again with a new context (here: reset).
	sv, err = solvers.CG{}.Start(g, b, nil, solvers.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := solvers.Run(context.Background(), sv); err != nil {
		t.Fatal(err)
	}
	sv.Close()
}

// Freeing memory that queued work still uses is refused by the emulation
// (a GPU's free need not wait for that work); a buffer that grows while
// work using it is queued is replaced only after a synchronisation.
func TestFreeAfterSync(t *testing.T) {
	d, err := getDriver(0)
	if err != nil {
		t.Fatal(err)
	}
	var b dbuf
	if err := b.ensure(d, 64, "a test buffer"); err != nil {
		t.Fatal(err)
	}
	if err := d.zeroAsync(b.p, 64); err != nil {
		t.Fatal(err)
	}
	if err := d.free(b.p); err == nil || !strings.Contains(err.Error(), "queued work still uses") {
		t.Fatalf("free with a memset queued on the buffer: %v", err)
	}
	if err := b.ensure(d, 1<<10, "a test buffer"); err != nil { // synchronises, then frees
		t.Fatal(err)
	}
	if err := b.release(d); err != nil {
		t.Fatal(err)
	}
}

// SetKernel returns once K is built (so a caller's clock measures the
// build) and adds the build's device time to Work; Reduce's time goes to
// Work too.
func TestBuildTimed(t *testing.T) {
	g, _, b := solveProblem(t, 100, 3, kernel.ModeDense)
	w0 := g.Work()
	before := emuStats()
	k := g.Kernel()
	k.Hyper.Signal *= 1.1
	if err := g.SetKernel(k); err != nil {
		t.Fatal(err)
	}
	d, _ := getDriver(0)
	e := d.(*emuDriver)
	e.mu.Lock()
	queued := len(e.queue)
	e.mu.Unlock()
	if queued != 0 || emuStats().syncs == before.syncs {
		t.Fatalf("SetKernel returned with %d operations queued", queued)
	}
	g.Reduce(make([]float64, 5), b, b)
	w := g.Work().Sub(w0)
	if !(w.BuildSeconds > 0 && w.ReduceSeconds > 0) {
		t.Fatalf("Work: build %g s, reduce %g s", w.BuildSeconds, w.ReduceSeconds)
	}
}

// Adam steps on one operator (SetKernel, a CG solve, Reduce), after the
// first: no device or pinned memory is allocated.
func TestStepsAllocateNothing(t *testing.T) {
	g, _, b := solveProblem(t, 150, 4, kernel.ModeDense)
	step := func(i int) {
		k := g.Kernel()
		k.Hyper.Noise *= 1 + 0.01*float64(i)
		if err := g.SetKernel(k); err != nil {
			t.Fatal(err)
		}
		sv, err := solvers.CG{}.Start(g, b, nil, solvers.Settings{MaxIterations: 30})
		if err != nil {
			t.Fatal(err)
		}
		if err := solvers.Run(context.Background(), sv); err != nil {
			t.Fatal(err)
		}
		g.Reduce(make([]float64, 5), sv.Solution(), b)
		if err := sv.Close(); err != nil {
			t.Fatal(err)
		}
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	before := emuStats()
	for i := 1; i < 4; i++ {
		step(i)
	}
	after := emuStats()
	if d, h := after.allocs-before.allocs, after.hostAllocs-before.hostAllocs; d != 0 || h != 0 {
		t.Errorf("three more steps allocated %d device and %d pinned buffers", d, h)
	}
}
