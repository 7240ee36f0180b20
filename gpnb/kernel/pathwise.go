package kernel

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// PathwiseDraws is the fixed randomness of the pathwise gradient estimator
// of Lin et al., "Improving Linear System Solvers for Hyperparameter
// Optimisation in Iterative Gaussian Processes" (NeurIPS 2024, arXiv
// 2405.18457), for n training points, as plain data: the prior function
// samples and the standard-normal draws of the noise ε. Like fixed
// Hutchinson probes, it is drawn once and rescaled as θ changes (ProbesTo),
// so the right-hand sides move smoothly with θ and warm starts stay good.
//
// The marginal-likelihood gradient (eq. 4 of the warm-start paper) is
// ∂L/∂θ = ½·v_yᵀ(∂H/∂θ)v_y − ½·tr(H⁻¹∂H/∂θ) with v_y = H⁻¹y. Hutchinson
// estimates the trace with probes z ~ N(0, I) and solves H v = z. The
// pathwise estimator draws the probes ξ_j ~ N(0, H) instead and solves
// ζ_j = H⁻¹ξ_j: then ζ_j ~ N(0, H⁻¹) and
//
//	E[ζ_jᵀ(∂H/∂θ)ζ_j] = tr(∂H/∂θ·H⁻¹HH⁻¹) = tr(H⁻¹∂H/∂θ),
//
// so (1/s)·Σ_j ζ_jᵀ(∂H/∂θ)ζ_j is unbiased (PathwiseTrace). ProbesTo draws
// ξ_j = f_j(X) + ε_j with f_j a random-feature prior sample and
// ε_j ~ N(0, σ²I), whose covariance is K̃ + σ²I with K̃ the feature kernel:
// for a fixed feature draw the estimate's bias is tr(H⁻¹∂H H⁻¹(K̃−K)), of
// order 1/√F and zero on average over feature draws. The same ζ_j give
// posterior function samples with no further solve (pathwise conditioning,
// Matheron's rule; PathwisePosterior):
//
//	f_j(·|y) = f_j(·) + k(·, X)·(v_y − ζ_j).
type PathwiseDraws struct {
	// Prior holds the random features and weights of f_1..f_s.
	Prior PriorSamples
	// N is the number of training points n.
	N int
	// Noise holds the standard-normal draws of ε_1..ε_s as columns, n×s
	// row-major, drawn column by column; ε_j is σ times column j.
	Noise []float64
}

// NewPathwiseDraws draws the pathwise estimator's randomness for n training
// points in d dimensions, with s samples of F random features of family fam,
// from seed. The draws come from separate PCG streams of the seed, so the
// prior samples do not depend on n.
func NewPathwiseDraws(fam Family, n, d, features, samples int, seed uint64) (*PathwiseDraws, error) {
	if n <= 0 {
		return nil, fmt.Errorf("kernel: NewPathwiseDraws: n = %d: give at least one training point", n)
	}
	prior, err := NewPriorSamples(fam, d, features, samples, seed)
	if err != nil {
		return nil, err
	}
	return &PathwiseDraws{Prior: *prior, N: n, Noise: normalColumns(seed, streamNoise, n, samples)}, nil
}

// Validate checks that p is consistent, e.g. after decoding it.
func (p *PathwiseDraws) Validate() error {
	if p == nil {
		return fmt.Errorf("kernel: PathwiseDraws is nil: draw them with NewPathwiseDraws")
	}
	if err := p.Prior.Validate(); err != nil {
		return err
	}
	if p.N <= 0 || len(p.Noise) != p.N*p.Prior.Samples {
		return fmt.Errorf("kernel: PathwiseDraws: N = %d with %d noise values, want N > 0 and N·s = N·%d values: draw them again with NewPathwiseDraws", p.N, len(p.Noise), p.Prior.Samples)
	}
	for i, v := range p.Noise {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("kernel: PathwiseDraws: Noise[%d] is %v: the draws are corrupt; draw them again", i, v)
		}
	}
	return nil
}

