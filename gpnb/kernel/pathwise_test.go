package kernel

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/gptest"
)

// The references here are dense: H, ∂H/∂θ_k and K entry by entry from
// Kernel.At and Kernel.GradAt, and Cholesky factorisations.

// cholOf factorises the symmetric matrix a.
func cholOf(t *testing.T, a *mat.Dense) *mat.Cholesky {
	t.Helper()
	n, _ := a.Dims()
	sym := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	var c mat.Cholesky
	if !c.Factorize(sym) {
		t.Fatal("matrix is not positive definite")
	}
	return &c
}

// solve returns A⁻¹B.
func solve(t *testing.T, c *mat.Cholesky, b mat.Matrix) *mat.Dense {
	t.Helper()
	var x mat.Dense
	if err := c.SolveTo(&x, b); err != nil {
		t.Fatal(err)
	}
	return &x
}

// explicitDH returns ∂H/∂θ_k for θ = (ℓ_1..ℓ_d, s, σ).
func explicitDH(x *mat.Dense, k Kernel) []*mat.Dense { return gptest.DH(x, k, k.Hyper.Noise) }

// trMul returns tr(A·B) = Σ_ab A_ab B_ba.
func trMul(a, b mat.Matrix) float64 {
	n, _ := a.Dims()
	var s float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s += a.At(i, j) * b.At(j, i)
		}
	}
	return s
}

// pathwiseSetup is a small problem with its dense references.
type pathwiseSetup struct {
	x      *mat.Dense
	k      Kernel
	op     *Operator
	h      *mat.Dense    // H
	c      *mat.Cholesky // of H
	hinv   *mat.Dense    // H⁻¹
	dh     []*mat.Dense  // ∂H/∂θ_k
	trace  []float64     // tr(H⁻¹∂H/∂θ_k)
	hinvDH []*mat.Dense  // H⁻¹∂H/∂θ_k
}

