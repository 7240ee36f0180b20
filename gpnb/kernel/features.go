package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/par"
)

// DefaultFeatures is the default number of random Fourier features F, the
// value Lin et al. (2024) use.
const DefaultFeatures = 2000

// Second PCG seed words of the independent streams the draws come from (the
// first is the seed), one per kind of draw, so that changing one size (the
// number of samples, or n) leaves the other draws as they were.
const (
	streamFreqs   = 0x5fe0c1e7a3d4b2f1 // g: F/2×d standard normals
	streamChiSq   = 0x2b7e151628aed2a6 // u: F/2 chi-square draws
	streamWeights = 0x3243f6a8885a308d // w: F×s standard normals
	streamNoise   = 0x13198a2e03707344 // ε: n×s standard normals
)

// PriorSamples is a set of s prior function samples f_j(x) = φ(x)ᵀw_j of a
// Gaussian process, defined by F random Fourier features, for the pathwise
// gradient estimator of Lin, Padhy, Mlodozeniec, Antorán and
// Hernández-Lobato, "Improving Linear System Solvers for Hyperparameter
// Optimisation in Iterative Gaussian Processes" (NeurIPS 2024, arXiv
// 2405.18457). It holds only the θ-free random draws, as plain data (gob
// and JSON encode it); EvalTo rescales them to the kernel it is given.
// NewPriorSamples draws them from a seed.
//
// The kernels are k(x,x') = s²·m(‖τ‖) with τ = (x−x')/ℓ. By Bochner's
// theorem m(‖τ‖) = E_ω[cos(ωᵀτ)] for ω drawn from the normalised spectral
// density of m (m(0) = 1):
//
//   - RBF, m(r) = exp(−r²/2): ω ~ N(0, I_d).
//   - Matérn-ν, m(r) = 2^{1−ν}/Γ(ν)·(√(2ν)r)^ν·K_ν(√(2ν)r), which is
//     exp(−r), (1+√3r)e^{−√3r} and (1+√5r+5r²/3)e^{−√5r} for ν = 1/2, 3/2,
//     5/2, exactly as Family.Eval has them: the density is
//     ∝ (2ν + ‖ω‖²)^{−(ν+d/2)}, the multivariate Student-t with 2ν degrees
//     of freedom and identity scale, drawn as ω = g·√(2ν/u) with
//     g ~ N(0, I_d) and u ~ χ²(2ν).
//
// With F/2 frequencies ω_i, the features
//
//	φ(x) = s·√(2/F)·[cos(ω_iᵀ(x/ℓ)), sin(ω_iᵀ(x/ℓ))]_{i=1..F/2}
//
// give φ(x)ᵀφ(x') = s²·(2/F)·Σ_i cos(ω_iᵀτ), an average of F/2 independent
// unbiased estimates of k(x,x'): E[φ(x)ᵀφ(x')] = k(x,x') exactly, with
// variance (2/F)·s⁴·((1+m(2r))/2 − m(r)²), so the error falls as 1/√F (and
// φ(x)ᵀφ(x) = s² exactly). A prior function sample is f(x) = φ(x)ᵀw with
// w ~ N(0, I_F), so Cov[f(x), f(x')] = φ(x)ᵀφ(x').
//
// Only g, u and w are random, and they do not depend on θ = (ℓ, s): a new θ
// rescales the same draws (ω_i/ℓ and s), so the prior samples stay fixed
// while θ is optimised and the previous solves remain good warm starts.
type PriorSamples struct {
	// Family is the kernel family whose spectral density Freqs and ChiSq
	// were drawn for; EvalTo accepts kernels of this family only.
	Family Family
	// Dim is the input dimension d.
	Dim int
	// Features is F, the number of features: F/2 frequencies, each giving
	// a cosine and a sine feature. Even and > 0.
	Features int
	// Samples is s, the number of function samples.
	Samples int
	// Seed is the seed the draws came from (for the record; the draws
	// below are what is used).
	Seed uint64
	// Freqs are the standard-normal draws g_i, F/2×d row-major.
	Freqs []float64
	// ChiSq are the χ²(2ν) draws u_i of the Matérn families, one per
	// frequency (F/2 values, all > 0); empty for RBF.
	ChiSq []float64
	// Weights are the standard-normal weights w_j as columns, F×s
	// row-major: rows 0..F/2−1 weigh the cosines, F/2..F−1 the sines.
	Weights []float64
}

