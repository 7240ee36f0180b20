package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Dataset is a regression problem split into training and test parts. Inputs
// are n×d row-major matrices; targets are vectors. When Stats.Normalised is
// true, every value is on the z-scored scale of the training split.
type Dataset struct {
	Name  string // "pol", a CSV file's base name, or "synthetic"
	Split int    // split index 0–9 for the UCI sets and Open's synthetic-N-D-SEED; 0 otherwise
	// Source names the data so that Open(Source, Split(Split)) loads them
	// again: the UCI name, synthetic-N-D-SEED, or the CSV file's path as
	// given. Subset, SubsetSeed and Normalise are not part of it. It is not
	// part of the Fingerprint.
	Source string

	XTrain *mat.Dense
	YTrain []float64
	XTest  *mat.Dense // may have zero rows (nil) when there is no test part
	YTest  []float64

	Stats Stats
	// Columns records the CSV columns the data were read from (LoadCSV);
	// zero for other data. It is not part of the Fingerprint.
	Columns Columns

	warnings []Warning // see Warnings
}

// Stats are the training split's statistics used for z-scoring, kept so
// predictions can be mapped back to the original scale.
type Stats struct {
	Normalised bool
	XMean      []float64 // per input column
	XStd       []float64 // population standard deviation (ddof=0); a constant column gets 1
	YMean      float64
	YStd       float64
}

// NTrain returns the number of training points.
func (d *Dataset) NTrain() int { return len(d.YTrain) }

// NTest returns the number of test points (0 when there is no test part).
func (d *Dataset) NTest() int { return len(d.YTest) }

// D returns the number of input dimensions.
func (d *Dataset) D() int {
	if d.XTrain == nil {
		return 0
	}
	_, c := d.XTrain.Dims()
	return c
}

// String returns a one-line summary, e.g.
// "pol split 0: 13500 train, 1500 test, d=26, normalised".
func (d *Dataset) String() string {
	norm := "not normalised"
	if d.Stats.Normalised {
		norm = "normalised"
	}
	return fmt.Sprintf("%s split %d: %d train, %d test, d=%d, %s", d.Name, d.Split, d.NTrain(), d.NTest(), d.D(), norm)
}

// Fingerprint returns the hex SHA-256 of the dataset's name, split, the
// shapes of its four arrays and the IEEE-754 bits of all their values. Two
// datasets have the same fingerprint exactly when they hold the same numbers
// in the same order; checkpoints use it to refuse resuming on other data.
func (d *Dataset) Fingerprint() string {
	h := sha256.New()
	var buf [8]byte
	putU := func(u uint64) {
		binary.LittleEndian.PutUint64(buf[:], u)
		h.Write(buf[:])
	}
	putU(uint64(len(d.Name)))
	h.Write([]byte(d.Name))
	putU(uint64(int64(d.Split)))
	// Stream in chunks so hashing a large dataset allocates a small buffer only.
	chunk := make([]byte, 0, 8<<10)
	putFloats := func(v []float64) {
		putU(uint64(len(v)))
		for _, x := range v {
			chunk = binary.LittleEndian.AppendUint64(chunk, math.Float64bits(x))
			if len(chunk) == cap(chunk) {
				h.Write(chunk)
				chunk = chunk[:0]
			}
		}
		h.Write(chunk)
		chunk = chunk[:0]
	}
	putMat := func(m *mat.Dense) {
		if m == nil || m.IsEmpty() {
			putU(0)
			putU(0)
			return
		}
		r, c := m.Dims()
		putU(uint64(r))
		putU(uint64(c))
		raw := m.RawMatrix()
		for i := 0; i < r; i++ {
			putFloats(raw.Data[i*raw.Stride : i*raw.Stride+c])
		}
	}
	putMat(d.XTrain)
	putFloats(d.YTrain)
	putMat(d.XTest)
	putFloats(d.YTest)
	return hex.EncodeToString(h.Sum(nil))
}

// OriginalMeanTo maps predictive means (or targets) from the normalised
// scale back to the original one: dst[i] = YMean + YStd·mean[i]. dst may be
// mean itself. Without normalisation it copies.
func (s Stats) OriginalMeanTo(dst, mean []float64) error {
	if len(dst) != len(mean) {
		return fmt.Errorf("%w: OriginalMeanTo: len(dst) = %d, len(mean) = %d; make them equal", ErrDims, len(dst), len(mean))
	}
	a, b := s.yScale()
	for i, m := range mean {
		dst[i] = a + b*m
	}
	return nil
}

// OriginalVarTo maps predictive variances from the normalised scale back to
// the original one: dst[i] = YStd²·v[i]. dst may be v itself. (A standard
// deviation or an RMSE scales by YStd alone.)
func (s Stats) OriginalVarTo(dst, v []float64) error {
	if len(dst) != len(v) {
		return fmt.Errorf("%w: OriginalVarTo: len(dst) = %d, len(v) = %d; make them equal", ErrDims, len(dst), len(v))
	}
	_, b := s.yScale()
	for i, x := range v {
		dst[i] = b * b * x
	}
	return nil
}

// OriginalXTo maps inputs from the normalised scale back to the original
// one (one point a row): it inverts NormaliseXTo. dst must have x's shape
// and may be x itself.
func (s Stats) OriginalXTo(dst, x *mat.Dense) error {
	return s.mapX("OriginalXTo", dst, x, func(j int, v float64) float64 { return s.XMean[j] + s.XStd[j]*v })
}

// NormaliseYTo maps targets from the original scale to the normalised one:
// dst[i] = (y[i] − YMean)/YStd. It inverts OriginalMeanTo.
func (s Stats) NormaliseYTo(dst, y []float64) error {
	if len(dst) != len(y) {
		return fmt.Errorf("%w: NormaliseYTo: len(dst) = %d, len(y) = %d; make them equal", ErrDims, len(dst), len(y))
	}
	a, b := s.yScale()
	for i, x := range y {
		dst[i] = (x - a) / b
	}
	return nil
}

// NormaliseXTo z-scores new inputs x (on the original scale, one point a
// row) with the training statistics into dst, so they can be fed to a model
// trained on the dataset. dst must have x's shape and may be x itself.
func (s Stats) NormaliseXTo(dst, x *mat.Dense) error {
	return s.mapX("NormaliseXTo", dst, x, func(j int, v float64) float64 { return (v - s.XMean[j]) / s.XStd[j] })
}

// mapX sets dst = x with f(j, v) applied to every value v of column j when
// the data are normalised (a copy otherwise), after checking that dst has
// x's shape and x the dataset's inputs; dst may be x itself.
func (s Stats) mapX(method string, dst, x *mat.Dense, f func(j int, v float64) float64) error {
	if dst == nil || x == nil {
		return fmt.Errorf("%w: %s: nil matrix", ErrDims, method)
	}
	r, c := x.Dims()
	if dr, dc := dst.Dims(); dr != r || dc != c {
		return fmt.Errorf("%w: %s: dst is %d×%d, x is %d×%d; make them equal", ErrDims, method, dr, dc, r, c)
	}
	if s.Normalised && len(s.XMean) != c {
		return fmt.Errorf("%w: %s: x has %d columns, the dataset has %d inputs", ErrDims, method, c, len(s.XMean))
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			v := x.At(i, j)
			if s.Normalised {
				v = f(j, v)
			}
			dst.Set(i, j, v)
		}
	}
	return nil
}

func (s Stats) yScale() (mean, std float64) {
	if !s.Normalised {
		return 0, 1
	}
	return s.YMean, s.YStd
}