func newPathwiseSetup(t *testing.T, fam Family, n, d int, seed uint64) *pathwiseSetup {
	t.Helper()
	p := &pathwiseSetup{x: randDense(n, d, seed), k: testKernel(fam, d)}
	var err error
	if p.op, err = NewOperator(p.x, p.k, Options{}); err != nil {
		t.Fatal(err)
	}
	p.h = explicitH(p.x, p.k)
	p.c = cholOf(t, p.h)
	p.hinv = solve(t, p.c, eye(n))
	p.dh = explicitDH(p.x, p.k)
	for _, dh := range p.dh {
		var m mat.Dense
		m.Mul(p.hinv, dh)
		p.hinvDH = append(p.hinvDH, &m)
		p.trace = append(p.trace, mat.Trace(&m))
	}
	return p
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// TestPathwiseTraceUnbiased draws ξ_j ~ N(0, H) exactly (ξ = L·g with
// H = LLᵀ), solves ζ = H⁻¹ξ by Cholesky, and checks that PathwiseTrace
// equals (1/s)·Σ_j ζ_jᵀ∂Hζ_j computed densely (to rounding) and is within 4
// standard errors √(2·tr((H⁻¹∂H)²)/s) of the exact tr(H⁻¹∂H/∂θ_k) for every
// θ_k and family (ζ ~ N(0, H⁻¹), so Var[ζᵀ∂Hζ] = 2·tr((H⁻¹∂H)²)). It also
// checks PathwiseGradient against ½v_yᵀ∂Hv_y − ½·(the trace estimate).
func TestPathwiseTraceUnbiased(t *testing.T) {
	const n, d, s = 40, 2, 20000
	for _, fam := range families {
		p := newPathwiseSetup(t, fam, n, d, 21)
		var l mat.TriDense
		p.c.LTo(&l)
		var xi mat.Dense
		xi.Mul(&l, randDense(n, s, 22))
		zeta := solve(t, p.c, &xi)
		est := make([]float64, d+2)
		if err := PathwiseTrace(est, p.op, zeta); err != nil {
			t.Fatal(err)
		}
		var w mat.Dense // (1/s)·ζζᵀ
		w.Mul(zeta, zeta.T())
		w.Scale(1/float64(s), &w)
		y := randDense(n, 1, 23)
		vy := solve(t, p.c, y)
		grad := make([]float64, d+2)
		if err := PathwiseGradient(grad, p.op, vy, zeta); err != nil {
			t.Fatal(err)
		}
		var line strings.Builder
		for i, dh := range p.dh {
			dense := trMul(dh, &w)
			if math.Abs(est[i]-dense) > 1e-10*(math.Abs(dense)+1) {
				t.Errorf("%v θ_%d: PathwiseTrace %.15g, dense (1/s)Σζᵀ∂Hζ %.15g", fam, i, est[i], dense)
			}
			var dv mat.Dense
			dv.Mul(dh, vy)
			fit := mat.Dot(vy.ColView(0), dv.ColView(0))
			if want := 0.5*fit - 0.5*dense; math.Abs(grad[i]-want) > 1e-10*(math.Abs(fit)+math.Abs(dense)+1) {
				t.Errorf("%v θ_%d: PathwiseGradient %.15g, want ½v_yᵀ∂Hv_y − ½·trace = %.15g", fam, i, grad[i], want)
			}
			se := math.Sqrt(2 * trMul(p.hinvDH[i], p.hinvDH[i]) / s)
			z := (est[i] - p.trace[i]) / se
			fmt.Fprintf(&line, " θ_%d: %.5g vs %.5g (%+.2f SE)", i, est[i], p.trace[i], z)
			if math.Abs(z) > 4 {
				t.Errorf("%v θ_%d: pathwise trace %.6g is %.2f standard errors from tr(H⁻¹∂H) = %.6g", fam, i, est[i], z, p.trace[i])
			}
		}
		t.Logf("%v, s = %d exact N(0,H) probes:%s", fam, s, line.String())
	}
}

// rffBiasSD returns, for each A_k, the standard deviation over feature draws
// of tr(A_k(K̃ − K)) with F features: √((2/F)·s⁴·Σ_{ab,cd} A_ab A_cd C_ab,cd),
// where C_ab,cd = Cov[cos(ωᵀτ_ab), cos(ωᵀτ_cd)]
// = ½(m(‖τ_ab+τ_cd‖) + m(‖τ_ab−τ_cd‖)) − m(‖τ_ab‖)m(‖τ_cd‖), τ_ab = (x_a−x_b)/ℓ.
func rffBiasSD(x *mat.Dense, k Kernel, as []*mat.Dense, f int) []float64 {
	n, d := x.Dims()
	tau := make([][]float64, n*n)
	m := make([]float64, n*n)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			v := make([]float64, d)
			for j := range v {
				v[j] = (x.At(a, j) - x.At(b, j)) / k.Hyper.Lengthscales[j]
			}
			tau[a*n+b] = v
			m[a*n+b] = k.Family.Eval(norm(v))
		}
	}
	q := make([]float64, len(as))
	sum, diff := make([]float64, d), make([]float64, d)
	for p := range tau {
		for r := range tau {
			for j := range sum {
				sum[j], diff[j] = tau[p][j]+tau[r][j], tau[p][j]-tau[r][j]
			}
			c := 0.5*(k.Family.Eval(norm(sum))+k.Family.Eval(norm(diff))) - m[p]*m[r]
			for i, a := range as {
				ad := a.RawMatrix().Data
				q[i] += ad[p] * ad[r] * c
			}
		}
	}
	s4 := math.Pow(k.Hyper.Signal, 4)
	for i := range q {
		q[i] = math.Sqrt(2 / float64(f) * s4 * q[i])
	}
	return q
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// TestPathwiseTraceRFFBias measures the bias of the pathwise trace estimate
// when ξ = f(X) + ε comes from F random features: for a fixed feature draw
// E[ξξᵀ] = K̃ + σ²I, so E[ζᵀ∂Hζ] = tr(H⁻¹∂H) + b with
// b = tr(H⁻¹∂H H⁻¹(K̃−K)). It computes b exactly (Cholesky) for F from 250
// to 16000 and checks it against the closed-form standard deviation over
// feature draws (rffBiasSD, ∝ 1/√F): |b| ≤ 4 such deviations at every F.
// At the default F it checks by Monte Carlo (3000 samples of PathwiseDraws)
// that the estimator's mean is tr(H⁻¹∂H) + b within 4 standard errors, and
// it states the bias relative to |tr(H⁻¹∂H)| and to the Monte-Carlo
// standard error of 64 probes. At F = 2000 on this problem the bias's RMS
// over feature draws is about one such standard error: it must stay ≤ 1.2.
func TestPathwiseTraceRFFBias(t *testing.T) {
	const n, d, s = 40, 2, 3000
	fs := []int{250, 1000, DefaultFeatures, 4000, 16000}
	for _, fam := range families {
		p := newPathwiseSetup(t, fam, n, d, 31)
		as := make([]*mat.Dense, d+2)
		se64 := make([]float64, d+2)
		for i := range as {
			var a mat.Dense
			a.Mul(p.hinvDH[i], p.hinv) // H⁻¹∂H H⁻¹
			as[i] = &a
			se64[i] = math.Sqrt(2 * trMul(p.hinvDH[i], p.hinvDH[i]) / 64)
		}
		kx := explicitK(p.x, p.k)
		sd1 := rffBiasSD(p.x, p.k, as, 1) // the standard deviation at F = 1; it scales as 1/√F
		for _, f := range fs {
			prior, err := NewPriorSamples(fam, d, f, 1, 32)
			if err != nil {
				t.Fatal(err)
			}
			var diff mat.Dense
			diff.Sub(featureGram(t, prior, p.x, p.k), kx)
			var line strings.Builder
			for i, a := range as {
				b := trMul(a, &diff)
				sd := sd1[i] / math.Sqrt(float64(f))
				fmt.Fprintf(&line, " θ_%d %.2g%% = %.2f SE₆₄ (%+.2f sd; sd %.2f SE₆₄)", i, 100*math.Abs(b/p.trace[i]), math.Abs(b)/se64[i], b/sd, sd/se64[i])
				if math.Abs(b) > 4*sd {
					t.Errorf("%v F=%d θ_%d: bias %.3g is %.1f× its predicted standard deviation %.3g", fam, f, i, b, math.Abs(b)/sd, sd)
				}
				if f == DefaultFeatures && sd > 1.2*se64[i] {
					t.Errorf("%v F=%d θ_%d: the RMS bias over feature draws is %.2f Monte-Carlo standard errors of 64 probes, want ≤ 1.2", fam, f, i, sd/se64[i])
				}
			}
			t.Logf("%v F=%5d: |bias|/|tr|:%s", fam, f, line.String())
		}

		// Monte Carlo at the default F: the estimator's mean is tr + b.
		pd, err := NewPathwiseDraws(fam, n, d, DefaultFeatures, s, 33)
		if err != nil {
			t.Fatal(err)
		}
		xi := mat.NewDense(n, s, nil)
		if err := pd.ProbesTo(xi, p.x, p.k); err != nil {
			t.Fatal(err)
		}
		zeta := solve(t, p.c, xi)
		est := make([]float64, d+2)
		if err := PathwiseTrace(est, p.op, zeta); err != nil {
			t.Fatal(err)
		}
		// Cov[ζ] = H⁻¹H̃H⁻¹ with H̃ = K̃ + σ²I, so Var[ζᵀDζ] = 2·tr((D·Cov[ζ])²).
		ht := featureGram(t, &pd.Prior, p.x, p.k)
		for i := 0; i < n; i++ {
			ht.Set(i, i, ht.At(i, i)+p.k.Hyper.Noise*p.k.Hyper.Noise)
		}
		var covZ, tmp mat.Dense
		tmp.Mul(p.hinv, ht)
		covZ.Mul(&tmp, p.hinv)
		var diff mat.Dense
		diff.Sub(ht, p.h) // K̃ − K
		var mc strings.Builder
		for i, dh := range p.dh {
			want := p.trace[i] + trMul(as[i], &diff)
			var dc mat.Dense
			dc.Mul(dh, &covZ)
			se := math.Sqrt(2 * trMul(&dc, &dc) / s)
			z := (est[i] - want) / se
			fmt.Fprintf(&mc, " θ_%d %+.2f SE", i, z)
			if math.Abs(z) > 4 {
				t.Errorf("%v θ_%d: RFF pathwise trace %.6g is %.2f standard errors from tr + bias = %.6g", fam, i, est[i], z, want)
			}
		}
		t.Logf("%v F=%d, %d samples: the mean estimate is from tr + bias:%s", fam, DefaultFeatures, s, mc.String())
	}
}

