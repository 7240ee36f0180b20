package kernel

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/gpnb/gpnb/internal/gptest"
)

// gridX returns the g×g grid over [−1.5, 1.5]² as rows.
func gridX(g int) *mat.Dense {
	x := mat.NewDense(g*g, 2, nil)
	for a := 0; a < g; a++ {
		for b := 0; b < g; b++ {
			x.Set(a*g+b, 0, -1.5+3*float64(a)/float64(g-1))
			x.Set(a*g+b, 1, -1.5+3*float64(b)/float64(g-1))
		}
	}
	return x
}

// featureGram returns φ(X)φ(X)ᵀ for the features of p at k.
func featureGram(t *testing.T, p *PriorSamples, x *mat.Dense, k Kernel) *mat.Dense {
	t.Helper()
	n, _ := x.Dims()
	phi := mat.NewDense(n, p.Features, nil)
	if err := p.FeaturesTo(phi, x, k); err != nil {
		t.Fatal(err)
	}
	var g mat.Dense
	g.Mul(phi, phi.T())
	return &g
}

// explicitK returns K(X,X) entry by entry from Kernel.At.
func explicitK(x *mat.Dense, k Kernel) *mat.Dense { return gptest.H(x, k, 0) }

// rffVariance is the variance of one frequency's estimate cos(ωᵀτ) of
// m(r): E[cos²] − m² = (1 + m(2r))/2 − m(r)².
func rffVariance(f Family, r float64) float64 {
	m := f.Eval(r)
	return (1+f.Eval(2*r))/2 - m*m
}

// TestFeatureKernelConverges checks, for every family on a 7×7 grid, that
// the feature kernel φ(x)ᵀφ(x') approaches k(x,x') at the Monte-Carlo rate:
// the RMS error over the off-diagonal pairs, pooled over 8 seeds, is within
// a factor 4/3 of the closed-form prediction s²·√(2/F·mean((1+m(2r))/2 − m(r)²))
// at every F from 250 to 16000, its log-log slope is −0.5 ± 0.05, and the
// diagonal is exact (cos² + sin² = 1). A wrong spectral density or scale
// would leave a bias that stops the error falling.
func TestFeatureKernelConverges(t *testing.T) {
	x := gridX(7)
	n, _ := x.Dims()
	fs := []int{250, 500, 1000, 2000, 4000, 8000, 16000}
	const seeds = 8
	for _, fam := range families {
		k := Kernel{Family: fam, Hyper: Hyper{Lengthscales: []float64{0.7, 1.1}, Signal: 1.3, Noise: 0.4}}
		s2 := k.Hyper.Signal * k.Hyper.Signal
		kx := explicitK(x, k)
		var meanVar float64
		pairs := 0
		for a := 0; a < n; a++ {
			for b := 0; b < a; b++ {
				meanVar += rffVariance(fam, k.ScaledDist(x.RawRowView(a), x.RawRowView(b)))
				pairs++
			}
		}
		meanVar /= float64(pairs)
		logF, logE := make([]float64, len(fs)), make([]float64, len(fs))
		var line strings.Builder
		for i, f := range fs {
			var sq float64
			for seed := uint64(1); seed <= seeds; seed++ {
				p, err := NewPriorSamples(fam, 2, f, 1, seed)
				if err != nil {
					t.Fatal(err)
				}
				g := featureGram(t, p, x, k)
				for a := 0; a < n; a++ {
					if e := math.Abs(g.At(a, a) - s2); e > 1e-12*s2 {
						t.Errorf("%v F=%d: diagonal φ(x)ᵀφ(x) = %.17g, want s² = %.17g", fam, f, g.At(a, a), s2)
					}
					for b := 0; b < a; b++ {
						e := (g.At(a, b) - kx.At(a, b)) / s2
						sq += e * e
					}
				}
			}
			rms := math.Sqrt(sq / float64(pairs*seeds))
			pred := math.Sqrt(2 / float64(f) * meanVar)
			ratio := rms / pred
			logF[i], logE[i] = math.Log(float64(f)), math.Log(rms)
			line.WriteString(fmt.Sprintf(" F=%d: %.3g (×%.2f)", f, rms, ratio))
			if ratio < 0.75 || ratio > 1.33 {
				t.Errorf("%v F=%d: RMS error %.3g is %.2f× the predicted %.3g", fam, f, rms, ratio, pred)
			}
		}
		_, slope := stat.LinearRegression(logF, logE, nil, false)
		t.Logf("%v: slope %.3f; relative RMS error (× prediction):%s", fam, slope, line.String())
		if math.Abs(slope+0.5) > 0.05 {
			t.Errorf("%v: log-log slope of the error is %.3f, want −0.5 ± 0.05", fam, slope)
		}
	}
}

