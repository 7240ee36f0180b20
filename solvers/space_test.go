package solvers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/internal/floatbits"
)

// colSpace is a device-like Space for tests: it keeps its blocks
// column-major, apart from any State slice, and counts what crosses between
// it and the solver. Each operation copies its blocks into row-major host
// blocks, runs HostSpace's operation on them and copies the results back:
// the same arithmetic in another layout and another memory. A solver that
// touched a vector other than through the Space would therefore see stale
// or transposed values and lose the golden bits; and the counts show what
// a GPU implementation would move per iteration.
type colSpace struct {
	host *hostSpace
	spaceCounts
	closed   bool
	failDots int // > 0: the failDots-th Dots call fails
}

// spaceCounts counts the traffic of a colSpace.
type spaceCounts struct {
	uploaded, downloaded int // values of whole blocks, each way
	scalarsOut           int // values returned by Dots
	indicesIn            int // indices sent by NewIndex and SetIndex
	newBlocks, newIdx    int // allocations
	dotsCalls            int
}

type colBlock struct {
	r, c     int
	data     []float64 // column-major: (i, j) at data[j*r+i]
	factored bool
}

func (b *colBlock) Dims() (int, int) { return b.r, b.c }

type colIndex struct{ idx []int }

func (ix *colIndex) Len() int { return len(ix.idx) }

// toHost returns a row-major copy of b.
func toHost(b Block) *hostBlock {
	c := b.(*colBlock)
	h := &hostBlock{r: c.r, c: c.c, data: make([]float64, c.r*c.c), factored: c.factored}
	for i := 0; i < c.r; i++ {
		for j := 0; j < c.c; j++ {
			h.data[i*c.c+j] = c.data[j*c.r+i]
		}
	}
	return h
}

// fromHost copies h back into b.
func fromHost(b Block, h *hostBlock) {
	c := b.(*colBlock)
	for i := 0; i < c.r; i++ {
		for j := 0; j < c.c; j++ {
			c.data[j*c.r+i] = h.data[i*c.c+j]
		}
	}
	c.factored = h.factored
}

func hostIdx(ix Index) Index { return &hostIndex{idx: ix.(*colIndex).idx} }

func (s *colSpace) live() {
	if s.closed {
		panic("colSpace: used after Close")
	}
}

func (s *colSpace) Size() int { return s.host.Size() }

func (s *colSpace) NewBlock(r, c int) (Block, error) {
	s.live()
	s.newBlocks++
	return &colBlock{r: r, c: c, data: make([]float64, r*c)}, nil
}

func (s *colSpace) NewIndex(idx []int) (Index, error) {
	s.live()
	s.newIdx++
	ix := &colIndex{idx: make([]int, len(idx))}
	return ix, s.SetIndex(ix, idx)
}

func (s *colSpace) SetIndex(ix Index, idx []int) error {
	s.live()
	s.indicesIn += len(idx)
	if err := s.host.SetIndex(&hostIndex{idx: make([]int, len(idx))}, idx); err != nil {
		return err // range checks
	}
	copy(ix.(*colIndex).idx, idx)
	return nil
}

func (s *colSpace) Upload(b Block, src []float64) error {
	s.live()
	s.uploaded += len(src)
	h := toHost(b)
	if err := s.host.Upload(h, src); err != nil {
		return err
	}
	fromHost(b, h)
	return nil
}

func (s *colSpace) Download(dst []float64, b Block) error {
	s.live()
	s.downloaded += len(dst)
	return s.host.Download(dst, toHost(b))
}

func (s *colSpace) Close() error {
	if s.closed {
		return errors.New("colSpace: closed twice")
	}
	s.closed = true
	return nil
}

// update runs f on a host copy of dst and writes the result back to dst.
func (s *colSpace) update(dst Block, f func(d Block)) {
	s.live()
	d := toHost(dst)
	f(d)
	fromHost(dst, d)
}