// spectralDoF returns 2ν, the Student-t degrees of freedom of a Matérn
// family's spectral density, and 0 for RBF (Gaussian).
func spectralDoF(f Family) int {
	switch f {
	case Matern12:
		return 1
	case Matern32:
		return 3
	case Matern52:
		return 5
	}
	return 0
}

// NewPriorSamples draws the random features and weights of s prior function
// samples of family fam on d input dimensions, with F features, from seed
// (math/rand/v2 PCG, one stream per kind of draw). The same arguments give
// the same draws on every machine. Frequencies are drawn one after another
// and weights sample by sample, so the first F/2 frequencies of a larger F
// and the first samples of a larger s are the same draws.
func NewPriorSamples(fam Family, d, features, samples int, seed uint64) (*PriorSamples, error) {
	if !fam.Valid() {
		return nil, fmt.Errorf("kernel: NewPriorSamples: unknown family %v: use Matern12, Matern32, Matern52 or RBF", fam)
	}
	if d <= 0 {
		return nil, fmt.Errorf("kernel: NewPriorSamples: d = %d: the inputs need at least one dimension", d)
	}
	if err := checkFeatureCount(features); err != nil {
		return nil, fmt.Errorf("kernel: NewPriorSamples: %w", err)
	}
	if samples <= 0 {
		return nil, fmt.Errorf("kernel: NewPriorSamples: %d samples: draw at least one", samples)
	}
	m := features / 2
	p := &PriorSamples{Family: fam, Dim: d, Features: features, Samples: samples, Seed: seed}
	p.Freqs = normals(seed, streamFreqs, m*d)
	if df := spectralDoF(fam); df > 0 {
		// χ²(k) for integer k is a sum of k squared standard normals: exact,
		// and no gamma sampler is needed. u = 0 (probability zero in exact
		// arithmetic) would give an infinite frequency, so it is redrawn.
		rng := rand.New(rand.NewPCG(seed, streamChiSq))
		p.ChiSq = make([]float64, m)
		for i := range p.ChiSq {
			for p.ChiSq[i] == 0 {
				var u float64
				for k := 0; k < df; k++ {
					g := rng.NormFloat64()
					u += g * g
				}
				p.ChiSq[i] = u
			}
		}
	}
	p.Weights = normalColumns(seed, streamWeights, features, samples)
	return p, nil
}

// checkFeatureCount checks F.
func checkFeatureCount(f int) error {
	if f <= 0 || f%2 != 0 {
		return fmt.Errorf("%d random features: use an even number > 0 (features come in cosine/sine pairs; the default is %d)", f, DefaultFeatures)
	}
	return nil
}

// normals returns n standard normals from the PCG stream (seed, stream).
func normals(seed, stream uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, stream))
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64()
	}
	return out
}

// normalColumns returns a rows×cols row-major matrix of standard normals,
// drawn column by column, so column j is the same for any cols > j.
func normalColumns(seed, stream uint64, rows, cols int) []float64 {
	rng := rand.New(rand.NewPCG(seed, stream))
	out := make([]float64, rows*cols)
	for j := 0; j < cols; j++ {
		for i := 0; i < rows; i++ {
			out[i*cols+j] = rng.NormFloat64()
		}
	}
	return out
}