// ProbesTo sets dst (n×s) to the pathwise probes ξ_j = f_j(X) + σ·ε_j at
// kernel k (σ = k.Hyper.Noise), for the n×d training inputs X: the
// right-hand sides whose solutions ζ_j = H⁻¹ξ_j PathwiseGradient and
// PathwisePosterior use. ξ_j ~ N(0, K̃ + σ²I) over the draws.
func (p *PathwiseDraws) ProbesTo(dst, x *mat.Dense, k Kernel) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if x != nil {
		if n, _ := x.Dims(); n != p.N {
			return fmt.Errorf("kernel: ProbesTo: X has %d rows but the draws are for n = %d training points", n, p.N)
		}
	}
	if err := p.Prior.check("ProbesTo", dst, x, k, p.Prior.Samples); err != nil {
		return err
	}
	s := p.Prior.Samples
	D := dst.RawMatrix()
	p.Prior.evalTo(D, x.RawMatrix(), k)
	sigma := k.Hyper.Noise
	for i := 0; i < p.N; i++ {
		row := D.Data[i*D.Stride : i*D.Stride+s]
		for j, e := range p.Noise[i*s : (i+1)*s] {
			row[j] += sigma * e
		}
	}
	return nil
}

// checkOp returns op's size, or an error when op is nil.
func checkOp(method string, op GramOperator) (n int, err error) {
	if op == nil {
		return 0, fmt.Errorf("kernel: %s: the operator is nil", method)
	}
	return op.Size(), nil
}

// checkMat returns an error unless m is non-nil and r×c (c < 0: any c ≥ 1).
func checkMat(method, name string, m *mat.Dense, r, c int) error {
	if m == nil {
		return fmt.Errorf("kernel: %s: %s is nil", method, name)
	}
	mr, mc := m.Dims()
	if mr != r || (c >= 0 && mc != c) || (c < 0 && mc < 1) {
		want := fmt.Sprintf("%d×%d", r, c)
		if c < 0 {
			want = fmt.Sprintf("%d rows and at least one column", r)
		}
		return fmt.Errorf("kernel: %s: %s is %d×%d, want %s", method, name, mr, mc, want)
	}
	return nil
}

// PathwiseTrace sets dst[k] = (1/s)·Σ_j ζ_jᵀ(∂H/∂θ_k)ζ_j, θ = (ℓ_1..ℓ_d, s, σ),
// for the n×s solutions ζ = H⁻¹ξ of the pathwise probes: the pathwise
// estimate of tr(H⁻¹∂H/∂θ_k) (unbiased when ξ_j ~ N(0, H)). It is one
// op.Reduce with W = (1/s)·ζζᵀ = (ζ/s)·ζᵀ; len(dst) must be d+2.
func PathwiseTrace(dst []float64, op GramOperator, zeta *mat.Dense) error {
	n, s, err := checkReduce("PathwiseTrace", dst, op, nil, zeta)
	if err != nil {
		return err
	}
	a := mat.NewDense(n, s, nil)
	a.Scale(1/float64(s), zeta)
	op.Reduce(dst, a, zeta)
	return nil
}

// PathwiseGradient sets dst to the pathwise estimate of the marginal
// likelihood gradient ∂L/∂θ_k = ½·v_yᵀ(∂H/∂θ_k)v_y − ½·tr(H⁻¹∂H/∂θ_k) (eq. 4
// of the warm-start paper), with θ = (ℓ_1..ℓ_d, s, σ) in constrained values
// and the trace estimated as in PathwiseTrace, given v_y = H⁻¹y (n×1) and
// ζ = H⁻¹ξ (n×s). It is one fused op.Reduce with
// W = ½·v_y v_yᵀ − (1/2s)·Σ_j ζ_jζ_jᵀ = A·Bᵀ, A = [½v_y, −ζ/(2s)],
// B = [v_y, ζ]: the Hutchinson reduction with ζ_j in place of the probes.
func PathwiseGradient(dst []float64, op GramOperator, vy, zeta *mat.Dense) error {
	n, s, err := checkReduce("PathwiseGradient", dst, op, vy, zeta)
	if err != nil {
		return err
	}
	a := mat.NewDense(n, s+1, nil)
	b := mat.NewDense(n, s+1, nil)
	a.Slice(0, n, 0, 1).(*mat.Dense).Scale(0.5, vy)
	a.Slice(0, n, 1, s+1).(*mat.Dense).Scale(-1/(2*float64(s)), zeta)
	b.Slice(0, n, 0, 1).(*mat.Dense).Copy(vy)
	b.Slice(0, n, 1, s+1).(*mat.Dense).Copy(zeta)
	op.Reduce(dst, a, b)
	return nil
}