// TestPriorCovariance checks that the sample covariance (1/s)·Σ_j f_j f_jᵀ of
// 4000 prior samples matches the feature kernel φφᵀ within 4.5 standard
// errors √((K̃_ab² + K̃_aa·K̃_bb)/s) (the variance of a product of jointly
// Gaussian values), and the exact K within that plus 4.5 RFF standard
// deviations s²·√(2/F·((1+m(2r))/2 − m(r)²)).
func TestPriorCovariance(t *testing.T) {
	const n, d, f, s = 12, 3, 2000, 4000
	x := testX(n, d, 3)
	for _, fam := range families {
		k := testKernel(fam, d)
		p, err := NewPriorSamples(fam, d, f, s, 17)
		if err != nil {
			t.Fatal(err)
		}
		fx := mat.NewDense(n, s, nil)
		if err := p.EvalTo(fx, x, k); err != nil {
			t.Fatal(err)
		}
		var cov mat.Dense
		cov.Mul(fx, fx.T())
		cov.Scale(1/float64(s), &cov)
		kt := featureGram(t, p, x, k)
		kx := explicitK(x, k)
		s4 := math.Pow(k.Hyper.Signal, 4)
		worst, worstK := 0.0, 0.0
		for a := 0; a < n; a++ {
			for b := 0; b <= a; b++ {
				se := math.Sqrt((kt.At(a, b)*kt.At(a, b) + kt.At(a, a)*kt.At(b, b)) / s)
				z := math.Abs(cov.At(a, b)-kt.At(a, b)) / se
				rff := math.Sqrt(2 / float64(f) * s4 * rffVariance(fam, k.ScaledDist(x.RawRowView(a), x.RawRowView(b))))
				zk := math.Abs(cov.At(a, b)-kx.At(a, b)) / (se + rff)
				worst, worstK = math.Max(worst, z), math.Max(worstK, zk)
			}
		}
		t.Logf("%v: largest |cov − φφᵀ| = %.2f standard errors; largest |cov − K| = %.2f (standard error + RFF sd)", fam, worst, worstK)
		if worst > 4.5 || worstK > 4.5 {
			t.Errorf("%v: sample covariance is %.2f standard errors from φφᵀ and %.2f from K, want ≤ 4.5", fam, worst, worstK)
		}
	}
}

