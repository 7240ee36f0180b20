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

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", "[--data pol] [--subset 3000] [--steps 15] [--solvers cg,ap,sgd] [--precision float32|mixed] [--precond-rank K] [--operator-subset N]", stderr)
	dataName := fs.String("data", "pol", "dataset: a UCI name or synthetic-N-D-SEED; a UCI set whose files are absent falls back to synthetic data of the same d")
	split := fs.Int("split", 0, "UCI split")
	subset := fs.Int("subset", 3000, "training points (0 = all)")
	steps := fs.Int("steps", 15, "Adam steps per run")
	solverStr := fs.String("solvers", "cg,ap,sgd", "solvers to compare cold and warm")
	// --precision float32 (or mixed) also trains every solver with that
	// operator and prints its ratios to float64 (the operator figures
	// compare all three).
	var rf runFlags
	rf.register(fs, stderr, targetOf(gpnb.Config{}), only("precision"))
	precond := fs.Int("precond-rank", 0, "also run CG with a pivoted-Cholesky preconditioner of this rank and print its ratios to plain CG")
	blockSize := fs.Int("block-size", 0, "AP block size (0 = the paper's 2000 scaled to the subset: n·2000/13500, at least 100)")
	batchSize := fs.Int("batch-size", 0, "SGD mini-batch size (0 = the paper's 1000 scaled to the subset: n·1000/13500, at least 100)")
	cols := fs.Int("columns", 17, "columns of V in the operator benchmark (1 mean + 16 probes)")
	opSubset := fs.Int("operator-subset", -1, "training points of the operator benchmark (-1 = as --subset, 0 = all): e.g. --solvers cg --steps 1 --operator-subset 0 for the full-size operator figures")
	dataDir := fs.String("data-dir", "", "directory of the UCI files (overrides $GPNB_DATA)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *steps <= 0 || *subset < 0 || *cols <= 0 || *precond < 0 || *opSubset < -1 {
		return fmt.Errorf("--steps, --columns must be > 0, --subset, --precond-rank ≥ 0 and --operator-subset ≥ -1 (got %d, %d, %d, %d, %d)", *steps, *cols, *subset, *precond, *opSubset)
	}
	prec := rf.t.Config.Operator.Precision
	solverList, err := repro.ParseSolvers(*solverStr)
	if err != nil {
		return fmt.Errorf("--solvers: %w", err)
	}
	spec, err := repro.ParseDataset(*dataName)
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tr := repro.GPTrainer{DataDir: *dataDir}
	base, err := repro.PaperJob(*dataName, *split, "cg", false, *steps)
	if err != nil {
		return err
	}
	base.Subset = *subset
	// load reads j's dataset, or synthetic data of the same shape when a
	// UCI set's files are absent (j's Dataset and Subset then say so).
	load := func(j *repro.Job) (*data.Dataset, error) {
		ds, err := tr.Dataset(*j)
		if err != nil && spec.UCI && (errors.Is(err, data.ErrDownload) || errors.Is(err, os.ErrNotExist)) {
			n := j.Subset
			if n == 0 {
				n = repro.ApproxTrainSize(spec, 0)
			}
			fmt.Fprintf(stderr, "gpnb bench: %s is not available (%v);\n  using synthetic-%d-%d-0 instead (set GPNB_DATA to the UCI directory for the real data)\n", spec.Name, err, n, spec.D)
			j.Dataset, j.Subset = data.SyntheticName(n, spec.D, 0), 0
			ds, err = tr.Dataset(*j)
		}
		return ds, err
	}
	ds, err := load(&base)
	if err != nil {
		return err
	}
	n, d := ds.NTrain(), ds.D()
	if *blockSize == 0 {
		*blockSize = max(100, min(2000, n*2000/13500))
	}
	if *batchSize == 0 {
		*batchSize = max(100, min(1000, n*1000/13500))
	}
	methods := map[string]solvers.Method{"cg": solvers.CG{}, "ap": solvers.AP{BlockSize: *blockSize}, "sgd": solvers.SGD{BatchSize: min(*batchSize, n), Momentum: solvers.DefaultMomentum}}

	vec := kernel.VectorKernel()
	if vec == "" {
		vec = "none (Go math.Exp)"
	}
	if prec == kernel.Mixed {
		mk := kernel.MixedKernel()
		if mk == "" {
			mk = "none (float64 gemm on converted tiles: slower than float64)"
		}
		vec += "; mixed-precision product " + mk
	}
	fmt.Fprintf(stdout, "gpnb bench: %s split %d, n=%d, d=%d, %d Adam steps per run; BLAS %s, vectorised kernel %s, GOMAXPROCS %d, %s/%s; load %s\n",
		base.Dataset, base.Split, n, d, *steps, kernel.BLASName(), vec, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, loadAvg())
	fmt.Fprintf(stdout, "settings: Matérn-3/2, 16 probes, Adam lr 0.1, tolerances 0.01/0.1, AP block %d, SGD batch %d\n\n", *blockSize, min(*batchSize, n))

	train := func(solver string, warm bool, p kernel.Precision, rank int) benchRun {
		j := base
		m := methods[solver]
		if rank > 0 {
			m = solvers.CG{PrecondRank: rank}
		}
		j.Config.Solver, j.Config.WarmStart = m, warm
		j.Config.Operator.Precision = p
		cfg := tr.Config(j)
		// The CPU operator, built here so that its Work (the seconds spent
		// building K, in products and in the reduction) can be read.
		var op *kernel.Operator
		o, err := gpnb.NewOptimiser(ds, cfg, gpnb.WithBackend(func(x *mat.Dense, k kernel.Kernel) (kernel.GramOperator, error) {
			o, err := kernel.NewOperator(x, k, cfg.Operator)
			if err == nil && op == nil {
				op = o
			}
			return o, err
		}))
		if err != nil {
			return benchRun{err: err}
		}
		if err := o.Run(ctx, *steps); err != nil {
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

	// 1. Warm start against cold start, per solver.
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(stdout, "Warm start (+ws) against cold start (ratios cold/warm; iterations are machine-independent):\n")
	fmt.Fprintln(tw, "solver\titers cold\titers ws\titer ratio\tsolver s cold\tsolver s ws\tsolver-time ratio\ttotal-time ratio\tLLH cold\tLLH ws\t")
	base64 := map[[2]any]benchRun{}
	var failed []string
	for _, s := range solverList {
		if s == repro.SolverCholesky {
			continue
		}
		c, w := train(s, false, kernel.Float64, 0), train(s, true, kernel.Float64, 0)
		base64[[2]any{s, false}], base64[[2]any{s, true}] = c, w
		if ctx.Err() != nil {
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
		fmt.Fprintln(stdout, "  "+f)
	}

	variants := map[[2]any]benchRun{}
	variant := func(title string, solvers []string, p kernel.Precision, rank int) {
		fmt.Fprintf(stdout, "\n%s (ratios variant/baseline; LLH difference variant − baseline):\n", title)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "solver\tmode\titers\titer ratio\tsolver s\tsolver-time ratio\tLLH\tΔLLH\t")
		var failed []string
		for _, s := range solvers {
			for _, warm := range []bool{false, true} {
				b := base64[[2]any{s, warm}]
				v := train(s, warm, p, rank)
				if p != kernel.Float64 {
					variants[[2]any{s, warm}] = v
				}
				mode := map[bool]string{false: "cold", true: "ws"}[warm]
				if v.err != nil || b.err != nil {
					failed = append(failed, fmt.Sprintf("%s %s failed: %v", strings.ToUpper(s), mode, errors.Join(v.err, b.err)))
					continue
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f×\t%.2f\t%.2f×\t%.3f\t%+.4f\t\n", strings.ToUpper(s), mode, v.iters,
					float64(v.iters)/float64(b.iters), v.solverSec, v.solverSec/b.solverSec, v.llh, v.llh-b.llh)
			}
		}
		tw.Flush()
		for _, f := range failed {
			fmt.Fprintln(stdout, "  "+f)
		}
	}
	var iterative []string
	for _, s := range solverList {
		if s != repro.SolverCholesky {
			iterative = append(iterative, s)
		}
	}
	if prec != kernel.Float64 {
		variant(prec.String()+" kernel operator against float64", iterative, prec, 0)
	}
	if *precond > 0 {
		if _, ok := base64[[2]any{repro.SolverCG, false}]; !ok {
			base64[[2]any{repro.SolverCG, false}], base64[[2]any{repro.SolverCG, true}] = train("cg", false, kernel.Float64, 0), train("cg", true, kernel.Float64, 0)
		}
		variant(fmt.Sprintf("CG with a rank-%d pivoted-Cholesky preconditioner against plain CG", *precond), []string{"cg"}, kernel.Float64, *precond)
	}

	// 2. Where a warm-started step's time goes, from the runs above.
	fmt.Fprintf(stdout, "\nPer-step split of the warm-started runs (mean seconds per step; the operator's Work timers):\n")
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "solver\tprecision\tstep s\tK build\tproducts\tsolver other\treduction\tother\tnon-solver share\t")
	for _, p := range []struct {
		name string
		runs map[[2]any]benchRun
	}{{"float64", base64}, {prec.String(), variants}} {
		for _, s := range iterative {
			r, ok := p.runs[[2]any{s, true}]
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
	fmt.Fprintln(stdout, "  (products: H·V and the partial products, inside the solver; solver other: the rest of the solver's time;\n   other: probes, Adam, records, outside both)")

	// 3. Operator throughput against gemm of the same shape, measured now.
	opDS := ds
	if *opSubset >= 0 && *opSubset != *subset {
		j := base
		j.Subset = *opSubset
		if opDS, err = load(&j); err != nil {
			return err
		}
	}
	on := opDS.NTrain()
	fmt.Fprintf(stdout, "\nKernel operator H·V at n=%d, V %d×%d (effective rate: 2·n²·%d flops per product; best of several, timed in turns):\n", on, on, *cols, *cols)
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.DefaultHyper(d)}
	v := benchRHS(on, *cols)
	dst := mat.NewDense(on, *cols, nil)
	flops := 2 * float64(on) * float64(on) * float64(*cols)
	// gemm is timed before and after the operators, and the faster rate
	// kept, so that a busy moment does not flatter the operator.
	var gemm float64
	kernel.WithAllBLASThreads(func() { gemm = benchGemm(on, *cols) })
	modes := []struct {
		name string
		opt  kernel.Options
	}{
		{"dense float64", kernel.Options{Mode: kernel.ModeDense}},
		{"dense float32", kernel.Options{Mode: kernel.ModeDense, Precision: kernel.Float32}},
		{"dense mixed", kernel.Options{Mode: kernel.ModeDense, Precision: kernel.Mixed}},
		{"matrix-free", kernel.Options{Mode: kernel.ModeMatrixFree}},
	}
	// The operators are timed in turns, each keeping its fastest
	// product, so that a busy spell on a shared machine does not favour one.
	rates := make([]float64, len(modes))
	secs := make([]float64, len(modes))
	errs := make([]error, len(modes))
	var products []func()
	var timed []int
	for i, m := range modes {
		op, err := kernel.NewOperator(opDS.XTrain, k, m.opt)
		if errs[i] = err; err != nil {
			continue
		}
		products = append(products, func() { op.MulTo(dst, v) })
		timed = append(timed, i)
	}
	for j, t := range interleaved(5, products...) {
		secs[timed[j]], rates[timed[j]] = t, flops/t/1e9
	}
	products = nil
	runtime.GC()
	var square float64
	kernel.WithAllBLASThreads(func() {
		gemm = math.Max(gemm, benchGemm(on, *cols))
		square = benchGemm(squareGemmN, squareGemmN)
	})
	fmt.Fprintf(stdout, "  gemm (blas64.Gemm, %d×%d · %d×%d, %s, %d threads): %.2f GFLOP/s\n", on, on, on, *cols, kernel.BLASName(), runtime.GOMAXPROCS(0), gemm)
	fmt.Fprintf(stdout, "  square gemm (%d³, all %d cores: the machine's flop rate): %.2f GFLOP/s\n", squareGemmN, runtime.GOMAXPROCS(0), square)
	for i, m := range modes {
		if errs[i] != nil {
			fmt.Fprintf(stdout, "  %s: %v\n", m.name, errs[i])
			continue
		}
		fmt.Fprintf(stdout, "  %s: %.2f GFLOP/s (%.1f ms per product), %.0f%% of gemm", m.name, rates[i], secs[i]*1e3, 100*rates[i]/gemm)
		switch {
		case m.opt.Mode == kernel.ModeMatrixFree:
			// Matrix-free, the work is mostly kernel evaluation: count it
			// (n² values, kernel.EvalFlops each) and rate it against the
			// compute-bound square gemm.
			ff := (flops + float64(on)*float64(on)*kernel.EvalFlops(d)) / secs[i] / 1e9
			fmt.Fprintf(stdout, "; counting kernel evaluation (%.0f flops per value): %.2f GFLOP/s, %.0f%% of square gemm", kernel.EvalFlops(d), ff, 100*ff/square)
		case i > 0 && errs[0] == nil:
			fmt.Fprintf(stdout, "; %.2f× as fast as dense float64", secs[0]/secs[i])
		}
		fmt.Fprintln(stdout)
	}

	// 4. Building K and the gradient reduction, scalar against vectorised.
	fmt.Fprintf(stdout, "\nKernel build (SetKernel: n(n+1)/2 = %d kernel values) and gradient reduction (Reduce, %d columns) at n=%d, best of several, timed in turns:\n", on*(on+1)/2, *cols, on)
	if kernel.VectorKernel() == "" {
		fmt.Fprintf(stdout, "  no vectorised kernel evaluation in this build (it needs cgo on amd64 and a CPU with AVX2): Go math.Exp only\n")
	}
	for _, m := range modes[:2] {
		bs, rs, err := buildReduceTimes(opDS.XTrain, k, m.opt, v)
		if err != nil {
			fmt.Fprintf(stdout, "  %s: %v\n", m.name, err)
			continue
		}
		fmt.Fprintf(stdout, "  %s: build %.1f ms scalar", m.name, bs[0]*1e3)
		if kernel.VectorKernel() != "" {
			fmt.Fprintf(stdout, ", %.1f ms vectorised (%.2f×)", bs[1]*1e3, bs[0]/bs[1])
		}
		fmt.Fprintf(stdout, "; reduction %.1f ms scalar", rs[0]*1e3)
		if kernel.VectorKernel() != "" {
			fmt.Fprintf(stdout, ", %.1f ms vectorised (%.2f×)", rs[1]*1e3, rs[0]/rs[1])
		}
		if errs[0] == nil {
			fmt.Fprintf(stdout, "; the vectorised build costs %.1f dense float64 products", bs[len(bs)-1]/secs[0])
		}
		fmt.Fprintln(stdout)
	}

	// 5. Memory.
	fmt.Fprintf(stdout, "\nMemory: peak resident set %s (getrusage maxrss); Go runtime memory at the end %s (runtime/metrics /memory/classes/total:bytes)\n",
		fmtBytes(maxRSS()), fmtBytes(goTotalMemory()))
	fmt.Fprintf(stdout, "Load at the end: %s (/proc/loadavg: 1, 5, 15 minutes; the machine's other work slows every figure above)\n", loadAvg())
	return nil
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

// loadAvg returns the first three fields of /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
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