func (s *colSpace) Mul(dst, src Block, cols []int) {
	s.update(dst, func(d Block) { s.host.Mul(d, toHost(src), cols) })
}

func (s *colSpace) MulRows(dst Block, rows Index, src Block, cols []int) {
	s.update(dst, func(d Block) { s.host.MulRows(d, hostIdx(rows), toHost(src), cols) })
}

func (s *colSpace) MulCols(dst Block, rows Index, src Block, cols []int) {
	s.update(dst, func(d Block) { s.host.MulCols(d, hostIdx(rows), toHost(src), cols) })
}

func (s *colSpace) Principal(dst Block, rows Index) {
	s.update(dst, func(d Block) { s.host.Principal(d, hostIdx(rows)) })
}

func (s *colSpace) Factorize(a Block) (err error) {
	s.update(a, func(h Block) { err = s.host.Factorize(h) })
	return err
}

func (s *colSpace) Solve(dst, a, src Block, cols []int) {
	s.update(dst, func(d Block) { s.host.Solve(d, toHost(a), toHost(src), cols) })
}

func (s *colSpace) MulT(dst, x, y Block, cols []int) {
	s.update(dst, func(d Block) { s.host.MulT(d, toHost(x), toHost(y), cols) })
}

func (s *colSpace) MulAdd(y Block, alpha float64, x, u Block, cols []int) {
	s.update(y, func(d Block) { s.host.MulAdd(d, alpha, toHost(x), toHost(u), cols) })
}

func (s *colSpace) Dots(dst []float64, x, y Block, cols, segs []int) error {
	s.live()
	s.dotsCalls++
	s.scalarsOut += len(dst)
	if s.failDots > 0 && s.dotsCalls == s.failDots {
		return errors.New("colSpace: injected device failure")
	}
	return s.host.Dots(dst, toHost(x), toHost(y), cols, segs)
}

func (s *colSpace) Axpy(y Block, alpha []float64, x Block, cols []int) {
	s.update(y, func(d Block) { s.host.Axpy(d, alpha, toHost(x), cols) })
}

func (s *colSpace) Xpby(y Block, x Block, beta []float64, cols []int) {
	s.update(y, func(d Block) { s.host.Xpby(d, toHost(x), beta, cols) })
}

func (s *colSpace) Scale(y Block, alpha []float64, cols []int) {
	s.update(y, func(d Block) { s.host.Scale(d, alpha, cols) })
}

func (s *colSpace) Copy(y, x Block, cols []int) {
	s.update(y, func(d Block) { s.host.Copy(d, toHost(x), cols) })
}

func (s *colSpace) GatherRows(dst Block, rows Index, src Block, cols []int) {
	s.update(dst, func(d Block) { s.host.GatherRows(d, hostIdx(rows), toHost(src), cols) })
}

func (s *colSpace) ScatterRows(y Block, rows Index, x Block, cols []int) {
	s.update(y, func(d Block) { s.host.ScatterRows(d, hostIdx(rows), toHost(x), cols) })
}

func (s *colSpace) AxpyRows(y Block, rows Index, alpha []float64, x Block, cols []int) {
	s.update(y, func(d Block) { s.host.AxpyRows(d, hostIdx(rows), alpha, toHost(x), cols) })
}

func (s *colSpace) ScaleRows(y, d Block, cols []int) {
	s.update(y, func(h Block) { s.host.ScaleRows(h, toHost(d), cols) })
}

// spaceOp is an Operator that provides colSpaces, like a GPU backend.
type spaceOp struct {
	Operator
	spaces   []*colSpace
	failDots int
	failNew  error
}

func (o *spaceOp) NewSpace() (Space, error) {
	if o.failNew != nil {
		return nil, o.failNew
	}
	s := &colSpace{host: HostSpace(o.Operator).(*hostSpace), failDots: o.failDots}
	o.spaces = append(o.spaces, s)
	return s, nil
}

func (o *spaceOp) last() *colSpace { return o.spaces[len(o.spaces)-1] }

