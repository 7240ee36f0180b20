//go:build cuda || cudaemu

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/floatbits"
	"github.com/gpnb/gpnb/solvers"
	"gonum.org/v1/gonum/mat"
)

// deviceArray returns count values of the operator's device buffer at p,
// stored in its precision (float64 or float32), as float64.
func deviceArray(t *testing.T, o *Operator, p uintptr, count int) []float64 {
	t.Helper()
	out := make([]float64, count)
	if o.elem == 8 {
		if err := o.drv.dtoh(unsafe.Pointer(&out[0]), p, int64(count)*8); err != nil {
			t.Fatal(err)
		}
		return out
	}
	f := make([]float32, count)
	if err := o.drv.dtoh(unsafe.Pointer(&f[0]), p, int64(count)*4); err != nil {
		t.Fatal(err)
	}
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// hostZ returns the scaled inputs z = (x − x̄)/ℓ in float64, row-major n×d.
func hostZ(x *mat.Dense, h kernel.Hyper) []float64 {
	n, d := x.Dims()
	z := make([]float64, n*d)
	for k := 0; k < d; k++ {
		var mean float64
		for a := 0; a < n; a++ {
			mean += x.At(a, k)
		}
		mean /= float64(n)
		for a := 0; a < n; a++ {
			z[a*d+k] = (x.At(a, k) - mean) / h.Lengthscales[k]
		}
	}
	return z
}

// entryBound is how far a kernel value s²·m(r) computed from z in a
// precision of unit roundoff u may be from the exact one, for r² whose
// terms are bounded by S = Σ_k (|z_ak| + |z_bk|)², d the dimension.
// Rounding z costs u|z| a coordinate, the difference and its square u and
// 2u relative to |z_ak| + |z_bk|, and the sum of d squares (d−1)u, so
// |Δr²| ≤ (d+4)·u·S to first order (1.01: the higher orders). m then moves
// by at most L·|Δr²| with L = sup |dm/d(r²)| (Matérn-3/2 3/2, Matérn-5/2
// 5/6, RBF 1/2), or by |Δr| ≤ √|Δr²| for Matérn-1/2 (e^{−r} is
// 1-Lipschitz in r, which is not Lipschitz in r² at 0); and computing m(r)
// itself, a few roundings of quantities bounded by a small multiple of 1
// (16u covers them), and the product with s².
func entryBound(fam kernel.Family, s2, S float64, d int, u float64) float64 {
	dr2 := float64(d+4) * u * S * 1.01
	var dm float64
	switch fam {
	case kernel.Matern12:
		dm = math.Sqrt(dr2)
	case kernel.Matern32:
		dm = 1.5 * dr2
	case kernel.Matern52:
		dm = 5.0 / 6 * dr2
	default:
		dm = 0.5 * dr2
	}
	return s2 * (dm + 16*u)
}

// The dense cache built on the device (tiles over the upper triangle,
// mirrored): its padding columns are zero, it is exactly symmetric, and
// every entry is within entryBound of the float64 kernel of
// kernel.Kernel.At (for float32 the bound of float32 rounding; plus that of
// float64 rounding for the reference itself); in float64 the whole matrix
// is within 1e-13 relative. Sizes cover partial tiles, several tiles, and
// d > 32 (z staged in pieces).
func TestBuildKernel(t *testing.T) {
	needGPU(t)
	type bc struct {
		n, d int
		fam  kernel.Family
	}
	var cs []bc
	for _, fam := range []kernel.Family{kernel.Matern32, kernel.Matern12, kernel.Matern52, kernel.RBF} {
		cs = append(cs, bc{150, 3, fam})
	}
	cs = append(cs, bc{131, 40, kernel.Matern32}, bc{64, 5, kernel.RBF}, bc{200, 20, kernel.Matern12})
	for _, c := range cs {
		for _, prec := range []Precision{Float64, Float32} {
			t.Run(fmt.Sprintf("%v/%v/n%d_d%d", c.fam, prec, c.n, c.d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(c.n), uint64(c.d)))
				x := inputs(rng, c.n, c.d)
				k := testKernel(c.fam, c.d, rng)
				g, err := NewOperator(x, k, Options{Mode: kernel.ModeDense, Precision: prec})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				n, ldk := c.n, g.ldk
				K := deviceArray(t, g, g.dK.p, n*ldk)
				ref := explicitH(x, k)
				z := hostZ(x, k.Hyper)
				s2 := k.Hyper.Signal * k.Hyper.Signal
				u := 0x1p-53
				if prec == Float32 {
					u = 0x1p-24
				}
				var num, den, worst float64
				for a := 0; a < n; a++ {
					for b := n; b < ldk; b++ {
						if K[a*ldk+b] != 0 {
							t.Fatalf("padding K[%d,%d] = %v", a, b, K[a*ldk+b])
						}
					}
					for b := 0; b < n; b++ {
						kd := K[a*ldk+b]
						if math.Float64bits(kd) != math.Float64bits(K[b*ldk+a]) {
							t.Fatalf("K[%d,%d] = %v but K[%d,%d] = %v", a, b, kd, b, a, K[b*ldk+a])
						}
						kr := ref.At(a, b)
						if a == b {
							kr -= k.Hyper.Noise * k.Hyper.Noise
						}
						var S float64
						for q := 0; q < c.d; q++ {
							v := math.Abs(z[a*c.d+q]) + math.Abs(z[b*c.d+q])
							S += v * v
						}
						bound := entryBound(c.fam, s2, S, c.d, u) + entryBound(c.fam, s2, S, c.d, 0x1p-53)
						if e := math.Abs(kd - kr); !(e <= bound) {
							t.Fatalf("K[%d,%d] = %v, float64 %v: off by %.3g, bound %.3g", a, b, kd, kr, e, bound)
						} else {
							worst = max(worst, e/bound)
						}
						num += (kd - kr) * (kd - kr)
						den += kr * kr
					}
				}
				rel := math.Sqrt(num / den)
				t.Logf("‖K − K64‖/‖K64‖ = %.3g; largest error %.2g of its bound", rel, worst)
				if prec == Float64 && !(rel <= 1e-13) {
					t.Errorf("relative error %.3g, want ≤ 1e-13", rel)
				}
			})
		}
	}
}