// TestFeaturesRescale checks that the draws are θ-free: evaluating at θ₁ and
// then θ₂ gives the same bits as fresh draws evaluated at θ₂, the draws are
// left untouched, and θ enters only as x/ℓ and the factor s:
// f(X; ℓ₂, s₂) = (s₂/s₁)·f(X·diag(ℓ₁/ℓ₂); ℓ₁, s₁).
func TestFeaturesRescale(t *testing.T) {
	const n, d, f, s = 50, 3, 200, 5
	x := testX(n, d, 4)
	for _, fam := range families {
		k1 := testKernel(fam, d)
		k2 := k1
		k2.Hyper = Hyper{Lengthscales: []float64{2.1, 0.3, 1.7}, Signal: 0.6, Noise: 1.1}
		p, err := NewPriorSamples(fam, d, f, s, 5)
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := json.Marshal(p)
		f1, f2 := mat.NewDense(n, s, nil), mat.NewDense(n, s, nil)
		if err := p.EvalTo(f1, x, k1); err != nil {
			t.Fatal(err)
		}
		if err := p.EvalTo(f2, x, k2); err != nil {
			t.Fatal(err)
		}
		after, _ := json.Marshal(p)
		if !bytes.Equal(orig, after) {
			t.Errorf("%v: EvalTo changed the draws", fam)
		}
		fresh, _ := NewPriorSamples(fam, d, f, s, 5)
		f3 := mat.NewDense(n, s, nil)
		if err := fresh.EvalTo(f3, x, k2); err != nil {
			t.Fatal(err)
		}
		if !sameBitsDense(f2, f3) {
			t.Errorf("%v: rescaled samples differ from fresh draws at the new θ", fam)
		}
		// The scaling identity, from an independent evaluation at θ₁.
		xs := mat.DenseCopyOf(x)
		for i := 0; i < n; i++ {
			for j := 0; j < d; j++ {
				xs.Set(i, j, x.At(i, j)*k1.Hyper.Lengthscales[j]/k2.Hyper.Lengthscales[j])
			}
		}
		f4 := mat.NewDense(n, s, nil)
		if err := p.EvalTo(f4, xs, k1); err != nil {
			t.Fatal(err)
		}
		f4.Scale(k2.Hyper.Signal/k1.Hyper.Signal, f4)
		// The phases ω·x reach ~|ω|·50/ℓ (testX is offset by 50), so they
		// carry absolute errors ~ 1e-13·|ω|; compare with that allowance.
		worst := 0.0
		for i := 0; i < n; i++ {
			for j := 0; j < s; j++ {
				worst = math.Max(worst, math.Abs(f2.At(i, j)-f4.At(i, j)))
				if e := math.Abs(f2.At(i, j) - f4.At(i, j)); e > 1e-10 {
					t.Fatalf("%v: f[%d,%d] = %.15g at θ₂ but %.15g by rescaling the inputs (error %.3g)", fam, i, j, f2.At(i, j), f4.At(i, j), e)
				}
			}
		}
		t.Logf("%v: largest difference from rescaled inputs %.3g", fam, worst)
	}
}

func sameBitsDense(a, b *mat.Dense) bool {
	ar, ac := a.Dims()
	if br, bc := b.Dims(); ar != br || ac != bc {
		return false
	}
	for i := 0; i < ar; i++ {
		for j := 0; j < ac; j++ {
			if math.Float64bits(a.At(i, j)) != math.Float64bits(b.At(i, j)) {
				return false
			}
		}
	}
	return true
}

// TestFeaturesNested checks that the first F/2 frequencies of a larger F and
// the first samples of a larger s are the same draws, and that one seed
// always gives the same draws.
func TestFeaturesNested(t *testing.T) {
	small, _ := NewPriorSamples(Matern32, 3, 100, 4, 9)
	big, _ := NewPriorSamples(Matern32, 3, 400, 7, 9)
	again, _ := NewPriorSamples(Matern32, 3, 100, 4, 9)
	for i, v := range small.Freqs {
		if big.Freqs[i] != v {
			t.Fatalf("Freqs[%d] differs between F = 100 and F = 400", i)
		}
	}
	for i, v := range small.ChiSq {
		if big.ChiSq[i] != v {
			t.Fatalf("ChiSq[%d] differs between F = 100 and F = 400", i)
		}
	}
	// Weight column j of the first F rows: drawn column by column, so only
	// the rows of the same F match; compare at equal F.
	bigS, _ := NewPriorSamples(Matern32, 3, 100, 7, 9)
	for i := 0; i < 100; i++ {
		for j := 0; j < 4; j++ {
			if small.Weights[i*4+j] != bigS.Weights[i*7+j] {
				t.Fatalf("weight [%d,%d] differs between s = 4 and s = 7", i, j)
			}
		}
	}
	a, _ := json.Marshal(small)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different draws")
	}
}