// stepSpace is a colSpace that is a CGStepper: its CGStep is the
// documented sequence of its own Space operations, α and β computed where
// the vectors are, as a device computes them.
type stepSpace struct {
	*colSpace
	steps int
}

func (s *stepSpace) CGStep(pq, rz []float64, v, r, p, q Block, rzOld []float64, cols []int) error {
	s.steps++
	if err := s.Dots(pq, p, q, cols, nil); err != nil {
		return err
	}
	alpha, neg, beta := make([]float64, len(pq)), make([]float64, len(pq)), make([]float64, len(pq))
	for a := range pq {
		alpha[a] = rzOld[a] / pq[a]
		neg[a] = -alpha[a]
	}
	s.Axpy(v, alpha, p, cols)
	s.Axpy(r, neg, q, cols)
	if err := s.Dots(rz, r, r, cols, nil); err != nil {
		return err
	}
	for a := range rz {
		beta[a] = rz[a] / rzOld[a]
	}
	s.Xpby(p, r, beta, cols)
	return nil
}

// stepOp provides stepSpaces and keeps them.
type stepOp struct {
	spaceOp
	made []*stepSpace
}

func (o *stepOp) NewSpace() (Space, error) {
	sp, err := o.spaceOp.NewSpace()
	if err != nil {
		return nil, err
	}
	s := &stepSpace{colSpace: sp.(*colSpace)}
	o.made = append(o.made, s)
	return s, nil
}

// spaceKinds are the two kinds of space a test can run a solver on: the
// host space (a plain Operator) and the device-like colSpace.
var spaceKinds = []struct {
	name string
	wrap func(Operator) Operator
}{
	{"host", func(op Operator) Operator { return op }},
	{"colspace", func(op Operator) Operator { return &spaceOp{Operator: op} }},
}

// Every method on the device-like space reproduces the golden bits: the
// solvers do all their vector work through the Space, and Upload/Download
// carry the State faithfully across Resume. So does CG on a CGStepper (its
// update after the product in one call, without the preconditioner).
func TestSpaceGoldenBits(t *testing.T) {
	goldenBLAS(t)

	h, b, v0 := goldenProblem()
	dense, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			op := &spaceOp{Operator: dense}
			got, _, _ := goldenRun(t, c, op, b, v0)
			if got != goldenHashes[c.name] {
				t.Errorf("on the column-major space the State hashes to\n%q\nwant\n%q", got, goldenHashes[c.name])
			}
			if len(op.spaces) != 2 {
				t.Errorf("%d spaces for a start and a resume", len(op.spaces))
			}
			if cg, ok := c.method.(CG); ok {
				sop := &stepOp{spaceOp: spaceOp{Operator: dense}}
				if got, _, _ := goldenRun(t, c, sop, b, v0); got != goldenHashes[c.name] {
					t.Errorf("on a CGStepper the State hashes to\n%q\nwant\n%q", got, goldenHashes[c.name])
				}
				steps := 0
				for _, s := range sop.made {
					steps += s.steps
				}
				if (steps > 0) != (cg.PrecondRank == 0) {
					t.Errorf("%d CGStep calls with PrecondRank %d", steps, cg.PrecondRank)
				}
			}
			// A State saved on the host space resumes on the other one
			// with the same bits (a CPU checkpoint continued on a GPU).
			start := v0
			if !c.warm {
				start = nil
			}
			hostSv, err := c.method.Start(dense, b, start, c.settings)
			if err != nil {
				t.Fatal(err)
			}
			for hostSv.Progress().Iteration < c.mid && !hostSv.Done() {
				if err := hostSv.Iterate(); err != nil {
					t.Fatal(err)
				}
			}
			moved, err := Resume(op, c.method, b, hostSv.State().Clone())
			if err != nil {
				t.Fatal(err)
			}
			if err := Run(context.Background(), moved); err != nil {
				t.Fatal(err)
			}
			if got := hashState(moved.State()); got != goldenHashes[c.name][3] {
				t.Errorf("resumed on the column-major space from a host State: %s, want %s", got, goldenHashes[c.name][3])
			}
		})
	}
}