// Validate checks that p is consistent (sizes, lengths, finite draws and
// positive χ² values), e.g. after decoding it from a checkpoint.
func (p *PriorSamples) Validate() error {
	if p == nil {
		return fmt.Errorf("kernel: PriorSamples is nil: draw them with NewPriorSamples")
	}
	if !p.Family.Valid() {
		return fmt.Errorf("kernel: PriorSamples: unknown family %v", p.Family)
	}
	if p.Dim <= 0 || p.Samples <= 0 {
		return fmt.Errorf("kernel: PriorSamples: Dim = %d and Samples = %d must both be > 0", p.Dim, p.Samples)
	}
	if err := checkFeatureCount(p.Features); err != nil {
		return fmt.Errorf("kernel: PriorSamples: %w", err)
	}
	m := p.Features / 2
	wantChi := 0
	if spectralDoF(p.Family) > 0 {
		wantChi = m
	}
	if len(p.Freqs) != m*p.Dim || len(p.ChiSq) != wantChi || len(p.Weights) != p.Features*p.Samples {
		return fmt.Errorf("kernel: PriorSamples: %d frequency, %d χ² and %d weight values, want %d, %d and %d for F = %d, d = %d, s = %d, %v: the draws are incomplete; draw them again with NewPriorSamples",
			len(p.Freqs), len(p.ChiSq), len(p.Weights), m*p.Dim, wantChi, p.Features*p.Samples, p.Features, p.Dim, p.Samples, p.Family)
	}
	for _, part := range []struct {
		name string
		v    []float64
	}{{"Freqs", p.Freqs}, {"Weights", p.Weights}} {
		for i, v := range part.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("kernel: PriorSamples: %s[%d] is %v: the draws are corrupt; draw them again", part.name, i, v)
			}
		}
	}
	for i, u := range p.ChiSq {
		if !(u > 0) || math.IsInf(u, 0) {
			return fmt.Errorf("kernel: PriorSamples: ChiSq[%d] is %v: χ² draws must be finite and > 0; draw them again", i, u)
		}
	}
	return nil
}

// check validates k, the n×d input matrix x and the n×cols dst for an
// evaluation of p (already validated).
func (p *PriorSamples) check(method string, dst, x *mat.Dense, k Kernel, cols int) error {
	if k.Family != p.Family {
		return fmt.Errorf("kernel: %s: the features were drawn for %v but the kernel is %v: draw PriorSamples for %v", method, p.Family, k.Family, k.Family)
	}
	if err := checkKernel(k, p.Dim); err != nil {
		return fmt.Errorf("kernel: %s: %w", method, err)
	}
	if x == nil {
		return fmt.Errorf("kernel: %s: X is nil", method)
	}
	n, d := x.Dims()
	if d != p.Dim {
		return fmt.Errorf("kernel: %s: X is %d×%d but the features are for d = %d input dimensions", method, n, d, p.Dim)
	}
	for i := 0; i < n; i++ {
		for j, v := range x.RawRowView(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("kernel: %s: X[%d,%d] is %v: inputs must be finite (drop or impute missing values)", method, i, j, v)
			}
		}
	}
	return checkDstDims(method, dst, n, cols)
}

// checkDstDims returns an error unless dst is r×c.
func checkDstDims(method string, dst *mat.Dense, r, c int) error {
	if dst == nil {
		return fmt.Errorf("kernel: %s: dst is nil: pass a %d×%d matrix", method, r, c)
	}
	if dr, dc := dst.Dims(); dr != r || dc != c {
		return fmt.Errorf("kernel: %s: dst is %d×%d, want %d×%d", method, dr, dc, r, c)
	}
	return nil
}

// freqsT returns the frequencies rescaled to k, transposed: the d×F/2
// row-major matrix with entry (j, i) = g_ij·√(2ν/u_i)/ℓ_j, so that
// X·freqsT holds ω_iᵀ(x/ℓ) for every row x of X.
func (p *PriorSamples) freqsT(k Kernel) blas64.General {
	m, d := p.Features/2, p.Dim
	df := float64(spectralDoF(p.Family))
	ot := make([]float64, d*m)
	for i := 0; i < m; i++ {
		c := 1.0
		if df > 0 {
			c = math.Sqrt(df / p.ChiSq[i])
		}
		for j, l := range k.Hyper.Lengthscales {
			ot[j*m+i] = p.Freqs[i*d+j] * c / l
		}
	}
	return blas64.General{Rows: d, Cols: m, Stride: m, Data: ot}
}

