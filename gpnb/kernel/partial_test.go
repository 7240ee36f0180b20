package kernel

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// partialIdx are index lists for the partial products that take each path:
// contiguous ranges (the in-place fast paths of the float64 cache) at the
// start, middle and end of 0..n−1 and spanning several column chunks, a
// single index, all of them, and the general path: scattered sorted,
// unsorted, reversed and repeated indices. n is 103; with withSmallTiles
// (rowTile 16, colChunk 40) the longer lists span several tiles and chunks.
func partialIdx(n int) map[string][]int {
	rng := func(lo, hi int) []int {
		r := make([]int, 0, hi-lo)
		for i := lo; i < hi; i++ {
			r = append(r, i)
		}
		return r
	}
	var third, rev, unsorted, repeated []int
	for i := 0; i < n; i += 3 {
		third = append(third, i)
	}
	for i := n - 1; i >= 0; i-- {
		rev = append(rev, i)
	}
	for i := 0; i < 60; i++ {
		unsorted = append(unsorted, (i*37+11)%n)
		repeated = append(repeated, (i*i+3)%17+40) // many repeats, in 40..56
	}
	return map[string][]int{
		"contiguous-start": rng(0, 50),
		"contiguous-mid":   rng(37, 96),
		"contiguous-end":   rng(60, n),
		"contiguous-all":   rng(0, n),
		"single":           {57},
		"scattered":        third,
		"unsorted":         unsorted,
		"reversed":         rev,
		"repeated":         repeated,
		"repeated-run":     {10, 11, 12, 12, 13, 14},
	}
}

var partialCases = append(opCases[:len(opCases):len(opCases)],
	opCase{"dense2w", Options{Mode: ModeDense, Workers: 2}, 1e-13},
	opCase{"dense32-2w", Options{Mode: ModeDense, Precision: Float32, Workers: 2}, rel32},
)