// colsNorm checks got against want column by column, to tol relative to
// each column's norm; both are r×c row-major.
func colsNorm(t *testing.T, what string, got, want []float64, r, c int, tol float64) {
	t.Helper()
	for j := 0; j < c; j++ {
		var num, den float64
		for i := 0; i < r; i++ {
			e := got[i*c+j] - want[i*c+j]
			num += e * e
			den += want[i*c+j] * want[i*c+j]
		}
		if !(math.Sqrt(num) <= tol*math.Sqrt(den)) {
			t.Fatalf("%s: column %d off by %.3g relative, want ≤ %g", what, j, math.Sqrt(num/den), tol)
		}
	}
}

// The dense product kernel for every column width (1 to 32: one kernel
// each), both precisions, in one chunk and (some widths) in many, with and
// without a column selection, and the triangular products of Solve on an odd-sized
// factor (rows not 16-byte aligned: copied value by value): each against
// gonum's float64 product of the same matrix, the device's own K (or
// factor) downloaded, within 1e-13 relative. For float32 K that isolates
// the product's arithmetic: the sums are float64 (float32 sums would be off
// by about 1e-7), and K's own rounding is TestBuildKernel's.
func TestProductKernel(t *testing.T) {
	needGPU(t)
	const n, m = 300, maxNC
	for _, prec := range []Precision{Float64, Float32} {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/chunked=%v", prec, chunked), func(t *testing.T) {
				if chunked {
					defer forceChunks()()
				}
				rng := rand.New(rand.NewPCG(5, 9))
				x := inputs(rng, n, 4)
				k := testKernel(kernel.Matern52, 4, rng)
				g, err := NewOperator(x, k, Options{Mode: kernel.ModeDense, Precision: prec})
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				kd := deviceArray(t, g, g.dK.p, n*g.ldk)
				K := mat.NewDense(n, n, nil)
				for a := 0; a < n; a++ {
					K.SetRow(a, kd[a*g.ldk:a*g.ldk+n])
				}
				sp, err := g.NewSpace()
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				v := randDense(rng, n, m, 1)
				vb, _ := sp.NewBlock(n, m)
				out, _ := sp.NewBlock(n, m)
				if err := sp.Upload(vb, v.RawMatrix().Data); err != nil {
					t.Fatal(err)
				}
				var hv mat.Dense
				hv.Mul(K, v)
				s2 := g.NoiseVariance()
				for kg := 1; kg <= m; kg++ {
					if chunked && kg > 2 && kg != 17 && kg < m-1 {
						continue // the chunk sums are the same code for every width
					}
					var cols []int // every third column, wrapping, sorted
					if kg < m {
						sel := make([]bool, m)
						for a := 0; a < kg; a++ {
							sel[(3*a+1)%m] = true
						}
						for j, ok := range sel {
							if ok {
								cols = append(cols, j)
							}
						}
					}
					sp.Mul(out, vb, cols)
					got := make([]float64, n*m)
					if err := sp.Download(got, out); err != nil {
						t.Fatal(err)
					}
					gs, ws := make([]float64, n*kg), make([]float64, n*kg)
					for a := 0; a < kg; a++ {
						j := a
						if cols != nil {
							j = cols[a]
						}
						for i := 0; i < n; i++ {
							gs[i*kg+a] = got[i*m+j]
							ws[i*kg+a] = hv.At(i, j) + s2*v.At(i, j)
						}
					}
					colsNorm(t, fmt.Sprintf("Mul of %d columns", kg), gs, ws, n, kg, 1e-13)
				}
				if prec == Float32 {
					return
				}
				// Solve's triangular products, 37×37 factor.
				const kf = 37
				idx := make([]int, kf)
				for i := range idx {
					idx[i] = 7 * i
				}
				ix, _ := sp.NewIndex(idx)
				f, _ := sp.NewBlock(kf, kf)
				sp.Principal(f, ix)
				if err := sp.Factorize(f); err != nil {
					t.Fatal(err)
				}
				fw := make([]float64, kf*kf)
				if err := sp.Download(fw, f); err != nil {
					t.Fatal(err)
				}
				W := mat.NewDense(kf, kf, nil) // W = U⁻¹, upper
				for i := 0; i < kf; i++ {
					for j := i; j < kf; j++ {
						W.Set(i, j, fw[i*kf+j])
					}
				}
				for _, kg := range []int{1, 5, 17, 32} {
					src := randDense(rng, kf, kg, 1)
					sb, _ := sp.NewBlock(kf, kg)
					db, _ := sp.NewBlock(kf, kg)
					if err := sp.Upload(sb, src.RawMatrix().Data); err != nil {
						t.Fatal(err)
					}
					sp.Solve(db, f, sb, nil)
					got := make([]float64, kf*kg)
					if err := sp.Download(got, db); err != nil {
						t.Fatal(err)
					}
					var y, want mat.Dense
					y.Mul(W.T(), src)
					want.Mul(W, &y)
					colsNorm(t, fmt.Sprintf("Solve of %d columns", kg), got, want.RawMatrix().Data, kf, kg, 1e-13)
				}
			})
		}
	}
}

