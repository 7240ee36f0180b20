package solvers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"hash"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"
)

// The golden test pins the arithmetic of every method: it runs fixed
// problems and compares a SHA-256 of the whole State (every vector, scalar,
// trace row, work count and generator byte) with hashes recorded from the
// code as it was before the solvers' vector work moved behind Space (the
// preconditioned cases: since CG's preconditioner is built by BLAS). Any
// change of a single bit in any iterate fails it; a deliberate change of the
// arithmetic must say so and re-record the hashes (the test prints them).
//
// The bits must not depend on the machine, so the problem avoids every
// operation whose result can: the matrix is a rational-quadratic kernel
// (only +, ×, ÷; math.Exp and math.Sin may use FMA on CPUs that have it),
// the right-hand sides are uniform and ±1 values (NormFloat64 calls
// math.Exp in its tail), and BLAS is gonum's own for the duration of the
// test (OpenBLAS picks its kernels by CPU, so -tags openblas gives bits that
// depend on the machine). The hashes are for amd64: on arm64 and others the
// Go compiler fuses x*y+z into FMA, which changes the bits legitimately.

// goldenProblem returns H (n = 300) and B (m = 5, column 3 zero) and a warm
// start V0.
func goldenProblem() (*mat.SymDense, *mat.Dense, *mat.Dense) {
	const n, d, m = 300, 3, 5
	rng := rand.New(rand.NewPCG(20240611, 35))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 3*rng.Float64() - 1.5
	}
	// Rational quadratic with α = 1: s²/(1 + r²/(2ℓ²)), ℓ = 0.8, s² = 1,
	// plus σ² = 0.05 on the diagonal.
	const twoEll2, noise = 2 * 0.8 * 0.8, 0.05
	h := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			r2 := 0.0
			for k := 0; k < d; k++ {
				t := x[i*d+k] - x[j*d+k]
				r2 += t * t
			}
			v := 1 / (1 + r2/twoEll2)
			if i == j {
				v += noise
			}
			h.SetSym(i, j, v)
		}
	}
	b := mat.NewDense(n, m, nil)
	v0 := mat.NewDense(n, m, nil)
	for i := 0; i < n; i++ {
		s := 0.0
		for k := 0; k < d; k++ {
			s += x[i*d+k] * x[i*d+k]
		}
		b.Set(i, 0, s-1.5+0.2*(rng.Float64()-0.5))
		for j := 1; j < m; j++ {
			if j == 3 {
				continue // a zero right-hand side
			}
			if rng.Uint64()&1 == 0 {
				b.Set(i, j, 1)
			} else {
				b.Set(i, j, -1)
			}
		}
		for j := 0; j < m; j++ {
			v0.Set(i, j, 0.4*(rng.Float64()-0.5))
		}
	}
	return h, b, v0
}

// hashState returns the SHA-256 of every field of st, in a fixed order.
func hashState(st *State) string {
	h := sha256.New()
	hashInts(h, len(st.Method))
	h.Write([]byte(st.Method))
	hashInts(h, st.N, st.M, st.Iteration)
	hashFloats(h, st.V)
	hashFloats(h, st.R)
	hashFloats(h, st.BNorms)
	hashFloats(h, st.RelResiduals)
	hashBools(h, st.ColumnConverged)
	hashInts(h, len(st.Trace))
	for _, t := range st.Trace {
		hashFloats(h, t)
	}
	hashBools(h, []bool{st.Converged})
	w := st.Work
	hashInts(h, w.OperatorProducts, w.RowEvaluations, w.BlockEntries, w.BlockFactorisations)
	s := st.Settings
	hashFloats(h, []float64{s.RelTolMean, s.RelTolProbes})
	hashInts(h, s.MaxIterations)
	if c := st.CG; c != nil {
		h.Write([]byte("cg"))
		hashFloats(h, c.P)
		hashFloats(h, c.RZ)
		if c.PrecondRank != 0 { // kept out of the hashes of plain CG
			hashInts(h, c.PrecondRank)
		}
	}
	if a := st.AP; a != nil {
		h.Write([]byte("ap"))
		hashInts(h, a.BlockSize, a.Last)
		hashInts(h, a.Starts...)
		hashInts(h, a.Picks...)
	}
	if g := st.SGD; g != nil {
		h.Write([]byte("sgd"))
		hashFloats(h, g.Velocity)
		hashInts(h, len(g.RNG))
		h.Write(g.RNG)
		hashInts(h, g.Perm...)
		hashInts(h, g.Verifications)
	}
	if st.Cholesky != nil {
		h.Write([]byte("cholesky"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashInts(h hash.Hash, v ...int) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(v)))
	h.Write(buf[:])
	for _, x := range v {
		binary.LittleEndian.PutUint64(buf[:], uint64(int64(x)))
		h.Write(buf[:])
	}
}

func hashFloats(h hash.Hash, v []float64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(v)))
	h.Write(buf[:])
	for _, x := range v {
		binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
		h.Write(buf[:])
	}
}

