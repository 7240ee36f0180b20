//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"

	"github.com/gpnb/gpnb/gpnb/kernel"
	"gonum.org/v1/gonum/mat"
)

// Matrix is an r×c matrix resident in the device memory of an Operator, in
// its precision, with rows padded to a multiple of 16 columns. A solver that
// keeps the right-hand sides B and the iterates V on the GPU multiplies them
// with MulDeviceTo, with no host copies per iteration; Upload and Download
// move whole matrices.
type Matrix struct {
	o     *Operator
	buf   dbuf
	r, c  int
	ld    int
	freed bool
}

// NewMatrix allocates an r×c device matrix set to zero.
func (o *Operator) NewMatrix(r, c int) (*Matrix, error) {
	if r < 1 || c < 1 {
		return nil, fmt.Errorf("cuda: NewMatrix: %d×%d: both dimensions must be ≥ 1", r, c)
	}
	if err := o.ready(); err != nil {
		return nil, fmt.Errorf("cuda: NewMatrix: %w", err)
	}
	m := &Matrix{o: o, r: r, c: c, ld: roundUp(c, mc)}
	if err := m.Upload(mat.NewDense(r, c, nil)); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// Dims returns the matrix's dimensions.
func (m *Matrix) Dims() (r, c int) { return m.r, m.c }

// Upload copies src (r×c) to the device.
func (m *Matrix) Upload(src *mat.Dense) error {
	if m.freed {
		return errors.New("cuda: Matrix.Upload: the matrix has been freed")
	}
	if r, c := src.Dims(); r != m.r || c != m.c {
		return fmt.Errorf("cuda: Matrix.Upload: src is %d×%d, want %d×%d", r, c, m.r, m.c)
	}
	return m.o.upload(&m.buf, src.RawMatrix(), m.ld)
}

// Download copies the matrix into dst, which must be r×c or empty (then it
// is resized).
func (m *Matrix) Download(dst *mat.Dense) error {
	if m.freed {
		return errors.New("cuda: Matrix.Download: the matrix has been freed")
	}
	if dst.IsEmpty() {
		dst.ReuseAs(m.r, m.c)
	}
	if r, c := dst.Dims(); r != m.r || c != m.c {
		return fmt.Errorf("cuda: Matrix.Download: dst is %d×%d, want %d×%d", r, c, m.r, m.c)
	}
	return m.o.download(dst.RawMatrix(), &m.buf, m.ld)
}

// Free releases the device memory. The matrix cannot be used afterwards.
func (m *Matrix) Free() error {
	if m.freed {
		return nil
	}
	m.freed = true
	return m.buf.release(m.o.drv)
}

// MulDeviceTo sets dst = H·V on the device, for n×c device matrices of this
// operator; dst and V must be different matrices.
func (o *Operator) MulDeviceTo(dst, v *Matrix) error {
	switch {
	case dst == nil || v == nil:
		return errors.New("cuda: MulDeviceTo: nil matrix")
	case dst.o != o || v.o != o:
		return errors.New("cuda: MulDeviceTo: the matrices belong to another operator: make them with this operator's NewMatrix")
	case dst.freed || v.freed:
		return errors.New("cuda: MulDeviceTo: a matrix has been freed")
	case v.r != o.n || dst.r != o.n || dst.c != v.c:
		return fmt.Errorf("cuda: MulDeviceTo: V is %d×%d and dst %d×%d, want both n×c with n = %d", v.r, v.c, dst.r, dst.c, o.n)
	case dst == v:
		return errors.New("cuda: MulDeviceTo: dst and V are the same matrix")
	}
	if err := o.ready(); err != nil {
		return fmt.Errorf("cuda: MulDeviceTo: %w", err)
	}
	p := product{zr: o.dZ.p, nr: o.n, nc: o.n, mp: v.ld, noise: true, useCache: o.mode == kernel.ModeDense, v: v.buf.p, out: dst.buf.p}
	if err := o.run(p); err != nil {
		return fmt.Errorf("cuda: MulDeviceTo: %w", err)
	}
	o.products += int64(v.c)
	o.rows += int64(o.n)
	return nil
}