// TestFeaturesDeterminism checks the same bits at GOMAXPROCS 1 and 2, over
// many row tiles, for FeaturesTo, EvalTo, ProbesTo and the pathwise
// functions on operators in every mode (checkSameBits).
func TestFeaturesDeterminism(t *testing.T) {
	withSmallTiles(t)
	const n, d, f, s, m = 103, 3, 60, 4, 37
	x := testX(n, d, 6)
	xs := testX(m, d, 7)
	k := testKernel(Matern52, d)
	pd, err := NewPathwiseDraws(Matern52, n, d, f, s, 8)
	if err != nil {
		t.Fatal(err)
	}
	zeta, vy := randDense(n, s, 9), randDense(n, 1, 10)
	checkSameBits(t, func(opt Options) []float64 {
		op, err := NewOperator(x, k, opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		phi := mat.NewDense(n, f, nil)
		if err := pd.Prior.FeaturesTo(phi, x, k); err != nil {
			t.Fatal(err)
		}
		out = append(out, phi.RawMatrix().Data...)
		xi := mat.NewDense(n, s, nil)
		if err := pd.ProbesTo(xi, x, k); err != nil {
			t.Fatal(err)
		}
		out = append(out, xi.RawMatrix().Data...)
		fs := mat.NewDense(m, s, nil)
		if err := pd.Prior.EvalTo(fs, xs, k); err != nil {
			t.Fatal(err)
		}
		out = append(out, fs.RawMatrix().Data...)
		g := make([]float64, d+2)
		if err := PathwiseGradient(g, op, vy, zeta); err != nil {
			t.Fatal(err)
		}
		out = append(out, g...)
		if err := PathwiseTrace(g, op, zeta); err != nil {
			t.Fatal(err)
		}
		out = append(out, g...)
		post, err := PathwisePosterior(op, xs, fs, vy, zeta)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, post.Samples.RawMatrix().Data...)
		out = append(out, post.Mean...)
		return append(out, post.Variance...)
	})
}