// posteriorRef is the exact posterior at test inputs xs.
func posteriorRef(t *testing.T, p *pathwiseSetup, xs, y *mat.Dense) (mean []float64, cov *mat.Dense) {
	t.Helper()
	m, _ := xs.Dims()
	n, _ := p.x.Dims()
	ksx := mat.NewDense(m, n, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			ksx.Set(i, j, p.k.At(xs.RawRowView(i), p.x.RawRowView(j)))
		}
	}
	var mu mat.Dense
	mu.Mul(ksx, solve(t, p.c, y))
	var q mat.Dense
	q.Mul(ksx, solve(t, p.c, ksx.T()))
	cov = explicitK(xs, p.k)
	cov.Sub(cov, &q)
	return mat.Col(nil, 0, &mu), cov
}

// checkPosterior compares pathwise samples with a reference mean and
// covariance of the function values: Mean with refMean to rounding; the
// samples' average with refMean within 4.5 standard errors √(C_ii/s); and the
// samples' covariance about Mean (Variance − σ² on the diagonal) with refCov
// within 4.5 standard errors √((C_ij² + C_ii·C_jj)/s).
func checkPosterior(t *testing.T, name string, post *Posterior, refMean []float64, refCov *mat.Dense, noise2 float64) {
	t.Helper()
	m, s := post.Samples.Dims()
	worstMean, worstCov := 0.0, 0.0
	for i := 0; i < m; i++ {
		if math.Abs(post.Mean[i]-refMean[i]) > 1e-9*(1+math.Abs(refMean[i])) {
			t.Errorf("%s: Mean[%d] = %.15g, exact %.15g", name, i, post.Mean[i], refMean[i])
		}
		avg := mat.Sum(post.Samples.RowView(i)) / float64(s)
		worstMean = math.Max(worstMean, math.Abs(avg-refMean[i])/math.Sqrt(refCov.At(i, i)/float64(s)))
		for j := 0; j <= i; j++ {
			var c float64
			for k := 0; k < s; k++ {
				c += (post.Samples.At(i, k) - post.Mean[i]) * (post.Samples.At(j, k) - post.Mean[j])
			}
			c /= float64(s)
			if i == j && math.Abs(c+noise2-post.Variance[i]) > 1e-12*(c+noise2) {
				t.Errorf("%s: Variance[%d] = %.15g, but the samples' spread + σ² is %.15g", name, i, post.Variance[i], c+noise2)
			}
			cij := refCov.At(i, j)
			se := math.Sqrt((cij*cij + refCov.At(i, i)*refCov.At(j, j)) / float64(s))
			worstCov = math.Max(worstCov, math.Abs(c-cij)/se)
		}
	}
	t.Logf("%s: sample mean within %.2f SE, sample covariance within %.2f SE", name, worstMean, worstCov)
	if worstMean > 4.5 || worstCov > 4.5 {
		t.Errorf("%s: sample mean %.2f and covariance %.2f standard errors from the reference, want ≤ 4.5", name, worstMean, worstCov)
	}
}

