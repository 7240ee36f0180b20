package solvers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/ucitest"
)

// The per-iteration benchmarks run on pol (n = 13500, split 0) when its
// files are in $GPNB_DATA (ucitest.Find), else on a synthetic 13500×26
// problem, with the paper's batch of 17 right-hand sides [y, z_1..z_16] and
// hyperparameters 1.0. Each reports the time of one iteration as a multiple
// of one H·V with 17 columns, measured in the same benchmark ("xHV17").
//
//	go test -run '^$' -bench PerIteration -benchtime 3x ./solvers/

var benchSetup struct {
	once sync.Once
	op   *kernel.Operator
	b    *mat.Dense
	name string
	err  error
}

func benchProblem(tb testing.TB) (*kernel.Operator, *mat.Dense) {
	s := &benchSetup
	dir, havePol := ucitest.Find(tb, "pol")
	s.once.Do(func() {
		var ds *data.Dataset
		if havePol {
			ds, s.err = data.Load("pol", data.Dir(dir))
		} else {
			ds, s.err = data.Synthetic(13500, 26, 0)
		}
		if s.err != nil {
			return
		}
		s.name = ds.Name
		k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(ds.D())}
		s.op, s.err = kernel.NewOperator(ds.XTrain, k, kernel.Options{})
		if s.err != nil {
			return
		}
		n := ds.NTrain()
		s.b = mat.NewDense(n, 17, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < n; i++ {
			s.b.Set(i, 0, ds.YTrain[i])
			for j := 1; j < 17; j++ {
				s.b.Set(i, j, rng.NormFloat64())
			}
		}
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.op, s.b
}

// timeHV17 returns the time of one H·V with the 17 columns of b.
func timeHV17(op Operator, b *mat.Dense) time.Duration {
	n, m := b.Dims()
	dst := mat.NewDense(n, m, nil)
	t0 := time.Now()
	op.MulTo(dst, b)
	return time.Since(t0)
}

// timingOp accumulates the time spent in the operator's methods.
type timingOp struct {
	Operator
	spent time.Duration
}

func (o *timingOp) MulTo(dst, v *mat.Dense) {
	t0 := time.Now()
	o.Operator.MulTo(dst, v)
	o.spent += time.Since(t0)
}
func (o *timingOp) RowsMulTo(dst *mat.Dense, idx []int, v *mat.Dense) {
	t0 := time.Now()
	o.Operator.RowsMulTo(dst, idx, v)
	o.spent += time.Since(t0)
}
func (o *timingOp) ColsMulTo(dst *mat.Dense, idx []int, d *mat.Dense) {
	t0 := time.Now()
	o.Operator.ColsMulTo(dst, idx, d)
	o.spent += time.Since(t0)
}
func (o *timingOp) BlockTo(dst *mat.SymDense, idx []int) {
	t0 := time.Now()
	o.Operator.BlockTo(dst, idx)
	o.spent += time.Since(t0)
}

// benchIterations times b.N iterations of sv, each followed (untimed) by
// one H·V with 17 columns, so that the ratio sees the same machine load.
// It reports the iteration time and the part of it spent inside the
// operator, both as multiples of H·V.
func benchIterations(b *testing.B, sv Solver, top *timingOp, rhs *mat.Dense) {
	var hv, it time.Duration
	top.spent = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := sv.Iterate(); err != nil {
			b.Fatal(err)
		}
		it += time.Since(t0)
		b.StopTimer()
		hv += timeHV17(top.Operator, rhs)
		b.StartTimer()
	}
	b.ReportMetric(float64(it)/float64(hv), "xHV17")
	b.ReportMetric(float64(top.spent)/float64(hv), "op-xHV17")
	b.ReportMetric(hv.Seconds()/float64(b.N), "HV17-s")
}

func BenchmarkPerIteration(b *testing.B) {
	kop, rhs := benchProblem(b)
	b.Logf("problem %s, n = %d, operator mode %v", benchSetup.name, kop.Size(), kop.Mode())
	settings := Settings{RelTolMean: 1e-12, RelTolProbes: 1e-12, MaxIterations: 1 << 30}
	b.Run("cg", func(b *testing.B) {
		top := &timingOp{Operator: kop}
		sv, err := CG{}.Start(top, rhs, nil, settings)
		if err != nil {
			b.Fatal(err)
		}
		benchIterations(b, sv, top, rhs)
	})
	b.Run("ap", func(b *testing.B) {
		top := &timingOp{Operator: kop}
		sv, err := AP{}.Start(top, rhs, nil, settings)
		if err != nil {
			b.Fatal(err)
		}
		a := sv.(*apSolver)
		// Factorise every block first, so the timed loop is steady state;
		// report one factorisation (BlockTo + Cholesky) as a multiple too.
		t0 := time.Now()
		for bl := range a.factors {
			if _, _, err := a.factor(bl); err != nil {
				b.Fatal(err)
			}
		}
		perFactor := time.Since(t0) / time.Duration(len(a.factors))
		factorRatio := float64(perFactor) / float64(timeHV17(kop, rhs))
		benchIterations(b, sv, top, rhs)
		// After benchIterations: ResetTimer drops metrics reported before.
		b.ReportMetric(factorRatio, "factor-xHV17")
	})
	b.Run("sgd", func(b *testing.B) {
		top := &timingOp{Operator: kop}
		sv, err := SGD{Seed: 1}.Start(top, rhs, nil, settings)
		if err != nil {
			b.Fatal(err)
		}
		benchIterations(b, sv, top, rhs)
	})
}

// BenchmarkPrecond compares a preconditioned CG iteration with a plain one,
// side by side on the same load: each round times one plain iteration, one
// iteration with the pivoted-Cholesky preconditioner, and one build of that
// preconditioner: at rank 100 on pol subsets of 2000 and 4000 points, and
// at ranks 256 and 512 on all of pol's 13 500 (synthetic data of that size
// without the files), with the mixed-precision dense operator, the paper's
// 17 right-hand sides, θ = 1 but σ = 0.1.
// pre/plain is the median over the rounds of the preconditioned
// iteration's time over the plain one's, build/plain the median of the
// build's over a plain iteration: medians of each round's ratio, so that a
// burst of load from elsewhere on the machine moves them less than it would
// a ratio of sums.
//
//	go test -tags openblas -run '^$' -bench Precond -benchtime 40x ./solvers/
func BenchmarkPrecond(b *testing.B) {
	for _, c := range []struct{ n, rank int }{{2000, 100}, {4000, 100}, {13500, 256}, {13500, 512}} {
		n, rank := c.n, c.rank
		b.Run(fmt.Sprintf("n=%d/rank=%d", n, rank), func(b *testing.B) {
			op, rhs := precondProblem(b, n)
			// Tolerances no solve meets, so that every column stays active.
			settings := Settings{RelTolMean: 1e-15, RelTolProbes: 1e-15, MaxIterations: 1 << 30}
			noise := op.NoiseVariance()
			start := func(m Method) Solver {
				sv, err := m.Start(op, rhs, nil, settings)
				if err != nil {
					b.Fatal(err)
				}
				return sv
			}
			plain, pre := start(CG{}), start(CG{PrecondRank: rank})
			var preRatio, buildRatio, plainMs []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if plain.Done() || pre.Done() {
					plain, pre = start(CG{}), start(CG{PrecondRank: rank})
				}
				t0 := time.Now()
				if err := plain.Iterate(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := pre.Iterate(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				var w Work
				if _, err := newPivChol(op, rank, false, noise, false, &w); err != nil {
					b.Fatal(err)
				}
				tPlain := t1.Sub(t0).Seconds()
				preRatio = append(preRatio, t2.Sub(t1).Seconds()/tPlain)
				buildRatio = append(buildRatio, time.Since(t2).Seconds()/tPlain)
				plainMs = append(plainMs, tPlain*1e3)
			}
			b.ReportMetric(median(preRatio), "pre/plain")
			b.ReportMetric(median(buildRatio), "build/plain")
			b.ReportMetric(median(plainMs), "plain-ms")
		})
	}
}

// precondProblem returns the mixed-precision dense operator of a pol
// subset of n points (synthetic data without its files), θ = 1 but σ = 0.1,
// and B = [y, z_1..z_16].
func precondProblem(tb testing.TB, n int) (*kernel.Operator, *mat.Dense) {
	var ds *data.Dataset
	var err error
	if dir, ok := ucitest.Find(tb, "pol"); ok {
		ds, err = data.Load("pol", data.Subset(n), data.SubsetSeed(1), data.Dir(dir))
	} else {
		ds, err = data.Synthetic(n, 26, 0)
	}
	if err != nil {
		tb.Fatal(err)
	}
	h := kernel.DefaultHyper(ds.D())
	h.Noise = 0.1
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: h}
	op, err := kernel.NewOperator(ds.XTrain, k, kernel.Options{Precision: kernel.Mixed, Mode: kernel.ModeDense})
	if err != nil {
		tb.Fatal(err)
	}
	b := mat.NewDense(n, 17, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		b.Set(i, 0, ds.YTrain[i])
		for j := 1; j < 17; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	return op, b
}

// median returns the median of v (v is reordered).
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