// TestPathwiseDrawsEncode checks that the draws survive gob and JSON and
// give the same probes afterwards.
func TestPathwiseDrawsEncode(t *testing.T) {
	const n, d = 20, 2
	x := testX(n, d, 1)
	k := testKernel(Matern12, d)
	pd, err := NewPathwiseDraws(Matern12, n, d, 40, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := mat.NewDense(n, 3, nil)
	if err := pd.ProbesTo(want, x, k); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(pd); err != nil {
		t.Fatal(err)
	}
	var fromGob PathwiseDraws
	if err := gob.NewDecoder(&buf).Decode(&fromGob); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(pd)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON PathwiseDraws
	if err := json.Unmarshal(js, &fromJSON); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*PathwiseDraws{"gob": &fromGob, "json": &fromJSON} {
		got := mat.NewDense(n, 3, nil)
		if err := p.ProbesTo(got, x, k); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !sameBitsDense(got, want) {
			t.Errorf("%s: probes differ after a round trip", name)
		}
	}
}

// TestFeaturesErrors checks that bad input gives a clear error, not a panic.
func TestFeaturesErrors(t *testing.T) {
	const n, d = 10, 2
	x := testX(n, d, 1)
	k := testKernel(Matern32, d)
	good := func() *PathwiseDraws {
		p, err := NewPathwiseDraws(Matern32, n, d, 20, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	op, err := NewOperator(x, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	nan := testX(n, d, 1)
	nan.Set(2, 1, math.NaN())
	badHyper := k
	badHyper.Hyper = Hyper{Lengthscales: []float64{1, -1}, Signal: 1, Noise: 1}
	zeta, vy := randDense(n, 3, 2), randDense(n, 1, 3)
	fs := randDense(4, 3, 4)
	xs := testX(4, d, 5)
	cases := []struct {
		name, want string
		err        func() error
	}{
		{"F=0", "even number > 0", func() error { _, err := NewPriorSamples(RBF, d, 0, 1, 1); return err }},
		{"F<0", "even number > 0", func() error { _, err := NewPriorSamples(RBF, d, -4, 1, 1); return err }},
		{"F odd", "cosine/sine pairs", func() error { _, err := NewPriorSamples(RBF, d, 7, 1, 1); return err }},
		{"d=0", "at least one dimension", func() error { _, err := NewPriorSamples(RBF, 0, 10, 1, 1); return err }},
		{"s=0", "at least one", func() error { _, err := NewPriorSamples(RBF, d, 10, 0, 1); return err }},
		{"family", "unknown family", func() error { _, err := NewPriorSamples(Family(9), d, 10, 1, 1); return err }},
		{"n=0", "at least one training point", func() error { _, err := NewPathwiseDraws(RBF, 0, d, 10, 1, 1); return err }},
		{"wrong d", "d = 2 input dimensions", func() error {
			return good().Prior.EvalTo(mat.NewDense(n, 3, nil), testX(n, 3, 1), k)
		}},
		{"wrong family", "drawn for matern32 but the kernel is rbf", func() error {
			return good().Prior.EvalTo(mat.NewDense(n, 3, nil), x, Kernel{Family: RBF, Hyper: k.Hyper})
		}},
		{"bad hyper", "length scale 2", func() error { return good().Prior.EvalTo(mat.NewDense(n, 3, nil), x, badHyper) }},
		{"nil X", "X is nil", func() error { return good().Prior.EvalTo(mat.NewDense(n, 3, nil), nil, k) }},
		{"NaN X", "X[2,1] is NaN", func() error { return good().Prior.EvalTo(mat.NewDense(n, 3, nil), nan, k) }},
		{"dst dims", "dst is 10×2, want 10×3", func() error { return good().Prior.EvalTo(mat.NewDense(n, 2, nil), x, k) }},
		{"nil dst", "dst is nil", func() error { return good().Prior.EvalTo(nil, x, k) }},
		{"features dst", "want 10×20", func() error { return good().Prior.FeaturesTo(mat.NewDense(n, 3, nil), x, k) }},
		{"truncated", "draws are incomplete", func() error {
			p := good()
			p.Prior.Weights = p.Prior.Weights[:5]
			return p.Prior.EvalTo(mat.NewDense(n, 3, nil), x, k)
		}},
		{"chi2", "ChiSq[1] is 0", func() error {
			p := good()
			p.Prior.ChiSq[1] = 0
			return p.Validate()
		}},
		{"nan freq", "Freqs[3] is NaN", func() error {
			p := good()
			p.Prior.Freqs[3] = math.NaN()
			return p.Validate()
		}},
		{"noise len", "noise values", func() error {
			p := good()
			p.Noise = p.Noise[1:]
			return p.Validate()
		}},
		{"probes n", "draws are for n = 10", func() error {
			return good().ProbesTo(mat.NewDense(n-1, 3, nil), testX(n-1, d, 1), k)
		}},
		{"nil draws", "nil", func() error { var p *PathwiseDraws; return p.Validate() }},
		{"trace dst", "len(dst) = 3, want d+2 = 4", func() error { return PathwiseTrace(make([]float64, 3), op, zeta) }},
		{"trace ζ", "ζ is 9×3", func() error { return PathwiseTrace(make([]float64, 4), op, randDense(n-1, 3, 1)) }},
		{"trace op", "operator is nil", func() error { return PathwiseTrace(make([]float64, 4), nil, zeta) }},
		{"gradient v_y", "v_y is 10×2, want 10×1", func() error {
			return PathwiseGradient(make([]float64, 4), op, zeta.Slice(0, n, 0, 2).(*mat.Dense), zeta)
		}},
		{"posterior fStar", "fStar is 4×3, want 5×3", func() error {
			_, err := PathwisePosterior(op, testX(5, d, 5), fs, vy, zeta)
			return err
		}},
		{"posterior Xs", "Xs is 4×3", func() error { _, err := PathwisePosterior(op, testX(4, 3, 5), fs, vy, zeta); return err }},
		{"posterior ζ", "ζ is nil", func() error { _, err := PathwisePosterior(op, xs, fs, vy, nil); return err }},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
}

// TestEvalToExplicit checks FeaturesTo, EvalTo and ProbesTo against the
// formulas written out from the raw draws, φ_a = s·√(2/F)·[cos(ω_iᵀ(x_a/ℓ)),
// sin(ω_iᵀ(x_a/ℓ))] with ω_i = g_i·√(2ν/u_i), f = φW and ξ = f + σε, over
// many row tiles.
func TestEvalToExplicit(t *testing.T) {
	withSmallTiles(t)
	const n, d, f, s = 45, 3, 14, 3
	x := randDense(n, d, 12)
	dof := map[Family]float64{Matern12: 1, Matern32: 3, Matern52: 5}
	for _, fam := range families {
		k := testKernel(fam, d)
		pd, err := NewPathwiseDraws(fam, n, d, f, s, 13)
		if err != nil {
			t.Fatal(err)
		}
		p := &pd.Prior
		m := f / 2
		c := k.Hyper.Signal * math.Sqrt(2/float64(f))
		phi := mat.NewDense(n, f, nil)
		for a := 0; a < n; a++ {
			for i := 0; i < m; i++ {
				scale := 1.0
				if df, ok := dof[fam]; ok {
					scale = math.Sqrt(df / p.ChiSq[i])
				}
				var arg float64
				for j := 0; j < d; j++ {
					arg += p.Freqs[i*d+j] * scale * x.At(a, j) / k.Hyper.Lengthscales[j]
				}
				phi.Set(a, i, c*math.Cos(arg))
				phi.Set(a, m+i, c*math.Sin(arg))
			}
		}
		gotPhi := mat.NewDense(n, f, nil)
		if err := p.FeaturesTo(gotPhi, x, k); err != nil {
			t.Fatal(err)
		}
		// The phases are O(1) here and computed in another order (the code
		// scales the frequencies first), so compare with an absolute
		// allowance of a few ulps of the phase times c.
		var worst float64
		for a := 0; a < n; a++ {
			for i := 0; i < f; i++ {
				worst = math.Max(worst, math.Abs(gotPhi.At(a, i)-phi.At(a, i)))
			}
		}
		if worst > 1e-14*c {
			t.Errorf("%v: FeaturesTo differs from the explicit features by up to %.3g", fam, worst)
		}
		w := mat.NewDense(f, s, p.Weights)
		got := mat.NewDense(n, s, nil)
		if err := p.EvalTo(got, x, k); err != nil {
			t.Fatal(err)
		}
		var absW mat.Dense
		absW.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, w)
		var want mat.Dense
		want.Mul(phi, w)
		for a := 0; a < n; a++ {
			for j := 0; j < s; j++ {
				if e := math.Abs(got.At(a, j) - want.At(a, j)); e > 1e-14*c*mat.Sum(absW.ColView(j)) {
					t.Errorf("%v: f[%d,%d] = %.17g, explicit φW %.17g", fam, a, j, got.At(a, j), want.At(a, j))
				}
			}
		}
		xi := mat.NewDense(n, s, nil)
		if err := pd.ProbesTo(xi, x, k); err != nil {
			t.Fatal(err)
		}
		for a := 0; a < n; a++ {
			for j := 0; j < s; j++ {
				if want := got.At(a, j) + k.Hyper.Noise*pd.Noise[a*s+j]; xi.At(a, j) != want {
					t.Fatalf("%v: ξ[%d,%d] = %v, want f + σε = %v", fam, a, j, xi.At(a, j), want)
				}
			}
		}
	}
}