// reduceRef is Σ_ab W_ab ∂H_ab/∂θ, θ = (ℓ_1..ℓ_d, s, σ), by direct float64
// loops over every pair on the scaled inputs z (n×d): the reference of the
// device's reduction for the z it reduced over.
func reduceRef(z []float64, n, d int, fam kernel.Family, h kernel.Hyper, w func(a, b int) float64) []float64 {
	out := make([]float64, d+2)
	sums := make([]float64, d)
	var sm, tr float64
	for a := 0; a < n; a++ {
		tr += w(a, a)
		for b := 0; b < n; b++ {
			var r2 float64
			for k := 0; k < d; k++ {
				u := z[a*d+k] - z[b*d+k]
				r2 += u * u
			}
			r := math.Sqrt(r2)
			var m, dm float64 // m(r) and m'(r)/r
			switch fam {
			case kernel.Matern12:
				m = math.Exp(-r)
				if r > 0 {
					dm = -m / r
				}
			case kernel.Matern32:
				e := math.Exp(-math.Sqrt(3) * r)
				m, dm = (1+math.Sqrt(3)*r)*e, -3*e
			case kernel.Matern52:
				q := math.Sqrt(5) * r
				e := math.Exp(-q)
				m, dm = (1+q+q*q/3)*e, -5.0/3*(1+q)*e
			default:
				m = math.Exp(-r2 / 2)
				dm = -m
			}
			wab := w(a, b)
			sm += wab * m
			for k := 0; k < d; k++ {
				u := z[a*d+k] - z[b*d+k]
				sums[k] -= wab * dm * u * u
			}
		}
	}
	s2 := h.Signal * h.Signal
	for k := 0; k < d; k++ {
		out[k] = s2 / h.Lengthscales[k] * sums[k]
	}
	out[d] = 2 * h.Signal * sm
	out[d+1] = 2 * h.Noise * tr
	return out
}

