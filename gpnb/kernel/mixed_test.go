package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// mixedRef is the sum order mixed_amd64.c documents, written out in Go:
// chunks of 1024 columns in ascending order; in each, four FMA lanes
// (j mod 4), ((l0+l1)+(l2+l3)), then the chunk's tail by FMA.
func mixedRef(k []float32, ldk, nr, nc int, vt []float64, ldv, m int) []float64 {
	y := make([]float64, nr*m)
	for r := 0; r < nr; r++ {
		for c := 0; c < m; c++ {
			var tot float64
			for j0 := 0; j0 < nc; j0 += 1024 {
				ln := min(1024, nc-j0)
				var l [4]float64
				j := 0
				for ; j+4 <= ln; j += 4 {
					for q := range l {
						l[q] = math.FMA(float64(k[r*ldk+j0+j+q]), vt[c*ldv+j0+j+q], l[q])
					}
				}
				t := (l[0] + l[1]) + (l[2] + l[3])
				for ; j < ln; j++ {
					t = math.FMA(float64(k[r*ldk+j0+j]), vt[c*ldv+j0+j], t)
				}
				tot += t
			}
			y[r*m+c] = tot
		}
	}
	return y
}

// TestMixedRowsVec checks the vectorised mixed-precision kernel against
// its documented sum order (the same bits) and against a plain float64 sum
// (within float64 rounding), for shapes with odd row counts, every column
// group size and tail, chunk boundaries and column tails.
func TestMixedRowsVec(t *testing.T) {
	if mixedKernel == "" {
		t.Skip("no vectorised mixed-precision kernel in this build (needs cgo on amd64 with AVX2 and FMA)")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for _, sh := range []struct{ nr, nc, m int }{{1, 1, 1}, {3, 5, 2}, {5, 2051, 13}, {2, 1024, 6}, {7, 3000, 17}, {4, 1027, 7}} {
		ldk, ldv, ldy := sh.nc+3, sh.nc+5, sh.m+2
		k := make([]float32, sh.nr*ldk)
		for i := range k {
			k[i] = float32(rng.NormFloat64())
		}
		vt := make([]float64, sh.m*ldv)
		for i := range vt {
			vt[i] = rng.NormFloat64()
		}
		y := make([]float64, sh.nr*ldy)
		for i := range y {
			y[i] = math.NaN() // the kernel must overwrite, not add
		}
		mixedRowsVec(k, ldk, sh.nr, sh.nc, vt, ldv, sh.m, y, ldy)
		want := mixedRef(k, ldk, sh.nr, sh.nc, vt, ldv, sh.m)
		for r := 0; r < sh.nr; r++ {
			for c := 0; c < sh.m; c++ {
				got := y[r*ldy+c]
				if math.Float64bits(got) != math.Float64bits(want[r*sh.m+c]) {
					t.Errorf("%+v: y[%d,%d] = %v, the documented order gives %v", sh, r, c, got, want[r*sh.m+c])
				}
				var plain, abs float64
				for j := 0; j < sh.nc; j++ {
					p := float64(k[r*ldk+j]) * vt[c*ldv+j]
					plain += p
					abs += math.Abs(p)
				}
				if e := math.Abs(got - plain); e > 1e-14*abs {
					t.Errorf("%+v: y[%d,%d] = %v, plain float64 sum %v: error %.3g of Σ|terms| %.3g", sh, r, c, got, plain, e, abs)
				}
			}
		}
	}
}

// TestMixedProducts checks every product of a Mixed operator against an
// independent float64 computation with the same K: the operator's own
// entries (BlockTo, K's float32 values converted exactly, plus σ²) times V
// by gonum's float64 Mul. The products must agree to float64 rounding
// (1e-12 relative per column), where the Float32 operator's are off by
// ~1e-7, and must differ from the Float64 operator's only by K's rounding
// (≤ 1e-5). With the vectorised kernel, RowsMulTo's rows are MulTo's, bit
// for bit (one sum order for every output). They are the same bits for 1 and 3 workers, and in
// matrix-free mode Mixed is Float64, bit for bit.
func TestMixedProducts(t *testing.T) {
	const n, d = 1503, 5
	rng := rand.New(rand.NewPCG(83, 84))
	x := testX(n, d, 85)
	idx := rng.Perm(n)[:301]
	block := make([]int, 400)
	for i := range block {
		block[i] = 700 + i
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	for _, m := range []int{1, 7, 17} {
		v := randDense(n, m, uint64(86+m))
		dIdx, dBlock := randDense(len(idx), m, 90), randDense(len(block), m, 91)
		for _, ls := range []float64{0.3, 2} {
			k := Kernel{Family: Matern32, Hyper: Hyper{Lengthscales: []float64{ls, ls, ls, ls, ls}, Signal: 1.1, Noise: 0.05}}
			products := func(op *Operator) map[string]*mat.Dense {
				var full, rows, colsS, colsB mat.Dense
				op.MulTo(&full, v)
				op.RowsMulTo(&rows, idx, v)
				op.ColsMulTo(&colsS, idx, dIdx)
				op.ColsMulTo(&colsB, block, dBlock)
				return map[string]*mat.Dense{"MulTo": &full, "RowsMulTo": &rows, "ColsMulTo scattered": &colsS, "ColsMulTo block": &colsB}
			}
			mixed, err := NewOperator(x, k, Options{Mode: ModeDense, Precision: Mixed, Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			if mixed.Storage() != "dense mixed" {
				t.Errorf("Storage() = %q, want dense mixed", mixed.Storage())
			}
			// The independent reference: H with the rounded K, times V.
			var h mat.SymDense
			mixed.BlockTo(&h, all)
			ref := map[string]*mat.Dense{}
			var full, colsS, colsB mat.Dense
			full.Mul(&h, v)
			hi := mat.NewDense(n, len(idx), nil)
			for a := 0; a < n; a++ {
				for b, j := range idx {
					hi.Set(a, b, h.At(a, j))
				}
			}
			colsS.Mul(hi, dIdx)
			hb := mat.NewDense(n, len(block), nil)
			for a := 0; a < n; a++ {
				for b, j := range block {
					hb.Set(a, b, h.At(a, j))
				}
			}
			colsB.Mul(hb, dBlock)
			ref["MulTo"], ref["RowsMulTo"], ref["ColsMulTo scattered"], ref["ColsMulTo block"] = &full, rowsOf64(&full, idx), &colsS, &colsB

			f64, err := NewOperator(x, k, Options{Mode: ModeDense})
			if err != nil {
				t.Fatal(err)
			}
			f32, err := NewOperator(x, k, Options{Mode: ModeDense, Precision: Float32})
			if err != nil {
				t.Fatal(err)
			}
			got, w64, w32 := products(mixed), products(f64), products(f32)
			if mixedKernel != "" && !mat.Equal(got["RowsMulTo"], rowsOf64(got["MulTo"], idx)) {
				t.Errorf("m=%d ℓ=%g: mixed RowsMulTo (scattered rows, one by one) differs from the rows of MulTo (tiles of rows)", m, ls)
			}
			for name, g := range got {
				if e := relColErr(g, ref[name]); !(e <= 1e-12) {
					t.Errorf("m=%d ℓ=%g %s: mixed against float64 sums with the rounded K: relative error %.3g, want ≤ 1e-12", m, ls, name, e)
				}
				if e := relColErr(g, w64[name]); !(e <= 1e-5) || e == 0 {
					t.Errorf("m=%d ℓ=%g %s: mixed against the float64 operator: relative error %.3g, want (0, 1e-5]", m, ls, name, e)
				}
				if e32 := relColErr(w32[name], ref[name]); name == "MulTo" && !(e32 > 1e3*relColErr(g, ref[name])) {
					t.Errorf("m=%d ℓ=%g: float32's product is off by %.3g, mixed's by %.3g: mixed should be far closer", m, ls, e32, relColErr(g, ref[name]))
				}
			}
			one, err := NewOperator(x, k, Options{Mode: ModeDense, Precision: Mixed, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			for name, g := range products(one) {
				if !mat.Equal(g, got[name]) {
					t.Errorf("m=%d ℓ=%g %s: mixed products differ between 1 and 3 workers", m, ls, name)
				}
			}
			mf, err := NewOperator(x, k, Options{Mode: ModeMatrixFree, Precision: Mixed})
			if err != nil {
				t.Fatal(err)
			}
			f64f, err := NewOperator(x, k, Options{Mode: ModeMatrixFree})
			if err != nil {
				t.Fatal(err)
			}
			a, b := products(mf), products(f64f)
			for name := range a {
				if !mat.Equal(a[name], b[name]) {
					t.Errorf("m=%d ℓ=%g %s: matrix-free Mixed differs from matrix-free Float64", m, ls, name)
				}
			}
		}
	}
}

// rowsOf64 returns rows idx of a (a copy).
func rowsOf64(a *mat.Dense, idx []int) *mat.Dense {
	_, c := a.Dims()
	out := mat.NewDense(len(idx), c, nil)
	for i, r := range idx {
		out.SetRow(i, a.RawRowView(r))
	}
	return out
}
