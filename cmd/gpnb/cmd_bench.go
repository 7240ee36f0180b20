package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/nb"
	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/solvers"
)

func init() {
	register(&command{name: "bench", short: "measure warm-start ratios, the per-step time split, operator GFLOP/s against gemm (float64 and float32), the kernel build, and peak memory in one run", run: runBench})
}

// benchRun is one short training run of gpnb bench.
type benchRun struct {
	iters               int
	steps               int
	solverSec, totalSec float64
	llh                 float64
	work                kernel.Work // the training operator's, up to the last step
	err                 error
}

// benchKey names a run: its solver and whether it was warm-started.
type benchKey struct {
	solver string
	warm   bool
}

// bench is one gpnb bench: its flags, data and the runs made so far.
type bench struct {
	name, dataDir                       string
	split, subset, steps, cols, precond int
	opSubset, blockSize, batchSize      int
	prec                                kernel.Precision
	solvers                             []string // the iterative ones
	ds                                  *data.Dataset
	methods                             map[string]solvers.Method
	ctx                                 context.Context
	out, stderr                         io.Writer
	base, variants                      map[benchKey]benchRun // float64 runs; --precision's
}

func runBench(args []string, stdout, stderr io.Writer) error {
	b, err := parseBench(args, stdout, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b.ctx = ctx
	if b.ds, err = b.data(b.subset); err != nil {
		return err
	}
	b.header()
	if err := b.warmCold(); err != nil {
		return err
	}
	if b.prec != kernel.Float64 {
		b.variant(b.prec.String()+" kernel operator against float64", b.solvers, b.prec, 0)
	}
	if b.precond > 0 {
		if _, ok := b.base[benchKey{repro.SolverCG, false}]; !ok {
			b.base[benchKey{repro.SolverCG, false}], b.base[benchKey{repro.SolverCG, true}] = b.train("cg", false, kernel.Float64, 0), b.train("cg", true, kernel.Float64, 0)
		}
		b.variant(fmt.Sprintf("CG with a rank-%d pivoted-Cholesky preconditioner against plain CG", b.precond), []string{"cg"}, kernel.Float64, b.precond)
	}
	b.stepSplit()
	opDS := b.ds
	if b.opSubset >= 0 && b.opSubset != b.subset {
		if opDS, err = b.data(b.opSubset); err != nil {
			return err
		}
	}
	b.operators(opDS)
	fmt.Fprintf(stdout, "\nMemory: peak resident set %s (getrusage maxrss); Go runtime memory at the end %s (runtime/metrics /memory/classes/total:bytes)\n",
		fmtBytes(maxRSS()), fmtBytes(goTotalMemory()))
	fmt.Fprintf(stdout, "Load at the end: %.2f (the 1-minute load average; the machine's other work slows every figure above)\n", repro.SystemLoadAverage())
	return nil
}

// parseBench reads gpnb bench's flags.
func parseBench(args []string, stdout, stderr io.Writer) (*bench, error) {
	fs := newFlagSet("bench", "[flags]\n\nWarm-start ratios, a step's time by part, operator rates against gemm, peak memory.", stderr)
	b := &bench{out: stdout, stderr: stderr, base: map[benchKey]benchRun{}, variants: map[benchKey]benchRun{}}
	fs.StringVar(&b.name, "data", "pol", "a UCI name (synthetic data of its shape without its files) or synthetic-N-D-SEED")
	fs.IntVar(&b.split, "split", 0, "split, 0-9")
	fs.IntVar(&b.subset, "subset", 3000, "training points (0: all)")
	fs.IntVar(&b.steps, "steps", 15, "Adam steps a run")
	solverStr := fs.String("solvers", "cg,ap,sgd", "solvers to run cold and warm")
	var rf runFlags
	rf.register(fs, stderr, targetOf(gpnb.Config{}), only("precision"))
	fs.IntVar(&b.precond, "precond-rank", 0, "also run CG with a preconditioner of this rank")
	fs.IntVar(&b.blockSize, "block-size", 0, "AP block size (0: n·2000/13500, at least 100)")
	fs.IntVar(&b.batchSize, "batch-size", 0, "SGD batch size (0: n·1000/13500, at least 100)")
	fs.IntVar(&b.cols, "columns", 17, "columns of V in the operator timings")
	fs.IntVar(&b.opSubset, "operator-subset", -1, "training points of the operator timings (-1: --subset, 0: all)")
	fs.StringVar(&b.dataDir, "data-dir", "", "`DIR` of the UCI files (default $GPNB_DATA)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if b.steps <= 0 || b.subset < 0 || b.cols <= 0 || b.precond < 0 || b.opSubset < -1 {
		return nil, fmt.Errorf("--steps, --columns must be > 0, --subset, --precond-rank ≥ 0 and --operator-subset ≥ -1 (got %d, %d, %d, %d, %d)", b.steps, b.cols, b.subset, b.precond, b.opSubset)
	}
	b.prec = rf.t.Config.Operator.Precision
	list, err := repro.ParseSolvers(*solverStr)
	if err != nil {
		return nil, fmt.Errorf("--solvers: %w", err)
	}
	for _, s := range list {
		if s != repro.SolverCholesky {
			b.solvers = append(b.solvers, s)
		}
	}
	if _, err := repro.ParseDataset(b.name); err != nil {
		return nil, fmt.Errorf("--data: %w", err)
	}
	return b, nil
}

// data loads subset points (0: all) of --data, or synthetic data of a UCI
// set's shape where its files are absent (data.OpenOrSynthetic).
func (b *bench) data(subset int) (*data.Dataset, error) {
	opts := []data.Option{data.Split(b.split)}
	if subset > 0 {
		opts = append(opts, data.Subset(subset))
	}
	if b.dataDir != "" {
		opts = append(opts, data.Dir(b.dataDir))
	}
	ds, synthetic, err := data.OpenOrSynthetic(b.name, opts...)
	if err != nil {
		return nil, fmt.Errorf("--data %s: %w", b.name, err)
	}
	if synthetic {
		fmt.Fprintf(b.stderr, "gpnb bench: %s's files are not on this machine: synthetic data of its shape (set GPNB_DATA to the UCI folder for the real data)\n", b.name)
	}
	return ds, nil
}

// header prints the data, the machine and the solvers' settings, and sets
// the methods the runs use.
func (b *bench) header() {
	n, d := b.ds.NTrain(), b.ds.D()
	if b.blockSize == 0 {
		b.blockSize = max(100, min(2000, n*2000/13500))
	}
	if b.batchSize == 0 {
		b.batchSize = max(100, min(1000, n*1000/13500))
	}
	b.methods = map[string]solvers.Method{"cg": solvers.CG{}, "ap": solvers.AP{BlockSize: b.blockSize}, "sgd": solvers.SGD{BatchSize: min(b.batchSize, n), Momentum: solvers.DefaultMomentum}}
	fmt.Fprintf(b.out, "gpnb bench: %s split %d, n=%d, d=%d, %d Adam steps per run; GOMAXPROCS %d, %s/%s; load %.2f\n",
		b.ds.Source, b.ds.Split, n, d, b.steps, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, repro.SystemLoadAverage())
	build := nb.Build()
	fmt.Fprint(b.out, build)
	if build.Backend.Device != nil {
		fmt.Fprint(b.out, " (gpnb bench times the CPU operator, not the GPU)")
	}
	fmt.Fprintln(b.out)
	for _, u := range build.Upgrades() {
		fmt.Fprintf(b.out, "  on this machine, %s\n", u)
	}
	fmt.Fprintf(b.out, "settings: Matérn-3/2, 16 probes, Adam lr 0.1, tolerances 0.01/0.1, AP block %d, SGD batch %d\n\n", b.blockSize, min(b.batchSize, n))
}

// train runs the paper's settings with solver (a CG of rank rank's
// preconditioner when rank > 0), cold or warm, at precision p.
func (b *bench) train(solver string, warm bool, p kernel.Precision, rank int) benchRun {
	cfg, err := gpnb.Paper("cg", b.name)
	if err != nil {
		return benchRun{err: err}
	}
	cfg.Solver, cfg.WarmStart, cfg.Operator.Precision, cfg.DropResidualTraces = b.methods[solver], warm, p, true
	if rank > 0 {
		cfg.Solver = solvers.CG{PrecondRank: rank}
	}
	// The CPU operator, built here so that its Work (the seconds spent
	// building K, in products and in the reduction) can be read.
	var op *kernel.Operator
	o, err := gpnb.NewOptimiser(b.ds, cfg, gpnb.WithBackend(func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
		o, err := kernel.NewOperator(x, k, cfg.Operator)
		if err == nil && op == nil {
			op = o
		}
		return o, err
	}))
	if err != nil {
		return benchRun{err: err}
	}
	if err := o.Run(b.ctx, b.steps); err != nil {
		return benchRun{err: err}
	}
	h := o.History()
	r := benchRun{iters: h.TotalSolverIterations(), steps: len(h), solverSec: h.TotalSolverSeconds(), totalSec: h.TotalSeconds(), llh: math.NaN()}
	if op != nil {
		r.work = op.Work()
	}
	if ev, err := o.Evaluate(); err == nil {
		r.llh = ev.TestLLH
	}
	return r
}