// Per iteration only scalars (and SGD's batch, AP's block indices when a
// block is first picked) cross between solver and space, and nothing is
// allocated; State downloads the vectors when asked, Progress does not;
// Close releases the space once.
func TestSpaceTransfersScalarOnly(t *testing.T) {
	h, b, v0 := goldenProblem()
	dense, err := NewDenseOperator(h)
	if err != nil {
		t.Fatal(err)
	}
	n, m := b.Dims()
	cases := []struct {
		method  Method
		vectors int // n×m vectors State downloads: V, R and the method's
	}{
		{CG{}, 3},
		{CG{PrecondRank: 15, PrecondNoise: 0.05}, 3},
		{AP{BlockSize: 64}, 2},
		{SGD{BatchSize: 50, Seed: 1}, 3},
		{SGD{BatchSize: 50, RawLearningRate: 4, Seed: 1}, 3},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s%+v", tc.method.Name(), tc.method), func(t *testing.T) {
			op := &spaceOp{Operator: dense}
			// Tolerances near the rounding floor, so that CG checks and restarts
			// columns and SGD ends with a true residual.
			sv, err := tc.method.Start(op, b, v0, Settings{RelTolMean: 3e-13, RelTolProbes: 3e-13, MaxIterations: 200})
			if err != nil {
				t.Fatal(err)
			}
			sp := op.last()
			if sp.downloaded != 0 {
				t.Fatalf("Start downloaded %d values", sp.downloaded)
			}
			picked := map[int]bool{}
			for !sv.Done() {
				before := sp.spaceCounts
				if err := sv.Iterate(); err != nil {
					t.Fatal(err)
				}
				d := sp.spaceCounts
				if d.uploaded != before.uploaded || d.downloaded != before.downloaded {
					t.Fatalf("iteration %d moved vectors: %d values up, %d down", sv.Progress().Iteration, d.uploaded-before.uploaded, d.downloaded-before.downloaded)
				}
				// Scalars: at most a few dots of m per iteration, and AP's
				// block scores.
				maxOut := 5 * m
				if ap, ok := sv.(*apSolver); ok {
					maxOut += len(ap.factors) * m
				}
				if out := d.scalarsOut - before.scalarsOut; out > maxOut {
					t.Fatalf("iteration %d returned %d scalars, more than %d", sv.Progress().Iteration, out, maxOut)
				}
				newBlocks, newIdx, idxIn := d.newBlocks-before.newBlocks, d.newIdx-before.newIdx, d.indicesIn-before.indicesIn
				switch s := sv.(type) {
				case *apSolver:
					// A block's factor and indices come with its first pick.
					bl := s.st.AP.Last
					first := !picked[bl]
					picked[bl] = true
					k := s.st.AP.Starts[bl+1] - s.st.AP.Starts[bl]
					if first && (newBlocks != 1 || newIdx != 1 || idxIn != k) || !first && (newBlocks != 0 || newIdx != 0 || idxIn != 0) {
						t.Fatalf("AP iteration picking block %d (first %v): %d blocks, %d index lists, %d indices", bl, first, newBlocks, newIdx, idxIn)
					}
				case *sgdSolver:
					if newBlocks != 0 || newIdx != 0 || idxIn != s.bs {
						t.Fatalf("SGD iteration: %d blocks, %d index lists, %d indices (batch %d)", newBlocks, newIdx, idxIn, s.bs)
					}
				default:
					if newBlocks != 0 || newIdx != 0 || idxIn != 0 {
						t.Fatalf("iteration allocated %d blocks, %d index lists, sent %d indices", newBlocks, newIdx, idxIn)
					}
				}
			}
			before := sp.downloaded
			p := sv.Progress()
			if sp.downloaded != before {
				t.Fatal("Progress downloaded vectors")
			}
			st := sv.State()
			if got := sp.downloaded - before; got != tc.vectors*n*m {
				t.Fatalf("State downloaded %d values, want %d", got, tc.vectors*n*m)
			}
			if p.Iteration != st.Iteration || p.Converged != st.Converged || p.Work != st.Work || !floatbits.Equal(p.RelResiduals, st.RelResiduals) || fmt.Sprint(p.ColumnConverged) != fmt.Sprint(st.ColumnConverged) {
				t.Fatalf("Progress %+v disagrees with State", p)
			}
			// The downloaded State is the true one: R = B − HV up to
			// rounding where the method keeps it exact.
			if tc.method.Name() != "sgd" {
				got := trueRel(h, sv.Solution(), b)
				for j, r := range st.RelResiduals {
					if math.Abs(got[j]-r) > 1e-8*(1+r) {
						t.Fatalf("column %d: State's residual %g, recomputed %g", j, r, got[j])
					}
				}
			}
			snap := st.Clone()
			if err := sv.Close(); err != nil {
				t.Fatal(err)
			}
			if !sp.closed || sv.Close() != nil {
				t.Fatal("Close did not close the space once")
			}
			if !sv.Done() || !errors.Is(sv.Iterate(), ErrClosed) {
				t.Fatal("Iterate after Close must return ErrClosed")
			}
			if after := sv.State(); !floatbits.Equal(after.V, snap.V) || !floatbits.Equal(after.R, snap.R) {
				t.Fatal("State after Close lost the vectors")
			}
		})
	}
}