func hashBools(h hash.Hash, v []bool) {
	b := make([]byte, len(v)+8)
	binary.LittleEndian.PutUint64(b, uint64(len(v)))
	for i, x := range v {
		if x {
			b[8+i] = 1
		}
	}
	h.Write(b)
}

type goldenCase struct {
	name     string
	method   Method
	warm     bool
	settings Settings
	mid      int // iterations before the mid-solve hash and the pause
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"cg", CG{}, false, Settings{}, 10},
		{"cg-warm", CG{}, true, Settings{}, 10},
		{"cg-precond", CG{PrecondRank: 20, PrecondNoise: 0.05}, false, Settings{}, 5},
		{"cg-precond-diag-warm", CG{PrecondRank: 20, PrecondDiagonal: true, PrecondNoise: 0.05}, true, Settings{}, 5},
		{"cg-precond-auto", CG{PrecondRank: PrecondRankAuto, PrecondNoise: 0.05}, true, Settings{}, 5},
		{"cg-tight", CG{}, false, Settings{RelTolMean: 1e-6, RelTolProbes: 1e-4, MaxIterations: 60}, 30},
		// Tolerances near the rounding floor: recurrence residuals meet them
		// before true ones do, so CG's recurrence restarts.
		{"cg-restart", CG{}, false, Settings{RelTolMean: 3e-13, RelTolProbes: 3e-13, MaxIterations: 200}, 160},
		{"cg-precond-restart", CG{PrecondRank: 20, PrecondNoise: 0.05}, true, Settings{RelTolMean: 3e-14, RelTolProbes: 3e-14, MaxIterations: 150}, 100},
		{"ap", AP{BlockSize: 64}, false, Settings{MaxIterations: 120}, 37},
		{"ap-warm", AP{BlockSize: 64}, true, Settings{MaxIterations: 120}, 37},
		{"sgd", SGD{BatchSize: 50, Seed: 5}, false, Settings{MaxIterations: 400}, 123},
		{"sgd-raw-warm", SGD{BatchSize: 50, RawLearningRate: 4, Seed: 6}, true, Settings{MaxIterations: 400}, 123},
		{"sgd-nomomentum", SGD{BatchSize: 40, Momentum: -1, LearningRate: 1.5, Seed: 7}, false, Settings{MaxIterations: 300}, 111},
		{"sgd-converge", SGD{BatchSize: 100, Seed: 8}, false, Settings{RelTolMean: 0.05, RelTolProbes: 0.2, MaxIterations: 5000}, 50},
		{"cholesky", Cholesky{}, true, Settings{}, 0},
	}
}

