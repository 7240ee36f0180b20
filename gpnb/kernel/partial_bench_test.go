package kernel

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// BenchmarkPartialPol17 times the partial products the way the iterative
// solvers use them on the pol-shaped problem (dense float64 cache, 17
// right-hand sides), each as a multiple of one full H·V measured in the same
// run (x_HV17), next to its share of H (len(idx)/n rows of n, or
// len(idx)²/n² entries) as the ideal, for the float64 and float32 dense
// caches and matrix-free:
//
//	ap_cols:      ColsMulTo, contiguous block of 2000 (AP's residual update)
//	ap_block:     BlockTo, contiguous block of 2000 (AP's block to factorise)
//	sgd_rows:     RowsMulTo, 1000 scattered sorted rows (SGD's mini-batch)
//	sgd_block:    BlockTo, the same 1000 rows (SGD's step size)
//	scatter_cols: ColsMulTo, 2000 scattered rows (the general path)
//
//	go test -run '^$' -bench 'PartialPol17/float' -benchtime 3x ./gpnb/kernel/
//	GPNB_BENCH_N=6000 go test -run '^$' -bench 'PartialPol17/matrixfree' -benchtime 1x ./gpnb/kernel/
func BenchmarkPartialPol17(b *testing.B) {
	x := benchInputs(b)
	n, d := x.Dims()
	for _, c := range []struct {
		name string
		opt  Options
	}{
		{"float64", Options{Mode: ModeDense}},
		{"float32", Options{Mode: ModeDense, Precision: Float32}},
		// Matrix-free H·V computes each kernel value once for two
		// products (symmetry); a partial product cannot, so expect about
		// twice the share here.
		{"matrixfree", Options{Mode: ModeMatrixFree}},
	} {
		b.Run(c.name, func(b *testing.B) {
			op, err := NewOperator(x, benchKernel(d), c.opt)
			if err != nil {
				b.Fatal(err)
			}
			benchPartial(b, op, n)
		})
	}
}

func benchPartial(b *testing.B, op *Operator, n int) {
	v := randDense(n, benchM, 5)
	full := mat.NewDense(n, benchM, nil)
	apB, sgdB := min(2000, n/2), min(1000, n/4)
	block := make([]int, apB)
	for i := range block {
		block[i] = n/3 + i
	}
	rng := rand.New(rand.NewPCG(8, 9))
	batch := rng.Perm(n)[:sgdB]
	slices.Sort(batch)
	scattered := rng.Perm(n)[:apB]
	dBlock := randDense(apB, benchM, 6)
	rows := mat.NewDense(sgdB, benchM, nil)
	blk := mat.NewSymDense(apB, nil)
	sblk := mat.NewSymDense(sgdB, nil)
	cases := []struct {
		name  string
		share float64
		f     func()
	}{
		{"ap_cols", float64(apB) / float64(n), func() { op.ColsMulTo(full, block, dBlock) }},
		{"ap_block", float64(apB*apB) / float64(n) / float64(n), func() { op.BlockTo(blk, block) }},
		{"sgd_rows", float64(sgdB) / float64(n), func() { op.RowsMulTo(rows, batch, v) }},
		{"sgd_block", float64(sgdB*sgdB) / float64(n) / float64(n), func() { op.BlockTo(sblk, batch) }},
		{"scatter_cols", float64(apB) / float64(n), func() { op.ColsMulTo(full, scattered, dBlock) }},
	}
	hvOut := mat.NewDense(n, benchM, nil)
	op.MulTo(hvOut, v) // warm
	var hv float64
	spent := make([]float64, len(cases))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hv += timeIt(1, func() { op.MulTo(hvOut, v) })
		for j, c := range cases {
			spent[j] += timeIt(1, c.f)
		}
	}
	b.StopTimer()
	for j, c := range cases {
		b.ReportMetric(spent[j]/hv, c.name+"_xHV17")
		b.ReportMetric(c.share, c.name+"_share")
	}
	b.ReportMetric(hv/float64(b.N), "HV17_s")
}