// State on a device-like space follows the iterations (it downloads when
// called), and a resumed solve continues from exactly the uploaded State.
func TestSpaceStateFollowsIterations(t *testing.T) {
	h, b, _ := goldenProblem()
	dense, _ := NewDenseOperator(h)
	for _, m := range []Method{CG{}, AP{BlockSize: 64}, SGD{BatchSize: 50, Seed: 2}} {
		host, err := m.Start(dense, b, nil, Settings{MaxIterations: 6})
		if err != nil {
			t.Fatal(err)
		}
		dev, err := m.Start(&spaceOp{Operator: dense}, b, nil, Settings{MaxIterations: 6})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := host.Iterate(); err != nil {
				t.Fatal(err)
			}
			if err := dev.Iterate(); err != nil {
				t.Fatal(err)
			}
			if !floatbits.Equal(host.State().V, dev.State().V) || !floatbits.Equal(host.State().R, dev.State().R) {
				t.Fatalf("%s: iteration %d: the device-like space's State differs from the host's", m.Name(), i+1)
			}
		}
	}
}

// Failures of the space reach the caller as errors, and the solver stops.
func TestSpaceFailures(t *testing.T) {
	h, b, _ := goldenProblem()
	dense, _ := NewDenseOperator(h)
	boom := errors.New("no device")
	if _, err := (CG{}).Start(&spaceOp{Operator: dense, failNew: boom}, b, nil, Settings{}); !errors.Is(err, boom) {
		t.Fatalf("Start with a failing NewSpace: %v", err)
	}
	for _, m := range []Method{CG{}, AP{BlockSize: 64}, SGD{BatchSize: 50}} {
		op := &spaceOp{Operator: dense, failDots: 4}
		sv, err := m.Start(op, b, nil, Settings{})
		if err != nil {
			t.Fatal(err)
		}
		err = Run(context.Background(), sv)
		if err == nil || !errors.Is(err, sv.Iterate()) || !sv.Done() {
			t.Fatalf("%s: a failing Dots gave %v; Done %v", m.Name(), err, sv.Done())
		}
		if err := sv.Close(); err != nil || !op.last().closed {
			t.Fatalf("%s: Close after a failure: %v", m.Name(), err)
		}
	}
}