// scale returns s·√(2/F), the factor in front of every feature.
func (p *PriorSamples) scale(k Kernel) float64 {
	return k.Hyper.Signal * math.Sqrt(2/float64(p.Features))
}

// trigTile sets buf (rows×F, leading dimension F) to the unscaled features
// [cos(a), sin(a)] of the rows of x, with a = x·ot (rows×F/2).
func trigTile(buf []float64, x blas64.General, ot blas64.General) {
	rows, m := x.Rows, ot.Cols
	f := 2 * m
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, x, ot, 0, blas64.General{Rows: rows, Cols: m, Stride: f, Data: buf})
	for a := 0; a < rows; a++ {
		row := buf[a*f : (a+1)*f]
		for i, v := range row[:m] {
			row[m+i], row[i] = math.Sincos(v)
		}
	}
}

// FeaturesTo sets dst (n×F) to the features φ(X) of the rows of the n×d
// matrix X at kernel k, so that φ(X)φ(X)ᵀ is the feature approximation of
// K(X,X). It materialises n×F values: for inspection and tests; EvalTo
// evaluates the samples without it.
func (p *PriorSamples) FeaturesTo(dst, x *mat.Dense, k Kernel) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := p.check("FeaturesTo", dst, x, k, p.Features); err != nil {
		return err
	}
	n, _ := x.Dims()
	ot := p.freqsT(k)
	X, D := x.RawMatrix(), dst.RawMatrix()
	alpha := p.scale(k)
	par.ForTiles(par.Tiles(n, rowTile), gomaxprocs(), func(_, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		for a := i0; a < i1; a++ {
			row := D.Data[a*D.Stride : a*D.Stride+p.Features]
			trigTile(row, sub(X, a, a+1), ot)
			for i := range row {
				row[i] *= alpha
			}
		}
	})
	return nil
}

// EvalTo sets dst (n×s) to the prior function samples at the rows of the
// n×d matrix X, dst[a,j] = f_j(x_a) = φ(x_a)ᵀw_j, with the features rescaled
// to kernel k (its family must be p.Family; the noise scale is not used).
// Rows are cut into fixed tiles of rowTile, each formed as a rowTile×F
// block of features and multiplied by the F×s weights, so no n×F matrix
// is held and the bits do not depend on GOMAXPROCS. Row a of the result
// depends only on x_a up to the rounding of the tile's gemm.
func (p *PriorSamples) EvalTo(dst, x *mat.Dense, k Kernel) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := p.check("EvalTo", dst, x, k, p.Samples); err != nil {
		return err
	}
	p.evalTo(dst.RawMatrix(), x.RawMatrix(), k)
	return nil
}

// evalTo is EvalTo on checked arguments.
func (p *PriorSamples) evalTo(dst, x blas64.General, k Kernel) {
	n, f, s := x.Rows, p.Features, p.Samples
	if n == 0 {
		return
	}
	ot := p.freqsT(k)
	w := blas64.General{Rows: f, Cols: s, Stride: s, Data: p.Weights}
	alpha := p.scale(k)
	nt := par.Tiles(n, rowTile)
	workers := min(gomaxprocs(), nt)
	bufs := make([][]float64, workers) // one rowTile×F block of features per goroutine
	par.ForTiles(nt, workers, func(wk, t int) {
		i0, i1 := par.Span(t, n, rowTile)
		bufs[wk] = grow(bufs[wk], (i1-i0)*f)
		trigTile(bufs[wk], sub(x, i0, i1), ot)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha,
			blas64.General{Rows: i1 - i0, Cols: f, Stride: f, Data: bufs[wk]}, w,
			0, sub(dst, i0, i1))
	})
}