// The reduction on the device (tiles over the upper triangle, several
// strips of tiles per tile row, [A B] in many pieces, d in one piece or,
// above 32, several) against the host within 1e-13 relative: in float64
// against the CPU operator's Reduce and ReduceDense; in float32 against
// reduceRef on the device's own float32 z, which isolates the arithmetic
// (float64 whatever z's storage; z's rounding is the operator's
// precision's).
func TestReduceKernel(t *testing.T) {
	needGPU(t)
	for _, c := range []struct {
		n, d int
		fam  kernel.Family
	}{{150, 3, kernel.Matern32}, {600, 5, kernel.Matern52}, {140, 20, kernel.RBF}, {131, 40, kernel.Matern12}} {
		for _, prec := range []Precision{Float64, Float32} {
			t.Run(fmt.Sprintf("%v/%v/n%d_d%d", c.fam, prec, c.n, c.d), func(t *testing.T) {
				oc := opCase{n: c.n, d: c.d, fam: c.fam, mode: kernel.ModeMatrixFree, prec: prec}
				g, cpu, _, rng := pair(t, oc, 12)
				a, b := randDense(rng, c.n, 17, 1), randDense(rng, c.n, 17, 1)
				got := make([]float64, c.d+2)
				g.Reduce(got, a, b)
				var want []float64
				if prec == Float64 {
					want = make([]float64, c.d+2)
					cpu.Reduce(want, a, b)
				} else {
					z := deviceArray(t, g, g.dZ.p, c.n*c.d)
					want = reduceRef(z, c.n, c.d, c.fam, g.k.Hyper, func(i, j int) float64 {
						return mat.Dot(a.RowView(i), b.RowView(j))
					})
				}
				if e := relErrVec(got, want); !(e <= 1e-13) {
					t.Errorf("Reduce: relative error %.3g, want ≤ 1e-13\n got %v\nwant %v", e, got, want)
				} else {
					t.Logf("Reduce: relative error %.3g", e)
				}
				if prec == Float32 || c.n > 200 {
					return
				}
				w := randDense(rng, c.n, c.n, 1)
				g.ReduceDense(got, w)
				cpu.ReduceDense(want, w)
				if e := relErrVec(got, want); !(e <= 1e-13) {
					t.Errorf("ReduceDense: relative error %.3g, want ≤ 1e-13\n got %v\nwant %v", e, got, want)
				}
				if err := g.Err(); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// hideStep is a Space without CGStep: CG then does its iteration by the
// separate Space calls, with α and β computed on the host.
type hideStep struct{ solvers.Space }

// hideOp is the operator whose spaces are hideStep.
type hideOp struct{ *Operator }

func (o hideOp) NewSpace() (solvers.Space, error) {
	sp, err := o.Operator.NewSpace()
	if err != nil {
		return nil, err
	}
	return hideStep{sp}, nil
}

// CG with α and β computed on the device (Space.CGStep) gives the bits of
// CG with them computed on the host, iteration by iteration, and the same
// verdict.
func TestCGStepBits(t *testing.T) {
	needGPU(t)
	g, _, b := solveProblem(t, 200, 5, kernel.ModeDense)
	set := solvers.Settings{RelTolMean: 1e-10, RelTolProbes: 1e-8, MaxIterations: 500}
	run := func(op solvers.Operator) []*solvers.State {
		sv, err := solvers.CG{}.Start(op, b, nil, set)
		if err != nil {
			t.Fatal(err)
		}
		defer sv.Close()
		var states []*solvers.State
		for !sv.Done() {
			if err := sv.Iterate(); err != nil {
				t.Fatal(err)
			}
			if sv.Progress().Iteration%7 == 0 {
				states = append(states, sv.State().Clone())
			}
		}
		return append(states, sv.State().Clone())
	}
	fused, split := run(g), run(hideOp{g})
	if len(fused) != len(split) {
		t.Fatalf("%d states with CGStep, %d without", len(fused), len(split))
	}
	for i := range fused {
		f, s := fused[i], split[i]
		if f.Iteration != s.Iteration || f.Converged != s.Converged || !floatbits.Equal(f.V, s.V) || !floatbits.Equal(f.R, s.R) ||
			!floatbits.Equal(f.CG.P, s.CG.P) || !floatbits.Equal(f.CG.RZ, s.CG.RZ) || !floatbits.Equal(f.RelResiduals, s.RelResiduals) {
			t.Fatalf("state %d (iteration %d): CGStep's bits differ from the separate calls'", i, f.Iteration)
		}
	}
	if last := fused[len(fused)-1]; !last.Converged {
		t.Fatalf("no convergence in %d iterations", last.Iteration)
	}
}