// goldenHashes[name] = hashes of the State after Start, after mid
// iterations, when Done, and when Done after a pause at mid and Resume
// (which differs from the third only in Work where Resume recomputes
// something: AP's block factors, CG's preconditioner).
var goldenHashes = map[string][4]string{
	"cg":                   {"bfad8d6b6791a695f5a133a245bf5480c08e38111f3016c68434043d7c2221c3", "d933c78a7e5383eb22a70c9b3dc198478d87e6593b655a8a2589000a3f53c42f", "db35d0df558e77dac1d966f41813573b30dde4e95a002db6ba3c97fdffac76d1", "db35d0df558e77dac1d966f41813573b30dde4e95a002db6ba3c97fdffac76d1"}, // 30 iterations
	"cg-warm":              {"6d2d182f7bb3b86e3575424a3be148d330fc2cdfb7636b929f7772eefc4976f7", "625772cd3a5620fb3f39672966840c1f4cff069f7e905700510a9f8c1776d8a3", "b4b52ddec494fd90d67e4bb13c790df3470e5ff7a3c1abb38d8356046bca428d", "b4b52ddec494fd90d67e4bb13c790df3470e5ff7a3c1abb38d8356046bca428d"}, // 31 iterations
	"cg-precond":           {"8b0c37dfd75c7f3b5b7704cc3f7b405cef47fa57089b927f7153732493b2d197", "e1cf9632773f7c947106971b82019501b43aaaea108b20348584c899dbc267a6", "6c7130c9342d75f1f782dba97d8b0403a3b14f835a2eb46b8382ebe19de6bbfc", "4dad29c251ddcaf95d8ded1f23d3be999b642d23fd72ac4946d7833c7540b84c"}, // 16 iterations
	"cg-precond-diag-warm": {"515e80c13647406cf77a4065bd9536d3e381b7db4edbc7a9e18c92c7324bebc8", "385ae8960abdbb593faa251a855a28da71f678f4ddaf700e4aaf139636e8c8ea", "05091806779df8ea4cf128d435af9366c13bc61c928508d88db9559fa32ac775", "dd3b3833c9b42bbf0a4be50498fe0d2a53dd5695d761d5b8a83e12fe394ab3b2"}, // 17 iterations
	"cg-precond-auto":      {"1c2c90775ef1a58ced57fbd26f97c5608b2126c549455367ffb2146723bf8708", "15dcccc13cf73b6c825abf4e1c95ad8b3e7da57c1269cd36ac8aab5c52f7527e", "aa8474c7a15b0e26319c7b91ec4f6746dfb8ac466b5bc2a55074981a9abd27e8", "4bd73b3422bc3446da2e5308c54992b1a8d94faec417ca2179578202e81baacc"}, // 7 iterations, rank 60 (AutoRankCap(300))
	"cg-tight":             {"954514c38fb2d60670887f52264ec1f613e9f31da9025bcdc00a09d53d9a267a", "98149be770217eb8e1fd121d8bd68ebad7c72127a4062454a981000644ff9683", "ec8f5eee9c9b5810f3e30a5e5ffd028cbd31ecc997409192ef592a3df6707cbe", "ec8f5eee9c9b5810f3e30a5e5ffd028cbd31ecc997409192ef592a3df6707cbe"}, // 60 iterations
	"cg-restart":           {"2b9a3250cd889371a65783d5be012127c9caa7c413efe888bc23a6965e89b526", "2da668136b10b267596a64b4c900acf1870dc81b0511a3c5b071a1565052e58d", "49f3e4d138944290d3af98371a649b37700b32fe171d42b0a4265747fa27fc2f", "49f3e4d138944290d3af98371a649b37700b32fe171d42b0a4265747fa27fc2f"}, // 170 iterations
	"cg-precond-restart":   {"44e38a3acba3dfa61c86b7a3348d4084dbcc2a5196423925d16a35beb744af48", "717fae8a6f27ee27522d26834d1809a4d673d04a554b31a8d4150e49dac00842", "519605a7954bd0306cb20e945006d9e269e239990ef9682856db6bd4aac857e2", "0e956a15df9610f503e63b16e6d72fe0e3c09df554a7b0f9a7c4020313495978"}, // 109 iterations: stalls at the rounding floor (State.Stalled)
	"ap":                   {"8a17d1b64c894365975e9b9fbf2420bec3da3e12b9f183a43781682a9d84cf4f", "657ef8d3a8b97b7dff103972a60d79452da7317e3c6d44d982da08ce2de26236", "3e3d28485a1d6aa2a506646c059fc1faca7e8477542b30d92646e61c6e35745e", "03a6abd3abe64a1d960a49aefb4813e6a6aa23c984d6cd3a5faac3ba25a75b68"}, // 120 iterations
	"ap-warm":              {"45f4fd55355b242f5cc77a346a76ebb2306bb480d65372a58d3c907c4cfac111", "321556addeabf063d5cfee9dbd242b53cbc3bdf4b6d9c711c7d74d1f4bb29d6e", "1b58dcf0474ccecf2edb311c5c1a8b5715de715c807a5e39abd6c1f79287dd6e", "3a8787afe6465453fa852187a34ff430d96231211747bc2ee920b4e76b206321"}, // 120 iterations
	"sgd":                  {"9ef86962581453905870d7a932b414553b7fc446a4370895c7aee4c156535da4", "ab6247505fad71572b8efdccad6f61fcd34e8894a866d65f5a667c56f87219ce", "f743f34663254482087060a277de4ce7b8ef1fcc4e6b7360de31ff9d3f1be0a1", "f743f34663254482087060a277de4ce7b8ef1fcc4e6b7360de31ff9d3f1be0a1"}, // 400 iterations
	"sgd-raw-warm":         {"24bba45a17caf222f24cf365bcccc57ef74550d863c89f279e8f901e1c7dd504", "9256ee885f508b9837fd36d4eaed5dec0c94e84c835948524fc1e2deaa7100be", "4b2906ddb195b869fdf822ac9f96d035e136d205c724117dd21b3cb8063efb94", "4b2906ddb195b869fdf822ac9f96d035e136d205c724117dd21b3cb8063efb94"}, // 339 iterations
	"sgd-nomomentum":       {"d5458d4466bc629c7ef80af9a42d1e0ca43e9fe9bbeeab624767cd51290131c4", "f29953f396d194e0c7e21cb5056c89533f435c6f3fc1db792f996e036e3109bf", "e75a1db8f2614f7bb4220b0356facafbc7fb3e2b6ab34e8feec36a7861acb9e5", "e75a1db8f2614f7bb4220b0356facafbc7fb3e2b6ab34e8feec36a7861acb9e5"}, // 300 iterations
	"sgd-converge":         {"af4a3952ca501173cf1cef060535a108a5ee668aa5401e6f550b06aac2bf0e1e", "db4fec43e202b37ecdcd716605338de7d5cf82aec95e51a14c95007a42513cc3", "9ce964d1f797f5b90820a72b7a46a18a799647c93935217eb428bfd5f5b2a397", "9ce964d1f797f5b90820a72b7a46a18a799647c93935217eb428bfd5f5b2a397"}, // 301 iterations
	"cholesky":             {"008d89147a9f5b5b03701aa4c8847ace2f0472525815c968939ecff5b6de7683", "008d89147a9f5b5b03701aa4c8847ace2f0472525815c968939ecff5b6de7683", "9dd91708e953af5120225edbb34ebe37030b7618c58ee6d610d68eb80670598a", "9dd91708e953af5120225edbb34ebe37030b7618c58ee6d610d68eb80670598a"}, // 1 iterations
}

