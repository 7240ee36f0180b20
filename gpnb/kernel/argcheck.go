package kernel

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// ArgCheck validates the arguments of the GramOperator methods for an
// operator on n points in d dimensions, so that every implementation (this
// package's Operator, the CUDA one) accepts the same shapes, resizes an empty
// dst the same way and panics on the same misuse with the same message.
// A wrong shape is a programming error, hence a panic rather than an error,
// as in gonum. Pkg prefixes the messages ("kernel", "cuda").
//
// Each method checks the arguments of the GramOperator method of its name
// and returns the sizes the caller needs; a zero size means there is nothing
// to compute.
type ArgCheck struct {
	Pkg  string // the package named in a panic message
	N, D int    // the operator's points and input dimensions
}

// dims panics unless dst is r×c; an empty dst (the zero value, or after
// Reset) is resized, as gonum's methods do.
func (c ArgCheck) dims(method string, dst *mat.Dense, r, cols int) {
	if dst.IsEmpty() && r > 0 && cols > 0 {
		dst.ReuseAs(r, cols)
		return
	}
	if dr, dc := dst.Dims(); dr != r || dc != cols {
		panic(fmt.Sprintf("%s: %s: dst is %d×%d, want %d×%d", c.Pkg, method, dr, dc, r, cols))
	}
}

// indices panics unless every index is in [0, n).
func (c ArgCheck) indices(method string, idx []int) {
	for _, i := range idx {
		if i < 0 || i >= c.N {
			panic(fmt.Sprintf("%s: %s: index %d out of range [0,%d)", c.Pkg, method, i, c.N))
		}
	}
}

// rowsOf panics unless m has want rows and returns its columns.
func (c ArgCheck) rowsOf(method, name string, m *mat.Dense, want int, of string) int {
	r, cols := m.Dims()
	if r != want {
		panic(fmt.Sprintf("%s: %s: %s has %d rows, want %s%d", c.Pkg, method, name, r, of, want))
	}
	return cols
}

// notSame panics when dst and src are the same matrix.
func (c ArgCheck) notSame(method string, dst, src *mat.Dense, name string) {
	if dst == src {
		panic(fmt.Sprintf("%s: %s: dst and %s are the same matrix", c.Pkg, method, name))
	}
}

// MulTo checks MulTo(dst, v): V is n×m, dst is n×m (or empty, then
// resized) and not V. It returns m.
func (c ArgCheck) MulTo(dst, v *mat.Dense) (m int) {
	m = c.rowsOf("MulTo", "V", v, c.N, "")
	c.dims("MulTo", dst, c.N, m)
	c.notSame("MulTo", dst, v, "V")
	return m
}

// RowsMulTo checks RowsMulTo(dst, idx, v): V is n×m, the indices are in
// range and dst is len(idx)×m (or empty, then resized). It returns m, or 0
// when idx is empty (dst is then left as it is).
func (c ArgCheck) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) (m int) {
	m = c.rowsOf("RowsMulTo", "V", v, c.N, "")
	c.indices("RowsMulTo", idx)
	if len(idx) == 0 {
		return 0
	}
	c.dims("RowsMulTo", dst, len(idx), m)
	return m
}

// ColsMulTo checks ColsMulTo(dst, idx, d): D is len(idx)×m, the indices are
// in range and dst is n×m (or empty, then resized) and not D. It returns m.
func (c ArgCheck) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) (m int) {
	m = c.rowsOf("ColsMulTo", "D", d, len(idx), "len(idx) = ")
	c.indices("ColsMulTo", idx)
	c.dims("ColsMulTo", dst, c.N, m)
	c.notSame("ColsMulTo", dst, d, "D")
	return m
}

// BlockTo checks BlockTo(dst, idx): the indices are in range and dst is
// len(idx)×len(idx) (or empty, then resized). It returns len(idx).
func (c ArgCheck) BlockTo(dst *mat.SymDense, idx []int) (m int) {
	c.indices("BlockTo", idx)
	m = len(idx)
	if m == 0 && dst.IsEmpty() {
		return 0 // gonum cannot represent a 0×0 SymDense; nothing to do
	}
	if dst.IsEmpty() {
		dst.ReuseAsSym(m)
	}
	if dm := dst.SymmetricDim(); dm != m {
		panic(fmt.Sprintf("%s: BlockTo: dst is %d×%d, want %d×%d", c.Pkg, dm, dm, m, m))
	}
	return m
}

// DiagTo checks DiagTo(dst): len(dst) ≥ n.
func (c ArgCheck) DiagTo(dst []float64) {
	if len(dst) < c.N {
		panic(fmt.Sprintf("%s: DiagTo: len(dst) = %d, want ≥ %d", c.Pkg, len(dst), c.N))
	}
}

// ColumnTo checks ColumnTo's arguments: len(dst) ≥ n and j in [0, n).
func (c ArgCheck) ColumnTo(dst []float64, j int) {
	if len(dst) < c.N {
		panic(fmt.Sprintf("%s: ColumnTo: len(dst) = %d, want ≥ %d", c.Pkg, len(dst), c.N))
	}
	c.indices("ColumnTo", []int{j})
}

// CrossMulTo checks CrossMulTo(dst, xs, v): Xs is ns×d, V is n×m and dst is
// ns×m (or empty, then resized). It returns ns and m.
func (c ArgCheck) CrossMulTo(dst, xs, v *mat.Dense) (ns, m int) {
	ns, xd := xs.Dims()
	if xd != c.D {
		panic(fmt.Sprintf("%s: CrossMulTo: Xs has %d columns, want %d", c.Pkg, xd, c.D))
	}
	m = c.rowsOf("CrossMulTo", "V", v, c.N, "")
	c.dims("CrossMulTo", dst, ns, m)
	return ns, m
}

// Reduce checks Reduce(dst, a, b): A and B are both n×c and len(dst) is
// d+2. It returns c.
func (c ArgCheck) Reduce(dst []float64, a, b *mat.Dense) (cols int) {
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar != c.N || br != c.N || ac != bc {
		panic(fmt.Sprintf("%s: Reduce: A is %d×%d and B is %d×%d, want both n×c with n = %d", c.Pkg, ar, ac, br, bc, c.N))
	}
	c.reduceDst("Reduce", dst)
	return ac
}

// ReduceDense checks ReduceDense(dst, w): W is n×n and len(dst) is d+2.
func (c ArgCheck) ReduceDense(dst []float64, w *mat.Dense) {
	if r, cols := w.Dims(); r != c.N || cols != c.N {
		panic(fmt.Sprintf("%s: ReduceDense: W is %d×%d, want %d×%d", c.Pkg, r, cols, c.N, c.N))
	}
	c.reduceDst("ReduceDense", dst)
}

// reduceDst panics unless len(dst) is d+2, one entry per hyperparameter
// (ℓ_1..ℓ_d, s, σ): the destination of every gradient reduction.
func (c ArgCheck) reduceDst(method string, dst []float64) {
	if len(dst) != c.D+2 {
		panic(fmt.Sprintf("%s: %s: len(dst) = %d, want d+2 = %d", c.Pkg, method, len(dst), c.D+2))
	}
}