// Each HostSpace operation against a naive loop over the definition in
// Space's documentation: exact for the element-wise operations and Dots
// (same order of summation), within rounding for the products.
func TestHostSpaceOps(t *testing.T) {
	const n, m, k = 37, 5, 6
	rng := rand.New(rand.NewPCG(3, 5))
	h, _, _ := goldenProblem()
	hs := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			hs.SetSym(i, j, h.At(i, j))
		}
	}
	op, _ := NewDenseOperator(hs)
	sp := HostSpace(op)
	rnd := func(r, c int) *hostBlock {
		bl, _ := sp.NewBlock(r, c)
		blk := bl.(*hostBlock)
		for i := range blk.data {
			blk.data[i] = rng.Float64()*2 - 1
		}
		return blk
	}
	clone := func(b *hostBlock) *hostBlock {
		return &hostBlock{r: b.r, c: b.c, data: append([]float64(nil), b.data...)}
	}
	at := func(b *hostBlock, i, j int) float64 { return b.data[i*b.c+j] }
	set := func(b *hostBlock, i, j int, v float64) { b.data[i*b.c+j] = v }
	rows := []int{2, 5, 11, 12, 30, 36}
	ix, err := sp.NewIndex(rows)
	if err != nil {
		t.Fatal(err)
	}
	coef := []float64{0.5, -2, 0, 1}

	for _, cols := range [][]int{nil, {0, 2, 3, 4}, {1, 3}} {
		sel := cols
		if sel == nil {
			sel = []int{0, 1, 2, 3, 4}
		}
		co := func(a int) float64 { return coef[a%len(coef)] }
		alpha := make([]float64, len(sel))
		for a := range alpha {
			alpha[a] = co(a)
		}
		// exact compares every entry: selected ones with f, others unchanged.
		exact := func(what string, got, old *hostBlock, f func(i, a, j int) float64) {
			t.Helper()
			for i := 0; i < got.r; i++ {
				for j := 0; j < got.c; j++ {
					want := at(old, i, j)
					for a, c := range sel {
						if c == j {
							want = f(i, a, j)
						}
					}
					g := at(got, i, j)
					if math.Float64bits(g) != math.Float64bits(want) {
						t.Fatalf("%s cols %v: (%d,%d) = %v, want %v", what, cols, i, j, g, want)
					}
				}
			}
		}
		near := func(what string, got, old *hostBlock, f func(i, a, j int) float64) {
			t.Helper()
			for i := 0; i < got.r; i++ {
				for j := 0; j < got.c; j++ {
					want := at(old, i, j)
					sel2 := false
					for a, c := range sel {
						if c == j {
							want, sel2 = f(i, a, j), true
						}
					}
					g := at(got, i, j)
					if sel2 && math.Abs(g-want) > 1e-12*(1+math.Abs(want)) || !sel2 && g != want {
						t.Fatalf("%s cols %v: (%d,%d) = %v, want %v", what, cols, i, j, g, want)
					}
				}
			}
		}

		x, y := rnd(n, m), rnd(n, m)
		y0 := clone(y)
		sp.Axpy(y, alpha, x, cols)
		exact("Axpy", y, y0, func(i, a, j int) float64 { return at(y0, i, j) + alpha[a]*at(x, i, j) })
		y = rnd(n, m)
		y0 = clone(y)
		sp.Xpby(y, x, alpha, cols)
		exact("Xpby", y, y0, func(i, a, j int) float64 { return at(x, i, j) + alpha[a]*at(y0, i, j) })
		y = rnd(n, m)
		set(y, 3, sel[0], math.NaN())
		y0 = clone(y)
		sp.Scale(y, alpha, cols)
		exact("Scale", y, y0, func(i, a, j int) float64 {
			if alpha[a] == 0 {
				return 0
			}
			return alpha[a] * at(y0, i, j)
		})
		y = rnd(n, m)
		y0 = clone(y)
		sp.Copy(y, x, cols)
		exact("Copy", y, y0, func(i, a, j int) float64 { return at(x, i, j) })

		g := rnd(k, m)
		g0 := clone(g)
		sp.GatherRows(g, ix, x, cols)
		exact("GatherRows", g, g0, func(i, a, j int) float64 { return at(x, rows[i], j) })
		y = rnd(n, m)
		y0 = clone(y)
		sp.ScatterRows(y, ix, g, cols)
		exact("ScatterRows", y, y0, func(i, a, j int) float64 {
			for r, ri := range rows {
				if ri == i {
					return at(g, r, j)
				}
			}
			return at(y0, i, j)
		})
		y = rnd(n, m)
		y0 = clone(y)
		sp.AxpyRows(y, ix, alpha, g, cols)
		exact("AxpyRows", y, y0, func(i, a, j int) float64 {
			for r, ri := range rows {
				if ri == i {
					return at(y0, i, j) + alpha[a]*at(g, r, j)
				}
			}
			return at(y0, i, j)
		})
		d := rnd(n, 1)
		y = rnd(n, m)
		y0 = clone(y)
		sp.ScaleRows(y, d, cols)
		exact("ScaleRows", y, y0, func(i, a, j int) float64 { return at(y0, i, j) * d.data[i] })

		// Dots: per segment, rows in increasing order.
		for _, segs := range [][]int{nil, {0, 10, 20, 37}} {
			bounds := segs
			if bounds == nil {
				bounds = []int{0, n}
			}
			got := make([]float64, (len(bounds)-1)*len(sel))
			if err := sp.Dots(got, x, y, cols, segs); err != nil {
				t.Fatal(err)
			}
			for s := 0; s+1 < len(bounds); s++ {
				for a, j := range sel {
					want := 0.0
					for i := bounds[s]; i < bounds[s+1]; i++ {
						want += at(x, i, j) * at(y, i, j)
					}
					if got[s*len(sel)+a] != want {
						t.Fatalf("Dots cols %v segs %v: [%d,%d] = %v, want %v", cols, segs, s, a, got[s*len(sel)+a], want)
					}
				}
			}
		}

		// Products with H, against the dense matrix.
		hx := func(i, j int, src *hostBlock) float64 {
			s := 0.0
			for l := 0; l < n; l++ {
				s += hs.At(i, l) * at(src, l, j)
			}
			return s
		}
		y = rnd(n, m)
		y0 = clone(y)
		sp.Mul(y, x, cols)
		near("Mul", y, y0, func(i, a, j int) float64 { return hx(i, j, x) })
		g = rnd(k, m)
		g0 = clone(g)
		sp.MulRows(g, ix, x, cols)
		near("MulRows", g, g0, func(i, a, j int) float64 { return hx(rows[i], j, x) })
		dd := rnd(k, m)
		y = rnd(n, m)
		y0 = clone(y)
		sp.MulCols(y, ix, dd, cols)
		near("MulCols", y, y0, func(i, a, j int) float64 {
			s := 0.0
			for r, c := range rows {
				s += hs.At(i, c) * at(dd, r, j)
			}
			return s
		})

		// Small dense algebra.
		const r = 4
		xr := rnd(n, r)
		tt := rnd(r, m)
		t0 := clone(tt)
		sp.MulT(tt, xr, x, cols)
		near("MulT", tt, t0, func(i, a, j int) float64 {
			s := 0.0
			for l := 0; l < n; l++ {
				s += at(xr, l, i) * at(x, l, j)
			}
			return s
		})
		y = rnd(n, m)
		y0 = clone(y)
		sp.MulAdd(y, -0.75, xr, tt, cols)
		near("MulAdd", y, y0, func(i, a, j int) float64 {
			s := 0.0
			for l := 0; l < r; l++ {
				s += at(xr, i, l) * at(tt, l, j)
			}
			return at(y0, i, j) - 0.75*s
		})
		f, _ := sp.NewBlock(k, k)
		sp.Principal(f, ix)
		fb := f.(*hostBlock)
		for a := 0; a < k; a++ {
			for c := a; c < k; c++ {
				if at(fb, a, c) != hs.At(rows[a], rows[c]) {
					t.Fatalf("Principal (%d,%d) = %v, want %v", a, c, at(fb, a, c), hs.At(rows[a], rows[c]))
				}
			}
		}
		if err := sp.Factorize(f); err != nil {
			t.Fatal(err)
		}
		src := rnd(k, m)
		sol := rnd(k, m)
		s0 := clone(sol)
		sp.Solve(sol, f, src, cols)
		// sol = H[rows,rows]⁻¹src on the selected columns.
		sub := mat.NewSymDense(k, nil)
		for p := 0; p < k; p++ {
			for q := p; q < k; q++ {
				sub.SetSym(p, q, hs.At(rows[p], rows[q]))
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(sub) {
			t.Fatal("reference factorisation failed")
		}
		var ref mat.Dense
		_ = chol.SolveTo(&ref, mat.NewDense(k, m, src.data))
		near("Solve", sol, s0, func(i, a, j int) float64 { return ref.At(i, j) })
		// In place (dst = src) gives the same bits.
		inPlace := clone(src)
		sp.Solve(inPlace, f, inPlace, cols)
		for i := 0; i < k; i++ {
			for _, j := range sel {
				if at(inPlace, i, j) != at(sol, i, j) {
					t.Fatal("Solve in place differs")
				}
			}
		}
	}

	// Upload and Download round-trip; Download onto the block's own
	// storage is a no-op.
	bl, _ := sp.NewBlock(3, 2)
	in := []float64{1, 2, 3, 4, 5, 6}
	out := make([]float64, 6)
	if err := sp.Upload(bl, in); err != nil {
		t.Fatal(err)
	}
	if err := sp.Download(out, bl); err != nil || fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("round trip %v: %v", out, err)
	}
	// Factorize reports NaN and indefinite blocks.
	bad, _ := sp.NewBlock(2, 2)
	_ = sp.Upload(bad, []float64{1, math.NaN(), 0, 1})
	if err := sp.Factorize(bad); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("Factorize with NaN: %v", err)
	}
	_ = sp.Upload(bad, []float64{1, 2, 0, 1})
	if err := sp.Factorize(bad); !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("Factorize of an indefinite block: %v", err)
	}
	// The lower triangle is never read (Principal leaves it unspecified).
	_ = sp.Upload(bad, []float64{4, 2, math.NaN(), 3})
	if err := sp.Factorize(bad); err != nil {
		t.Fatalf("Factorize read the lower triangle: %v", err)
	}
}