// goldenRun runs c and returns its four hashes (see goldenHashes), and
// whether the straight and the resumed final States agree but for Work.
func goldenRun(t *testing.T, c goldenCase, op Operator, b, v0 *mat.Dense) (got [4]string, sameButWork bool, iters int) {
	t.Helper()
	if !c.warm {
		v0 = nil
	}
	sv, err := c.method.Start(op, b, v0, c.settings)
	if err != nil {
		t.Fatal(err)
	}
	got[0] = hashState(sv.State())
	for sv.State().Iteration < c.mid && !sv.Done() {
		if err := sv.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	got[1] = hashState(sv.State())
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(sv.State()); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), sv); err != nil {
		t.Fatal(err)
	}
	got[2] = hashState(sv.State())
	iters = sv.State().Iteration
	straight := sv.State().Clone()

	var st State
	if err := gob.NewDecoder(&buf).Decode(&st); err != nil {
		t.Fatal(err)
	}
	rs, err := Resume(op, c.method, b, &st)
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	got[3] = hashState(rs.State())
	straight.Work, st.Work = Work{}, Work{}
	return got, hashState(straight) == hashState(&st), iters
}

// goldenBLAS skips the test off amd64 and runs the rest of it on gonum's
// pure-Go BLAS: the platform and implementation the golden hashes' bits
// were recorded with.
func goldenBLAS(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the golden hashes are recorded on amd64; %s may fuse multiply-adds and give other bits", runtime.GOARCH)
	}
	prev := blas64.Implementation()
	blas64.Use(gonum.Implementation{})
	t.Cleanup(func() { blas64.Use(prev) })
}

func TestGoldenStateHashes(t *testing.T) {
	goldenBLAS(t)
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)

	h, b, v0 := goldenProblem()
	op, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			want, ok := goldenHashes[c.name]
			for _, p := range []int{1, 2} {
				runtime.GOMAXPROCS(p)
				got, sameButWork, iters := goldenRun(t, c, op, b, v0)
				if !sameButWork {
					t.Errorf("GOMAXPROCS %d: the State resumed at iteration %d differs from the straight run's in more than Work", p, c.mid)
				}
				if !ok {
					t.Errorf("no golden hashes recorded: %q: {%q, %q, %q, %q}, // %d iterations", c.name, got[0], got[1], got[2], got[3], iters)
					continue
				}
				for i, what := range []string{"after Start", "mid-solve", "when Done", "when Done after Resume"} {
					if got[i] != want[i] {
						t.Errorf("GOMAXPROCS %d: State %s hashes to %s, want %s", p, what, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestGoldenCaseStalls: the golden case whose tolerances sit below the
// float64 rounding floor (cg-precond-restart) ends Stalled, not converged,
// before its cap, its true residuals above the tolerance.
func TestGoldenCaseStalls(t *testing.T) {
	h, b, v0 := goldenProblem()
	op, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases() {
		if c.name != "cg-precond-restart" {
			continue
		}
		init := v0
		if !c.warm {
			init = nil
		}
		sv, err := c.method.Start(op, b, init, c.settings)
		if err != nil {
			t.Fatal(err)
		}
		if err := Run(context.Background(), sv); err != nil {
			t.Fatal(err)
		}
		st := sv.State()
		if !st.Stalled || st.Converged || st.Iteration >= c.settings.MaxIterations {
			t.Fatalf("stalled %v, converged %v after %d of %d iterations; want a stall before the cap", st.Stalled, st.Converged, st.Iteration, c.settings.MaxIterations)
		}
		if !slices.ContainsFunc(st.RelResiduals, func(r float64) bool { return r >= c.settings.RelTolMean }) {
			t.Errorf("stalled with every residual below the tolerance: %v", st.RelResiduals)
		}
		return
	}
	t.Fatal("no golden case cg-precond-restart")
}
