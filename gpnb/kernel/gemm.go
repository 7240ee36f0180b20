package kernel

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// float is the element type of the dense cache and of the products K·V:
// float64, or float32 with Options.Precision Float32. The code of both
// precisions is one generic code; gemm sends it to blas64 or blas32.
type float interface{ float32 | float64 }

// general is a row-major block of T, as blas64.General or blas32.General.
type general[T float] struct {
	Rows, Cols, Stride int
	Data               []T
}

// asT returns x as []T when T is X's type (a view, no copy), and false
// otherwise. The conversion goes through a pointer, so it allocates nothing.
func asT[T, X float](x []X) ([]T, bool) {
	p, ok := any(&x).(*[]T)
	if !ok {
		return nil, false
	}
	return *p, true
}

// gemm sets c = alpha·op(a)·op(b) + beta·c with blas64.Gemm or blas32.Gemm,
// whichever T is: with -tags openblas both go to OpenBLAS (dgemm, sgemm),
// otherwise to gonum's pure-Go kernels.
func gemm[T float](tA, tB blas.Transpose, alpha T, a, b general[T], beta T, c general[T]) {
	if _, ok := asT[float64](a.Data); ok {
		blas64.Gemm(tA, tB, float64(alpha), to64(a), to64(b), float64(beta), to64(c))
		return
	}
	blas32.Gemm(tA, tB, float32(alpha), to32(a), to32(b), float32(beta), to32(c))
}

// to64 returns g as a blas64.General (a view) when T is float64.
func to64[T float](g general[T]) blas64.General {
	d, _ := asT[float64](g.Data)
	return blas64.General{Rows: g.Rows, Cols: g.Cols, Stride: g.Stride, Data: d}
}

// to32 returns g as a blas32.General (a view) when T is float32.
func to32[T float](g general[T]) blas32.General {
	d, _ := asT[float32](g.Data)
	return blas32.General{Rows: g.Rows, Cols: g.Cols, Stride: g.Stride, Data: d}
}

// asGeneral returns g as a general[T] view when T is float64, and false
// otherwise.
func asGeneral[T float](g blas64.General) (general[T], bool) {
	d, ok := asT[T](g.Data)
	return general[T]{Rows: g.Rows, Cols: g.Cols, Stride: g.Stride, Data: d}, ok
}

// colsOf returns columns [j0, j1) of g.
func colsOf[T float](g general[T], j0, j1 int) general[T] {
	return general[T]{Rows: g.Rows, Cols: j1 - j0, Stride: g.Stride, Data: g.Data[j0:]}
}

// rowsOf returns rows [r0, r1) of g.
func rowsOf[T float](g general[T], r0, r1 int) general[T] {
	if r0 == r1 {
		return general[T]{Rows: 0, Cols: g.Cols, Stride: g.Stride}
	}
	return general[T]{Rows: r1 - r0, Cols: g.Cols, Stride: g.Stride, Data: g.Data[r0*g.Stride:]}
}

// convertInto sets *buf to v converted to T, packed, transposed (m×r for v
// r×m) when transpose is set, and returns it. Products take the right-hand
// sides transposed so that gemm runs as long dot products (K row · Vᵀ row),
// which gonum's kernels do about twice as fast as short axpys on n×17
// blocks; for float32 this is also the one conversion of V per product.
func convertInto[T float](buf *[]T, v blas64.General, transpose bool) general[T] {
	r, m := v.Rows, v.Cols
	*buf = grow(*buf, r*m)
	out := *buf
	ri, rj := m, 1 // out[i*ri+j*rj] = v[i,j]
	if transpose {
		ri, rj = 1, r
	}
	for i := 0; i < r; i++ {
		for j, x := range v.Data[i*v.Stride : i*v.Stride+m] {
			out[i*ri+j*rj] = T(x)
		}
	}
	if transpose {
		return general[T]{Rows: m, Cols: r, Stride: max(r, 1), Data: out}
	}
	return general[T]{Rows: r, Cols: m, Stride: max(m, 1), Data: out}
}

// storeInto sets dst to src (r×c, leading dimension lds) converted to
// float64, or adds it to dst: the one conversion of a float32 product back.
func storeInto[T float](dst blas64.General, src []T, lds int, add bool) {
	for a := 0; a < dst.Rows; a++ {
		row := dst.Data[a*dst.Stride : a*dst.Stride+dst.Cols]
		for c, x := range src[a*lds : a*lds+dst.Cols] {
			if add {
				row[c] += float64(x)
			} else {
				row[c] = float64(x)
			}
		}
	}
}