// In the steady state an iteration allocates no vectors: the solvers and
// HostSpace allocate their blocks and scratch at Start (AP a block's factor
// at its first pick). What remains per iteration is the trace row and small
// headers, far below one n×m block.
func TestIterateAllocatesNoVectors(t *testing.T) {
	h, b, _ := goldenProblem()
	dense, _ := NewDenseOperator(h)
	n, m := b.Dims()
	s := Settings{RelTolMean: 1e-14, RelTolProbes: 1e-14, MaxIterations: 1000}
	for _, meth := range []Method{CG{}, CG{PrecondRank: 10, PrecondNoise: 0.05}, AP{BlockSize: 64}, SGD{BatchSize: 50, RawLearningRate: 4}} {
		sv, err := meth.Start(dense, b, nil, s)
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := sv.(*apSolver); ok { // factorise every block first
			for bl := range a.factors {
				if _, _, err := a.factor(bl); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := 0; i < 3; i++ { // first uses of the host space's scratch
			if err := sv.Iterate(); err != nil {
				t.Fatal(err)
			}
		}
		const iters = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < iters; i++ {
			if err := sv.Iterate(); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if sv.Done() {
			t.Fatalf("%s: done before the measurement ended", meth.Name())
		}
		per := (after.TotalAlloc - before.TotalAlloc) / iters
		t.Logf("%s: %d bytes per iteration (one n×m block: %d)", meth.Name(), per, n*m*8)
		if per > uint64(n*m*8/4) {
			t.Errorf("%s: %d bytes per iteration; one n×m block is %d", meth.Name(), per, n*m*8)
		}
	}
}