// warmCold prints warm start against cold start, per solver.
func (b *bench) warmCold() error {
	tw := tabwriter.NewWriter(b.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(b.out, "Warm start (+ws) against cold start (ratios cold/warm; iterations are machine-independent):\n")
	fmt.Fprintln(tw, "solver\titers cold\titers ws\titer ratio\tsolver s cold\tsolver s ws\tsolver-time ratio\ttotal-time ratio\tLLH cold\tLLH ws\t")
	var failed []string
	for _, s := range b.solvers {
		c, w := b.train(s, false, kernel.Float64, 0), b.train(s, true, kernel.Float64, 0)
		b.base[benchKey{s, false}], b.base[benchKey{s, true}] = c, w
		if b.ctx.Err() != nil {
			return fmt.Errorf("gpnb bench: interrupted")
		}
		if c.err != nil || w.err != nil {
			failed = append(failed, fmt.Sprintf("%s failed: %v", strings.ToUpper(s), errors.Join(c.err, w.err)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f×\t%.2f\t%.2f\t%.2f×\t%.2f×\t%.3f\t%.3f\t\n", strings.ToUpper(s), c.iters, w.iters,
			float64(c.iters)/float64(w.iters), c.solverSec, w.solverSec, c.solverSec/w.solverSec, c.totalSec/w.totalSec, c.llh, w.llh)
	}
	tw.Flush()
	for _, f := range failed {
		fmt.Fprintln(b.out, "  "+f)
	}
	return nil
}

// variant prints each of solvers, cold and warm, at precision p (with a
// preconditioner of rank rank > 0) against the float64 runs.
func (b *bench) variant(title string, solvers []string, p kernel.Precision, rank int) {
	fmt.Fprintf(b.out, "\n%s (ratios variant/baseline; LLH difference variant − baseline):\n", title)
	tw := tabwriter.NewWriter(b.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\tmode\titers\titer ratio\tsolver s\tsolver-time ratio\tLLH\tΔLLH\t")
	var failed []string
	for _, s := range solvers {
		for _, warm := range []bool{false, true} {
			base, v := b.base[benchKey{s, warm}], b.train(s, warm, p, rank)
			if p != kernel.Float64 {
				b.variants[benchKey{s, warm}] = v
			}
			mode := map[bool]string{false: "cold", true: "ws"}[warm]
			if v.err != nil || base.err != nil {
				failed = append(failed, fmt.Sprintf("%s %s failed: %v", strings.ToUpper(s), mode, errors.Join(v.err, base.err)))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f×\t%.2f\t%.2f×\t%.3f\t%+.4f\t\n", strings.ToUpper(s), mode, v.iters,
				float64(v.iters)/float64(base.iters), v.solverSec, v.solverSec/base.solverSec, v.llh, v.llh-base.llh)
		}
	}
	tw.Flush()
	for _, f := range failed {
		fmt.Fprintln(b.out, "  "+f)
	}
}

// stepSplit prints where a warm-started step's time goes, from the runs
// above.
func (b *bench) stepSplit() {
	fmt.Fprintf(b.out, "\nPer-step split of the warm-started runs (mean seconds per step; the operator's Work timers):\n")
	tw := tabwriter.NewWriter(b.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\tprecision\tstep s\tK build\tproducts\tsolver other\treduction\tother\tnon-solver share\t")
	for _, p := range []struct {
		name string
		runs map[benchKey]benchRun
	}{{"float64", b.base}, {b.prec.String(), b.variants}} {
		for _, s := range b.solvers {
			r, ok := p.runs[benchKey{s, true}]
			if !ok || r.err != nil || r.steps == 0 {
				continue
			}
			w, k := r.work, float64(r.steps)
			nonSolver := r.totalSec - r.solverSec
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f%%\t\n", strings.ToUpper(s), p.name, r.totalSec/k,
				w.BuildSeconds/k, w.ProductSeconds/k, (r.solverSec-w.ProductSeconds)/k, w.ReduceSeconds/k,
				(nonSolver-w.BuildSeconds-w.ReduceSeconds)/k, 100*nonSolver/r.totalSec)
		}
	}
	tw.Flush()
	fmt.Fprintln(b.out, "  (products: H·V and the partial products, inside the solver; solver other: the rest of the solver's time;\n   other: probes, Adam, records, outside both)")
}

// benchModes are the operators whose products gpnb bench times.
var benchModes = []struct {
	name string
	opt  kernel.Options
}{
	{"dense float64", kernel.Options{Mode: kernel.ModeDense}},
	{"dense float32", kernel.Options{Mode: kernel.ModeDense, Precision: kernel.Float32}},
	{"dense mixed", kernel.Options{Mode: kernel.ModeDense, Precision: kernel.Mixed}},
	{"matrix-free", kernel.Options{Mode: kernel.ModeMatrixFree}},
}

// operators prints the operators' H·V throughput against gemm of the same
// shape, and the kernel build and reduction, scalar against vectorised.
func (b *bench) operators(ds *data.Dataset) {
	on, d := ds.NTrain(), ds.D()
	fmt.Fprintf(b.out, "\nKernel operator H·V at n=%d, V %d×%d (effective rate: 2·n²·%d flops per product; best of several, timed in turns):\n", on, on, b.cols, b.cols)
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}
	v := benchRHS(on, b.cols)
	flops := 2 * float64(on) * float64(on) * float64(b.cols)
	secs, errs, gemm, square := b.productTimes(ds, k, v)
	fmt.Fprintf(b.out, "  gemm (blas64.Gemm, %d×%d · %d×%d, %s, %d threads): %.2f GFLOP/s\n", on, on, on, b.cols, kernel.BLASName(), runtime.GOMAXPROCS(0), gemm)
	fmt.Fprintf(b.out, "  square gemm (%d³, all %d cores: the machine's flop rate): %.2f GFLOP/s\n", squareGemmN, runtime.GOMAXPROCS(0), square)
	for i, m := range benchModes {
		if errs[i] != nil {
			fmt.Fprintf(b.out, "  %s: %v\n", m.name, errs[i])
			continue
		}
		rate := flops / secs[i] / 1e9
		fmt.Fprintf(b.out, "  %s: %.2f GFLOP/s (%.1f ms per product), %.0f%% of gemm", m.name, rate, secs[i]*1e3, 100*rate/gemm)
		switch {
		case m.opt.Mode == kernel.ModeMatrixFree:
			// Matrix-free, the work is mostly kernel evaluation: count it
			// (n² values, kernel.EvalFlops each) and rate it against the
			// compute-bound square gemm.
			ff := (flops + float64(on)*float64(on)*kernel.EvalFlops(d)) / secs[i] / 1e9
			fmt.Fprintf(b.out, "; counting kernel evaluation (%.0f flops per value): %.2f GFLOP/s, %.0f%% of square gemm", kernel.EvalFlops(d), ff, 100*ff/square)
		case i > 0 && errs[0] == nil:
			fmt.Fprintf(b.out, "; %.2f× as fast as dense float64", secs[0]/secs[i])
		}
		fmt.Fprintln(b.out)
	}
	b.buildReduce(ds, k, v, secs[0], errs[0])
}

// productTimes returns the best time of a product with each of benchModes
// (or the error building it) and the gemm rates of the product's shape and
// of squareGemmN³.
func (b *bench) productTimes(ds *data.Dataset, k kernel.Kernel, v *mat.Dense) (secs []float64, errs []error, gemm, square float64) {
	on := ds.NTrain()
	dst := mat.NewDense(on, b.cols, nil)
	// gemm is timed before and after the operators, and the faster rate
	// kept, so that a busy moment does not flatter the operator; the
	// operators are timed in turns, each keeping its fastest product, so
	// that a busy spell on a shared machine does not favour one.
	kernel.WithAllBLASThreads(func() { gemm = benchGemm(on, b.cols) })
	secs, errs = make([]float64, len(benchModes)), make([]error, len(benchModes))
	var products []func()
	var timed []int
	for i, m := range benchModes {
		op, err := kernel.NewOperator(ds.XTrain, k, m.opt)
		if errs[i] = err; err != nil {
			continue
		}
		products = append(products, func() { op.MulTo(dst, v) })
		timed = append(timed, i)
	}
	for j, t := range interleaved(5, products...) {
		secs[timed[j]] = t
	}
	products = nil
	runtime.GC()
	kernel.WithAllBLASThreads(func() {
		gemm = math.Max(gemm, benchGemm(on, b.cols))
		square = benchGemm(squareGemmN, squareGemmN)
	})
	return secs, errs, gemm, square
}

// buildReduce prints the times of building K and of the gradient
// reduction, scalar against vectorised, and the build in products of
// dense float64 (one takes product seconds, unless productErr).
func (b *bench) buildReduce(ds *data.Dataset, k kernel.Kernel, v *mat.Dense, product float64, productErr error) {
	on := ds.NTrain()
	fmt.Fprintf(b.out, "\nKernel build (SetKernel: n(n+1)/2 = %d kernel values) and gradient reduction (Reduce, %d columns) at n=%d, best of several, timed in turns:\n", on*(on+1)/2, b.cols, on)
	vec := kernel.VectorKernel() != ""
	if !vec {
		fmt.Fprintf(b.out, "  no vectorised kernel evaluation in this build (it needs cgo on amd64 and a CPU with AVX2): Go math.Exp only\n")
	}
	for _, m := range benchModes[:2] {
		bs, rs, err := buildReduceTimes(ds.XTrain, k, m.opt, v)
		if err != nil {
			fmt.Fprintf(b.out, "  %s: %v\n", m.name, err)
			continue
		}
		fmt.Fprintf(b.out, "  %s: build %.1f ms scalar", m.name, bs[0]*1e3)
		if vec {
			fmt.Fprintf(b.out, ", %.1f ms vectorised (%.2f×)", bs[1]*1e3, bs[0]/bs[1])
		}
		fmt.Fprintf(b.out, "; reduction %.1f ms scalar", rs[0]*1e3)
		if vec {
			fmt.Fprintf(b.out, ", %.1f ms vectorised (%.2f×)", rs[1]*1e3, rs[0]/rs[1])
		}
		if productErr == nil {
			fmt.Fprintf(b.out, "; the vectorised build costs %.1f dense float64 products", bs[len(bs)-1]/product)
		}
		fmt.Fprintln(b.out)
	}
}

// buildReduceTimes returns the best times of SetKernel and of Reduce(A, A)
// for A = v on the operator of k on x built with opt: index 0 with
// ScalarKernel (Go math.Exp), index 1 vectorised (where built in; else
// only index 0), timed in turns.
func buildReduceTimes(x *mat.Dense, k kernel.Kernel, opt kernel.Options, v *mat.Dense) (build, reduce []float64, err error) {
	variants := []bool{true}
	if kernel.VectorKernel() != "" {
		variants = append(variants, false)
	}
	grad := make([]float64, k.Hyper.Len())
	var builds, reduces []func()
	for _, scalar := range variants {
		opt.ScalarKernel = scalar
		op, err := kernel.NewOperator(x, k, opt)
		if err != nil {
			return nil, nil, err
		}
		builds = append(builds, func() { _ = op.SetKernel(k) })
		reduces = append(reduces, func() { op.Reduce(grad, v, v) })
	}
	build, reduce = interleaved(3, builds...), interleaved(3, reduces...)
	builds, reduces = nil, nil
	runtime.GC()
	return build, reduce, nil
}

// interleaved runs fs in turns, rounds times (at least; more while a round
// takes under 0.1 s, up to 50), and returns the fastest time of each in
// seconds: on a shared machine alternating keeps a busy spell from
// favouring one of them.
func interleaved(rounds int, fs ...func()) []float64 {
	best := make([]float64, len(fs))
	for i := range best {
		best[i] = math.Inf(1)
	}
	start := time.Now()
	for r := 0; r < 50 && (r < rounds || time.Since(start) < 100*time.Millisecond*time.Duration(r)); r++ {
		for i, f := range fs {
			t := time.Now()
			f()
			best[i] = math.Min(best[i], time.Since(t).Seconds())
		}
	}
	return best
}

// operatorRate times H·V (dst = H·v) with the operator of k on x built with
// opt, and returns its effective rate (2·n²·columns flops per product) in
// GFLOP/s and its best time in seconds.
func operatorRate(x *mat.Dense, k kernel.Kernel, opt kernel.Options, v, dst *mat.Dense) (gflops, sec float64, err error) {
	op, err := kernel.NewOperator(x, k, opt)
	if err != nil {
		return 0, 0, err
	}
	n, cols := x.RawMatrix().Rows, v.RawMatrix().Cols
	sec = bestTime(func() { op.MulTo(dst, v) })
	return 2 * float64(n) * float64(n) * float64(cols) / sec / 1e9, sec, nil
}

// machineRate is gpnb reproduce's Runner.MachineRate: the dense float64 H·V
// rate of gpnb bench's operator section (Matérn-3/2, 17 columns) on
// synthetic data of n = machineRateN, d = 8, measured in about half a
// second. Recorded with every job segment, it says how fast the machine
// that ran those steps was.
func machineRate() float64 {
	ds, err := data.Synthetic(machineRateN, 8, 1)
	if err != nil {
		return math.NaN()
	}
	n, d := ds.XTrain.RawMatrix().Rows, ds.XTrain.RawMatrix().Cols
	v := benchRHS(n, 17)
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}
	g, _, err := operatorRate(ds.XTrain, k, kernel.Options{Mode: kernel.ModeDense}, v, mat.NewDense(n, 17, nil))
	if err != nil {
		return math.NaN()
	}
	return g
}

// benchRHS is the n×cols right-hand side the operator timings multiply:
// sin(i) over the entries in row-major order, fixed so runs compare.
func benchRHS(n, cols int) *mat.Dense {
	v := mat.NewDense(n, cols, nil)
	for i := range v.RawMatrix().Data {
		v.RawMatrix().Data[i] = math.Sin(float64(i))
	}
	return v
}

// machineRateN is the problem size of machineRate: a 3000×3000 float64 kernel
// matrix (72 MB), past every cache, as the full-size runs' are.
const machineRateN = 3000

// squareGemmN is the size of the square gemm (benchGemm(n, n)) that stands
// for the machine's flop rate.
const squareGemmN = 1500

// benchGemm returns the GFLOP/s of C = A·B for A n×n and B n×m with the
// registered blas64 implementation.
func benchGemm(n, m int) float64 {
	a := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
	for i := range a.Data {
		a.Data[i] = 1 / float64(1+i%97)
	}
	b := blas64.General{Rows: n, Cols: m, Stride: m, Data: make([]float64, n*m)}
	for i := range b.Data {
		b.Data[i] = math.Cos(float64(i))
	}
	c := blas64.General{Rows: n, Cols: m, Stride: m, Data: make([]float64, n*m)}
	sec := bestTime(func() { blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c) })
	return 2 * float64(n) * float64(n) * float64(m) / sec / 1e9
}

// bestTime runs f at least 3 times and for at least 0.3 s (at most 50
// times) and returns its fastest time in seconds.
func bestTime(f func()) float64 {
	best := math.Inf(1)
	start := time.Now()
	for i := 0; i < 50 && (i < 3 || time.Since(start) < 300*time.Millisecond); i++ {
		t := time.Now()
		f()
		best = math.Min(best, time.Since(t).Seconds())
	}
	return best
}

func goTotalMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return -1
	}
	return int64(s[0].Value.Uint64())
}

func fmtBytes(b int64) string {
	if b < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