// checkReduce checks the arguments of PathwiseTrace (vy nil) and
// PathwiseGradient and returns n and s.
func checkReduce(method string, dst []float64, op GramOperator, vy, zeta *mat.Dense) (n, s int, err error) {
	if n, err = checkOp(method, op); err != nil {
		return 0, 0, err
	}
	if vy != nil || method == "PathwiseGradient" {
		if err := checkMat(method, "v_y", vy, n, 1); err != nil {
			return 0, 0, err
		}
	}
	if err := checkMat(method, "ζ", zeta, n, -1); err != nil {
		return 0, 0, err
	}
	if want := len(op.Kernel().Hyper.Lengthscales) + 2; len(dst) != want {
		return 0, 0, fmt.Errorf("kernel: %s: len(dst) = %d, want d+2 = %d", method, len(dst), want)
	}
	_, s = zeta.Dims()
	return n, s, nil
}

// Posterior is the pathwise-conditioned posterior at m test inputs.
type Posterior struct {
	// Samples holds the posterior function samples f_j(x*|y) as columns,
	// m×s: f_j(x*) + k(x*, X)·(v_y − ζ_j).
	Samples *mat.Dense
	// Mean is the predictive mean k(x*, X)·v_y, the mean every sample is
	// conditioned on (exact for an exact v_y; the average of Samples
	// estimates it with Monte-Carlo error).
	Mean []float64
	// Variance is the predictive variance of y* (σ² included): σ² plus the
	// average squared deviation of the samples from Mean,
	// (1/s)·Σ_j (f_j(x*|y) − Mean)², which is unbiased for the posterior
	// variance of f(x*) when ξ_j ~ N(0, H) exactly.
	Variance []float64
}

// PathwisePosterior forms posterior function samples at the m×d test inputs
// Xs from the prior samples there, fStar (m×s, e.g. PriorSamples.EvalTo at
// op.Kernel()), and the solutions v_y = H⁻¹y (n×1) and ζ = H⁻¹ξ (n×s) of the
// last solve, with one op.CrossMulTo on [v_y, ζ]: no further solve. The
// noise σ² added to Variance is op.Kernel().Hyper.Noise².
func PathwisePosterior(op GramOperator, xs, fStar, vy, zeta *mat.Dense) (*Posterior, error) {
	const method = "PathwisePosterior"
	n, err := checkOp(method, op)
	if err != nil {
		return nil, err
	}
	k := op.Kernel()
	d := len(k.Hyper.Lengthscales)
	if xs == nil {
		return nil, fmt.Errorf("kernel: %s: Xs is nil", method)
	}
	m, xd := xs.Dims()
	if xd != d {
		return nil, fmt.Errorf("kernel: %s: Xs is %d×%d but the kernel has d = %d input dimensions", method, m, xd, d)
	}
	for i := 0; i < m; i++ {
		for j, v := range xs.RawRowView(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("kernel: %s: Xs[%d,%d] is %v: test inputs must be finite", method, i, j, v)
			}
		}
	}
	if err := checkMat(method, "v_y", vy, n, 1); err != nil {
		return nil, err
	}
	if err := checkMat(method, "ζ", zeta, n, -1); err != nil {
		return nil, err
	}
	_, s := zeta.Dims()
	if err := checkMat(method, "fStar", fStar, m, s); err != nil {
		return nil, err
	}
	v := mat.NewDense(n, s+1, nil)
	v.Slice(0, n, 0, 1).(*mat.Dense).Copy(vy)
	v.Slice(0, n, 1, s+1).(*mat.Dense).Copy(zeta)
	kv := mat.NewDense(m, s+1, nil)
	op.CrossMulTo(kv, xs, v)
	post := &Posterior{Samples: mat.NewDense(m, s, nil), Mean: make([]float64, m), Variance: make([]float64, m)}
	noise2 := k.Hyper.Noise * k.Hyper.Noise
	for i := 0; i < m; i++ {
		row := kv.RawRowView(i)
		mean := row[0]
		out := post.Samples.RawRowView(i)
		var ss float64
		for j, f := range fStar.RawRowView(i) {
			dev := f - row[1+j] // f_j(x*) − k(x*,X)ζ_j: the sample's deviation from Mean
			out[j] = mean + dev
			ss += dev * dev
		}
		post.Mean[i] = mean
		post.Variance[i] = ss/float64(s) + noise2
	}
	return post, nil
}