// TestPathwisePosterior checks posterior samples at 10 test points, n = 30.
// With prior values drawn exactly from N(0, K) over training and test
// points (Cholesky) and ζ = H⁻¹(f(X) + ε), the samples' mean and covariance
// match the exact posterior N(K*X H⁻¹y, K** − K*X H⁻¹KX*) within Monte-Carlo
// error (4000 samples). With the default F = 2000 random features
// (PathwiseDraws, PriorSamples.EvalTo; 2000 samples) they match the posterior that the feature kernel K̃ gives,
// K̃** − 2K*X H⁻¹K̃X* + K*X H⁻¹(K̃XX + σ²I)H⁻¹KX*, within Monte-Carlo error;
// its distance from the exact predictive variance is the RFF bias, stated
// and bounded by 10% (at most 6.3% measured here, for RBF).
func TestPathwisePosterior(t *testing.T) {
	const n, m, d, s = 30, 10, 2, 4000
	for _, fam := range families {
		p := newPathwiseSetup(t, fam, n, d, 41)
		xs := randDense(m, d, 42)
		y := mat.NewDense(n, 1, nil)
		for i := 0; i < n; i++ {
			y.Set(i, 0, math.Sin(2*p.x.At(i, 0))+0.5*math.Cos(p.x.At(i, 1)))
		}
		vy := solve(t, p.c, y)
		mu, cov := posteriorRef(t, p, xs, y)
		noise2 := p.k.Hyper.Noise * p.k.Hyper.Noise

		// Exact joint prior draws.
		all := mat.NewDense(n+m, d, nil)
		all.Slice(0, n, 0, d).(*mat.Dense).Copy(p.x)
		all.Slice(n, n+m, 0, d).(*mat.Dense).Copy(xs)
		kj := explicitK(all, p.k)
		for i := 0; i < n+m; i++ {
			kj.Set(i, i, kj.At(i, i)*(1+1e-12))
		}
		var lj mat.TriDense
		cholOf(t, kj).LTo(&lj)
		var fj mat.Dense
		fj.Mul(&lj, randDense(n+m, s, 43))
		xi := mat.DenseCopyOf(fj.Slice(0, n, 0, s))
		eps := randDense(n, s, 44)
		eps.Scale(p.k.Hyper.Noise, eps)
		xi.Add(xi, eps)
		post, err := PathwisePosterior(p.op, xs, mat.DenseCopyOf(fj.Slice(n, n+m, 0, s)), vy, solve(t, p.c, xi))
		if err != nil {
			t.Fatal(err)
		}
		checkPosterior(t, fam.String()+" exact prior", post, mu, cov, noise2)

		// Random features.
		const f, rs = DefaultFeatures, 2000
		pd, err := NewPathwiseDraws(fam, n, d, f, rs, 45)
		if err != nil {
			t.Fatal(err)
		}
		rxi := mat.NewDense(n, rs, nil)
		if err := pd.ProbesTo(rxi, p.x, p.k); err != nil {
			t.Fatal(err)
		}
		fStar := mat.NewDense(m, rs, nil)
		if err := pd.Prior.EvalTo(fStar, xs, p.k); err != nil {
			t.Fatal(err)
		}
		rpost, err := PathwisePosterior(p.op, xs, fStar, vy, solve(t, p.c, rxi))
		if err != nil {
			t.Fatal(err)
		}
		// The posterior covariance the features imply, with
		// A = K*X H⁻¹ (m×n) and K̃ the joint feature kernel:
		// K̃** − A K̃X* − K̃*X Aᵀ + A(K̃XX + σ²I)Aᵀ.
		kt := featureGram(t, &pd.Prior, all, p.k)
		ksx := mat.NewDense(m, n, nil)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				ksx.Set(i, j, p.k.At(xs.RawRowView(i), p.x.RawRowView(j)))
			}
		}
		a := solve(t, p.c, ksx.T()) // n×m, Aᵀ
		ktXX := mat.DenseCopyOf(kt.Slice(0, n, 0, n))
		for i := 0; i < n; i++ {
			ktXX.Set(i, i, ktXX.At(i, i)+noise2)
		}
		var t1, t2, t3, t4 mat.Dense
		t1.Mul(a.T(), kt.Slice(0, n, n, n+m)) // A K̃X*
		t2.Mul(ktXX, a)
		t3.Mul(a.T(), &t2) // A(K̃XX + σ²I)Aᵀ
		t4.Sub(kt.Slice(n, n+m, n, n+m), &t1)
		t4.Sub(&t4, t1.T())
		t4.Add(&t4, &t3)
		checkPosterior(t, fmt.Sprintf("%v F=%d", fam, f), rpost, mu, &t4, noise2)
		worst := 0.0
		for i := 0; i < m; i++ {
			worst = math.Max(worst, math.Abs(t4.At(i, i)-cov.At(i, i))/(cov.At(i, i)+noise2))
		}
		t.Logf("%v F=%d: the features' predictive variance differs from the exact one by at most %.2g%%", fam, f, 100*worst)
		if worst > 0.1 {
			t.Errorf("%v F=%d: the RFF bias of the predictive variance is %.2g%%, want ≤ 10%%", fam, f, 100*worst)
		}
	}
}