// TestPartialProducts checks RowsMulTo, ColsMulTo and BlockTo for every
// kind of index list, in every storage mode, against H built entry by entry
// with Kernel.At, and that matrix-free mode computes only the kernel values
// the product needs (len(idx)·n, or the upper triangle of the block).
func TestPartialProducts(t *testing.T) {
	withSmallTiles(t)
	const n, d, m = 103, 3, 5
	x := testX(n, d, 21)
	v := randDense(n, m, 22)
	for _, f := range []Family{Matern12, RBF} {
		k := testKernel(f, d)
		h := explicitH(x, k)
		for _, c := range partialCases {
			op, err := NewOperator(x, k, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			for iname, idx := range partialIdx(n) {
				name := fmt.Sprintf("%v/%s/%s", f, c.name, iname)
				hr := mat.NewDense(len(idx), n, nil) // H[idx,:]
				for i, r := range idx {
					hr.SetRow(i, h.RawRowView(r))
				}

				before := op.Work()
				rdst := mat.NewDense(len(idx), m, nil)
				rdst.Apply(func(_, _ int, _ float64) float64 { return math.NaN() }, rdst) // must be overwritten
				op.RowsMulTo(rdst, idx, v)
				checkProduct(t, name+" RowsMulTo", rdst, hr, v, c.rel)
				checkEvals(t, name+" RowsMulTo", op, before, len(idx), int64(len(idx))*n)

				dd := randDense(len(idx), m, uint64(len(idx)))
				var hc mat.Dense
				hc.CloneFrom(hr.T()) // H[:,idx]
				before = op.Work()
				cdst := mat.NewDense(n, m, nil)
				cdst.Apply(func(_, _ int, _ float64) float64 { return math.NaN() }, cdst)
				op.ColsMulTo(cdst, idx, dd)
				checkProduct(t, name+" ColsMulTo", cdst, &hc, dd, c.rel)
				checkEvals(t, name+" ColsMulTo", op, before, len(idx), int64(len(idx))*n)

				blk := mat.NewSymDense(len(idx), nil)
				before = op.Work()
				op.BlockTo(blk, idx)
				for i, a := range idx {
					for j, b := range idx {
						if !closeTo(blk.At(i, j), h.At(a, b), 1e-300, c.rel) {
							t.Errorf("%s BlockTo[%d,%d] = %.17g, want %.17g", name, i, j, blk.At(i, j), h.At(a, b))
						}
					}
				}
				// Matrix-free: the tiles on and above the diagonal only.
				var blockEvals int64
				for i0 := 0; i0 < len(idx); i0 += rowTile {
					blockEvals += int64(min(rowTile, len(idx)-i0)) * int64(len(idx)-i0)
				}
				checkEvals(t, name+" BlockTo", op, before, len(idx), blockEvals)
			}
		}
	}
}

// checkEvals checks the Work counters after one partial product: rows
// rows, and in matrix-free mode exactly evals kernel values (none from the
// dense cache).
func checkEvals(t *testing.T, name string, op *Operator, before Work, rows int, evals int64) {
	t.Helper()
	w := op.Work()
	if got := w.RowsEvaluated - before.RowsEvaluated; got != int64(rows) {
		t.Errorf("%s: RowsEvaluated grew by %d, want %d", name, got, rows)
	}
	if op.Mode() == ModeDense {
		evals = 0
	}
	if got := w.KernelEvals - before.KernelEvals; got != evals {
		t.Errorf("%s: %d kernel evaluations, want %d", name, got, evals)
	}
}

// TestPartialDeterminism checks that the partial products give the same
// bits at GOMAXPROCS 1 and 2 and for 1, 2 and 3 workers, for contiguous,
// scattered and repeated indices in every mode.
func TestPartialDeterminism(t *testing.T) {
	withSmallTiles(t)
	const n, d, m = 101, 3, 4
	x := testX(n, d, 26)
	v := randDense(n, m, 27)
	idxs := partialIdx(n)
	run := func(opt Options) []float64 {
		op, err := NewOperator(x, testKernel(Matern32, d), opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, name := range []string{"contiguous-mid", "contiguous-all", "scattered", "unsorted", "repeated"} {
			idx := idxs[name]
			r := mat.NewDense(len(idx), m, nil)
			op.RowsMulTo(r, idx, v)
			out = append(out, r.RawMatrix().Data...)
			c := mat.NewDense(n, m, nil)
			op.ColsMulTo(c, idx, randDense(len(idx), m, 28))
			out = append(out, c.RawMatrix().Data...)
			b := mat.NewSymDense(len(idx), nil)
			op.BlockTo(b, idx)
			out = append(out, b.RawSymmetric().Data...)
		}
		return out
	}
	checkSameBits(t, run)
}

// TestPartialAllocs checks that the partial products reuse the operator's
// buffers: after a first call, repeated calls with one worker allocate
// nothing that grows with the problem (at most the closure handed to the
// worker pool, and gonum's own goroutine bookkeeping).
func TestPartialAllocs(t *testing.T) {
	const n, d, m = 300, 3, 4
	x := testX(n, d, 29)
	v := randDense(n, m, 30)
	scattered := make([]int, 0, n/3)
	for i := n - 1; i >= 0; i -= 3 {
		scattered = append(scattered, i)
	}
	contig := make([]int, 120)
	for i := range contig {
		contig[i] = 100 + i
	}
	for _, c := range partialCases {
		if c.opt.Workers != 0 {
			continue
		}
		opt := c.opt
		opt.Workers = 1
		op, err := NewOperator(x, testKernel(RBF, d), opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, idx := range [][]int{contig, scattered} {
			r := mat.NewDense(len(idx), m, nil)
			cd := mat.NewDense(n, m, nil)
			dd := randDense(len(idx), m, 31)
			b := mat.NewSymDense(len(idx), nil)
			for name, f := range map[string]func(){
				"RowsMulTo": func() { op.RowsMulTo(r, idx, v) },
				"ColsMulTo": func() { op.ColsMulTo(cd, idx, dd) },
				"BlockTo":   func() { op.BlockTo(b, idx) },
			} {
				f()
				// The dense paths allocate nothing of their own; matrix-free
				// ones also call gonum's gemm on tiles big enough for it to
				// start goroutines, whose bookkeeping is a few small objects.
				if a := testing.AllocsPerRun(5, f); op.Mode() == ModeDense && a > 2 {
					t.Errorf("%s %s len(idx)=%d: %v allocations per call, want ≤ 2", c.name, name, len(idx), a)
				}
				// Far below one row tile of buffers (rowTile·colChunk·8 B).
				if b := bytesPerCall(5, f); b > 8<<10 {
					t.Errorf("%s %s len(idx)=%d: %d bytes allocated per call, want ≤ 8 KiB", c.name, name, len(idx), b)
				}
			}
		}
	}
}

// bytesPerCall returns the bytes f allocates per call, averaged over runs
// calls: what testing.AllocsPerRun is for allocation counts.
func bytesPerCall(runs int, f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&m1)
	return (m1.TotalAlloc - m0.TotalAlloc) / uint64(runs)
}

// An empty index set with an empty destination is a no-op, not a panic
// (gonum's ReuseAsSym(0) panics).
func TestBlockToEmptyIndex(t *testing.T) {
	x := mat.NewDense(3, 1, []float64{0, 1, 2})
	op, err := NewOperator(x, Kernel{Family: Matern32, Hyper: DefaultHyper(1)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var dst mat.SymDense
	op.BlockTo(&dst, nil)
	if !dst.IsEmpty() {
		t.Fatalf("dst is %d×%d, want empty", dst.SymmetricDim(), dst.SymmetricDim())
	}
}
