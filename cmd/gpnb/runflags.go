package main

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/gpnb/repro"
	"github.com/gpnb/gpnb/solvers"
)

// runTarget is what the run flags set: the run's configuration (gpnb.Config)
// but for its solver, the parameters of each solver method, the name of the
// chosen one, and SGD's learning rate as given (auto, paper, a number or
// raw:N).
type runTarget struct {
	Config gpnb.Config
	CG     solvers.CG
	AP     solvers.AP
	SGD    solvers.SGD
	Solver string // cg, ap, sgd, or cholesky (the exact gradient)
	// SGDRate is --sgd-lr when it names a rule, known only once the data
	// are (see runFlags.config): sgdAuto (the paper's rate where the run
	// is the paper's, gpnb.PaperSGDRate) or sgdPaper (the paper's rate for
	// every dataset it names); "" when the rate is in SGD.
	SGDRate string
	// Lengthscales is --lengthscales as given: one value for every input
	// dimension, or one per dimension (known only once the data are).
	Lengthscales []float64
}

// runFlagNames returns the names of runFlagTable in its order: the
// solvers' parameters (methodFlags), or all other flags.
func runFlagNames(methods bool) []string {
	var names []string
	for _, f := range runFlagTable {
		isMethod := false
		for _, fl := range methodFlags {
			isMethod = isMethod || slices.Contains(fl, f.name)
		}
		if isMethod == methods {
			names = append(names, f.name)
		}
	}
	return names
}

// runFlag is one flag of the run vocabulary: the fields of runTarget it sets
// (paths) and its flag.Value over a target.
type runFlag struct {
	name, usage string
	paths       []string
	value       func(t *runTarget) flag.Value
}

// runFlagTable is the one flag vocabulary of train, solve, demo, bench and
// reproduce: every field of gpnb.Config (but its solver, which --solver and
// the method flags set) and every parameter of every solver method has
// exactly one flag here. TestRunFlagsCoverEveryField checks that by
// reflection, so a field added later cannot be forgotten.
var runFlagTable = []runFlag{
	{"kernel", "matern12, matern32, matern52 or rbf", []string{"Config.Kernel"}, textField("Config.Kernel")},
	{"noise", "initial noise scale σ", []string{"Config.Init.Noise"}, scalarField("Config.Init.Noise")},
	{"signal", "initial signal scale s", []string{"Config.Init.Signal"}, scalarField("Config.Init.Signal")},
	{"lengthscales", "initial ℓ: one or d, by commas", []string{"Config.Init.Lengthscales"}, floatsField("Lengthscales")},
	{"solver", "cg, ap, sgd or cholesky (exact gradient)", nil, scalarField("Solver")},
	{"estimator", "hutchinson, pathwise or exact", []string{"Config.Estimator"}, textField("Config.Estimator")},
	{"features", fmt.Sprintf("pathwise: random features (0: %d)", kernel.DefaultFeatures), []string{"Config.Features"}, scalarField("Config.Features")},
	{"warm-start", "start each solve at the last one", []string{"Config.WarmStart"}, scalarField("Config.WarmStart")},
	{"fixed-probes", "auto (as --warm-start), fixed, resampled", []string{"Config.FixedProbes"}, textField("Config.FixedProbes")},
	{"probes", "probe vectors (pathwise: samples)", []string{"Config.Probes"}, positiveField("Config.Probes")},
	{"probe-dist", "or rademacher", []string{"Config.ProbeDist"}, textField("Config.ProbeDist")},
	{"lr", "Adam's learning rate", []string{"Config.LearningRate"}, positiveField("Config.LearningRate")},
	{"param", "Adam's θ: softplus (paper's) or log", []string{"Config.Param"}, textField("Config.Param")},
	{"noise-min", "floor on σ (0: none)", []string{"Config.NoiseMin"}, scalarField("Config.NoiseMin")},
	{"seed", "seed of the probes and SGD's batches", []string{"Config.Seed"}, scalarField("Config.Seed")},
	{"until", "steps, or converged (--steps: a cap)", []string{"Config.Until"}, textField("Config.Until")},
	{"converged-tol", fmt.Sprintf("L/n rises less a step (0: %g)", gpnb.DefaultConvergedTol), []string{"Config.ConvergedTol"}, scalarField("Config.ConvergedTol")},
	{"converged-steps", fmt.Sprintf("window in steps (0: %d)", gpnb.DefaultConvergedSteps), []string{"Config.ConvergedSteps"}, scalarField("Config.ConvergedSteps")},
	{"converged-grad", fmt.Sprintf("gradient below (0: %g)", gpnb.DefaultConvergedGrad), []string{"Config.ConvergedGrad"}, scalarField("Config.ConvergedGrad")},
	{"tol-mean", "tolerance of H v = y", []string{"Config.Settings.RelTolMean"}, positiveField("Config.Settings.RelTolMean")},
	{"tol-probes", "probe systems' tolerance", []string{"Config.Settings.RelTolProbes"}, positiveField("Config.Settings.RelTolProbes")},
	{"max-iterations", "cap a step (0: cg 1e3, ap 2e4, sgd 5e4)", []string{"Config.Settings.MaxIterations"}, scalarField("Config.Settings.MaxIterations")},
	{"max-epochs", "cap in passes over H (0: off)", []string{"Config.Settings.MaxEpochs"}, scalarField("Config.Settings.MaxEpochs")},
	{"rules", "or paper-text; a rule flag: one rule", []string{"Config.Rules"}, textField("Config.Rules")},
	{"probe-tolerance", "or each: probe by probe", []string{"Config.Settings.ProbeRule"}, textField("Config.Settings.ProbeRule")},
	{"freeze", "or column: a converged system stops", []string{"Config.Settings.Freeze"}, textField("Config.Settings.Freeze")},
	{"budget", "a solve's passes over H (0: no cap)", []string{"Config.Settings.Budget"}, scalarField("Config.Settings.Budget")},
	{"operator", "or dense, matrixfree (auto: by budget)", []string{"Config.Operator.Mode"}, textField("Config.Operator.Mode")},
	{"memory-budget", "dense K's, 16GiB (auto: RAM/2)", []string{"Config.Operator.MemoryBudget"}, bytesField("Config.Operator.MemoryBudget")},
	{"precision", "float32, or mixed (float32 K)", []string{"Config.Operator.Precision"}, textField("Config.Operator.Precision")},
	{"scalar-kernel", "portable kernel code", []string{"Config.Operator.ScalarKernel"}, scalarField("Config.Operator.ScalarKernel")},
	{"workers", "operator goroutines (0: GOMAXPROCS)", []string{"Config.Operator.Workers"}, scalarField("Config.Operator.Workers")},
	{"track-mll", "the exact MLL each step", []string{"Config.TrackExactMLL"}, scalarField("Config.TrackExactMLL")},
	{"residuals", "keep residual traces", []string{"Config.DropResidualTraces"}, notField("Config.DropResidualTraces")},
	{"checkpoint", "save to `FILE` each step, on interrupt", []string{"Config.CheckpointPath"}, scalarField("Config.CheckpointPath")},
	{"max-exact-n", fmt.Sprintf("largest n for Cholesky (0: %d)", gpnb.DefaultMaxExactN), []string{"Config.MaxExactN"}, scalarField("Config.MaxExactN")},
	{"eval-tol", fmt.Sprintf("tests' CG tolerance there (0: %g)", gpnb.DefaultEvalRelTol), []string{"Config.EvalRelTol"}, scalarField("Config.EvalRelTol")},
	{"exact-up-to", "L-BFGS + Cholesky up to n (0: off)", []string{"Config.ExactUpTo"}, scalarField("Config.ExactUpTo")},
	{"exact-work-up-to", "or up to n·(d+2) (0: off)", []string{"Config.ExactWorkUpTo"}, scalarField("Config.ExactWorkUpTo")},
	{"finish-exact-up-to", "then as σ nears its floor, up to n", []string{"Config.FinishExactUpTo"}, scalarField("Config.FinishExactUpTo")},
	{"finish-converged-up-to", "or once Adam converged (0: all)", []string{"Config.FinishConvergedUpTo"}, scalarField("Config.FinishConvergedUpTo")},
	{"exact-subset", "subset: max(N, n/4, 100d) points", []string{"Config.ExactSubset"}, scalarField("Config.ExactSubset")},
	{"exact-starts", "starts up to --exact-up-to", []string{"Config.ExactStarts"}, scalarField("Config.ExactStarts")},

	{"precond-rank", "CG: preconditioner rank (0: none), or auto", []string{"CG.PrecondRank"}, precondRank},
	{"precond-noise", "CG: its σ² (0: the operator's)", []string{"CG.PrecondNoise"}, scalarField("CG.PrecondNoise")},
	{"precond-diagonal", "CG: add diag(K − LLᵀ) to it", []string{"CG.PrecondDiagonal"}, scalarField("CG.PrecondDiagonal")},
	{"block-size", "AP: block size (at most n)", []string{"AP.BlockSize"}, scalarField("AP.BlockSize")},
	{"ap-pick", "AP: or unconverged: who picks blocks", []string{"AP.Pick"}, textField("AP.Pick")},
	{"batch-size", "SGD: batch size (at most n)", []string{"SGD.BatchSize"}, scalarField("SGD.BatchSize")},
	{"sgd-lr", "SGD: auto, paper, a rate, or raw:N", []string{"SGD.LearningRate", "SGD.RawLearningRate"}, sgdRate},
	{"momentum", "SGD: momentum (< 0: none)", []string{"SGD.Momentum"}, scalarField("SGD.Momentum")},
	{"sgd-seed", "SGD: batches' seed (default: --seed)", []string{"SGD.Seed"}, sgdSeed},
	{"sgd-residual-start", "SGD: or true: b − H·v0", []string{"SGD.ResidualStart"}, textField("SGD.ResidualStart")},
	{"sgd-verify", "SGD: confirm the stop with b − H·v", []string{"SGD.NoVerify"}, notField("SGD.NoVerify")},
}

// ruleFlags are the flags of the stopping rules that --rules names
// together (solvers.Rules).
var ruleFlags = []string{"probe-tolerance", "freeze", "ap-pick", "sgd-residual-start", "sgd-verify"}

// applyRules sets the rule fields of t whose flags were not given to the
// values of the rule set --rules names, when --rules was given (a new run
// starts from the default set's values, see defaultTarget; a resumed one
// keeps its own), and leaves Config.Rules to name the set the fields then
// hold (gpnb.Config.ApplyRules), so that an explicit rule flag changes its
// rule alone.
func (r *runFlags) applyRules(t *runTarget) {
	if r.given("rules") {
		set := t.Config.Rules
		s, ap := set.Apply(solvers.Settings{}, solvers.AP{})
		_, m := set.Apply(solvers.Settings{}, solvers.SGD{})
		sgd := m.(solvers.SGD)
		for _, name := range ruleFlags {
			if r.given(name) {
				continue
			}
			switch name {
			case "probe-tolerance":
				t.Config.Settings.ProbeRule = s.ProbeRule
			case "freeze":
				t.Config.Settings.Freeze = s.Freeze
			case "ap-pick":
				t.AP.Pick = ap.(solvers.AP).Pick
			case "sgd-residual-start":
				t.SGD.ResidualStart = sgd.ResidualStart
			case "sgd-verify":
				t.SGD.NoVerify = sgd.NoVerify
			}
		}
	}
	t.Config.Rules = solvers.RulesPaperText // the fields say it all now
}

// runFlags registers the run flags on a flag set and turns what was parsed
// into a gpnb.Config.
type runFlags struct {
	t      runTarget
	fs     *flag.FlagSet
	stderr io.Writer
	// resumed: t is a checkpoint's configuration (see onto), whose SGD
	// seed stands as it is.
	resumed bool
}

// register adds the flags of runFlagTable that keep selects (nil: all) to
// fs, with def's values as defaults (targetOf and defaultTarget make one).
func (r *runFlags) register(fs *flag.FlagSet, stderr io.Writer, def runTarget, keep func(name string) bool) {
	r.fs, r.stderr, r.t = fs, stderr, def
	if keep == nil {
		keep = func(string) bool { return true }
	}
	for _, f := range runFlagTable {
		if keep(f.name) {
			fs.Var(f.value(&r.t), f.name, f.usage)
		}
	}
}

// applyPreset makes the named preset (gpnb.Preset, for the chosen solver
// and the dataset) the defaults under the flags given: every flag that was
// not given on the command line and whose value in the preset differs from
// the paper's settings takes the preset's value, so a preset changes
// defaults, never an explicit flag. "" applies none.
func (r *runFlags) applyPreset(name, dataset string) error {
	if name == "" {
		return nil
	}
	c, err := gpnb.Preset(name, r.t.Solver, dataset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	paper, err := gpnb.Paper(r.t.Solver, dataset)
	if err != nil {
		return fmt.Errorf("--preset: %w", err)
	}
	// Both with their stopping rules written out, so that a preset's rules
	// reach the rule flags.
	t, tp := targetOf(c.ApplyRules()), targetOf(paper.ApplyRules())
	for _, f := range runFlagTable {
		if r.given(f.name) || r.fs.Lookup(f.name) == nil {
			continue
		}
		v := f.value(&t).String()
		if v == f.value(&tp).String() {
			continue
		}
		if err := f.value(&r.t).Set(v); err != nil {
			return fmt.Errorf("--preset %s: --%s: %w", name, f.name, err)
		}
	}
	return nil
}

// presetUsage is the help of --preset.
func presetUsage() string {
	return strings.Join(gpnb.PresetNames, " or ") + ": other flags' defaults"
}

// defaultTarget is the paper's settings (gpnb.Paper) with every method's
// parameters explicit, the default stopping rules' fields written out and
// SGD's learning rate auto: the defaults of gpnb train and gpnb reproduce.
func defaultTarget() runTarget {
	c, _ := gpnb.Paper("cg", "")
	ap, _ := gpnb.Paper("ap", "")
	sgd, _ := gpnb.Paper("sgd", "")
	c.Settings, _ = c.Rules.Apply(c.Settings, nil)
	_, apm := c.Rules.Apply(c.Settings, ap.Solver)
	_, sgdm := c.Rules.Apply(c.Settings, sgd.Solver)
	t := targetOf(c)
	t.AP, t.SGD, t.SGDRate = apm.(solvers.AP), sgdm.(solvers.SGD), sgdAuto
	t.SGD.RawLearningRate = 0 // auto decides
	return t
}

// onto returns the configuration of base with the flags given on the
// command line applied to it (and only those): how `gpnb train --resume`
// takes a checkpoint's configuration, so a resumed run needs no flags
// repeated and a flag that would change a fixed field is refused.
func (r *runFlags) onto(base gpnb.Config, dataset string, n, d int) (gpnb.Config, error) {
	r2 := &runFlags{t: targetOf(base), fs: r.fs, stderr: r.stderr, resumed: true}
	var err error
	r.fs.Visit(func(f *flag.Flag) {
		for _, rf := range runFlagTable {
			if rf.name == f.Name && err == nil {
				if e := rf.value(&r2.t).Set(f.Value.String()); e != nil {
					err = fmt.Errorf("--%s: %w", f.Name, e)
				}
			}
		}
	})
	if err != nil {
		return base, err
	}
	return r2.config(dataset, n, d)
}

// except selects every flag but names; only selects names.
func except(names ...string) func(string) bool {
	return func(n string) bool { return !slices.Contains(names, n) }
}

func only(names ...string) func(string) bool {
	return func(n string) bool { return slices.Contains(names, n) }
}

// targetOf returns the target whose flags describe c.
func targetOf(c gpnb.Config) runTarget {
	t := runTarget{Config: c, Solver: solvers.CG{}.Name(), Lengthscales: c.Init.Lengthscales}
	switch m := solvers.Canonical(c.Solver).(type) {
	case solvers.CG:
		t.CG = m
	case solvers.AP:
		t.AP, t.Solver = m, m.Name()
	case solvers.SGD:
		t.SGD, t.Solver = m, m.Name()
	case solvers.Cholesky:
		t.Solver = m.Name()
	}
	if c.Estimator == gpnb.ExactGradient {
		t.Solver = solvers.Cholesky{}.Name()
	}
	if t.Lengthscales == nil {
		t.Lengthscales = []float64{1}
	}
	if t.Config.Init.Noise == 0 && t.Config.Init.Signal == 0 {
		t.Config.Init.Noise, t.Config.Init.Signal = 1, 1
	}
	return t
}

// given reports whether the flag name was set on the command line.
func (r *runFlags) given(name string) bool {
	set := false
	r.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// methodFlags lists, per solver, the flags of its parameters.
var methodFlags = map[string][]string{
	"cg":  {"precond-rank", "precond-noise", "precond-diagonal"},
	"ap":  {"block-size", "ap-pick"},
	"sgd": {"batch-size", "sgd-lr", "momentum", "sgd-seed", "sgd-residual-start", "sgd-verify"},
}

// config returns the configuration the flags describe for data named
// dataset with n training points and d input dimensions (n and the name
// for --sgd-lr auto and paper). A method flag given for another solver than
// --solver is an error, as is a flag value out of range.
func (r *runFlags) config(dataset string, n, d int) (gpnb.Config, error) {
	t := r.t
	r.applyRules(&t)
	c := t.Config
	name := strings.ToLower(strings.TrimSpace(t.Solver))
	for solver, flags := range methodFlags {
		for _, f := range flags {
			if solver != name && r.given(f) && !(f == "sgd-seed" && name == "") {
				return c, fmt.Errorf("--%s applies to --solver %s only, not --solver %s", f, solver, t.Solver)
			}
		}
	}
	switch name {
	case "cg":
		c.Solver = t.CG
	case "ap":
		c.Solver = t.AP
	case "sgd":
		m := t.SGD
		if !r.given("sgd-seed") && !r.resumed {
			m.Seed = c.Seed // one seed fixes a run
		}
		switch t.SGDRate {
		case sgdAuto:
			m.LearningRate, m.RawLearningRate = 0, gpnb.PaperSGDRate(dataset, n, m.BatchSize)
		case sgdPaper:
			m.LearningRate, m.RawLearningRate = 0, gpnb.PaperSGDLearningRates()[dataset]
		}
		c.Solver = m
	case "cholesky", "exact":
		c.Solver, c.Estimator = solvers.Cholesky{}, gpnb.ExactGradient
	default:
		_, err := solvers.ParseMethod(t.Solver)
		return c, fmt.Errorf("--solver: %w", err)
	}
	ls := t.Lengthscales
	if len(ls) == 1 && d > 1 {
		ls = make([]float64, d)
		for i := range ls {
			ls[i] = t.Lengthscales[0]
		}
	}
	c.Init.Lengthscales = append([]float64(nil), ls...)
	if _, err := c.Resolve(d); err != nil {
		var ce *gpnb.ConfigError
		if errors.As(err, &ce) {
			if flags := flagsOf(ce.Field, name); flags != "" {
				err = fmt.Errorf("%s: %w", flags, err)
			}
		}
		return c, fmt.Errorf("%w (see gpnb %s --help)", err, strings.TrimPrefix(r.fs.Name(), "gpnb "))
	}
	return c.ApplyRules(), nil
}

// flagsOf returns the flags that set a gpnb.Config field (ConfigError's
// Field, "Settings.RelTolMean", "Init", a parameter of solver as
// "Solver.Momentum"), joined by "/", or "" when none does.
func flagsOf(field, solver string) string {
	path := "Config." + field
	if f, ok := strings.CutPrefix(field, "Solver."); ok {
		path = strings.ToUpper(solver) + "." + f
	}
	var names []string
	for _, f := range runFlagTable {
		if slices.ContainsFunc(f.paths, func(p string) bool { return p == path || strings.HasPrefix(p, path+".") }) {
			names = append(names, "--"+f.name)
		}
	}
	return strings.Join(names, "/")
}

// fieldOf returns the field of t at a dotted path.
func fieldOf(t *runTarget, path string) reflect.Value {
	v := reflect.ValueOf(t).Elem()
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
	}
	return v
}

// scalarField is a flag over a bool, int, uint, float64 or string field.
func scalarField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return scalarValue{fieldOf(t, path)} }
}

type scalarValue struct{ v reflect.Value }

func (s scalarValue) String() string {
	if !s.v.IsValid() {
		return ""
	}
	switch s.v.Kind() {
	case reflect.Float64:
		return strconv.FormatFloat(s.v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(s.v.Interface())
}

func (s scalarValue) IsBoolFlag() bool { return s.v.IsValid() && s.v.Kind() == reflect.Bool }

func (s scalarValue) Set(x string) error {
	switch s.v.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return errors.New("give true or false")
		}
		s.v.SetBool(b)
	case reflect.Int, reflect.Int64:
		i, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return errors.New("give a whole number")
		}
		s.v.SetInt(i)
	case reflect.Uint64:
		u, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return errors.New("give a whole number ≥ 0")
		}
		s.v.SetUint(u)
	case reflect.Float64:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("give a finite number")
		}
		s.v.SetFloat(f)
	case reflect.String:
		s.v.SetString(x)
	}
	return nil
}

// positiveField is a flag over a number that must be > 0 (a tolerance, a
// rate, a count): on the command line 0 is not taken to mean a default.
func positiveField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return positiveValue{scalarValue{fieldOf(t, path)}} }
}

type positiveValue struct{ scalarValue }

func (p positiveValue) Set(x string) error {
	f, err := strconv.ParseFloat(x, 64)
	if err != nil || !(f > 0) {
		return errors.New("must be a number > 0")
	}
	return p.scalarValue.Set(x)
}

// notField is a bool flag that sets the field to the negation of its value.
func notField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return notValue{fieldOf(t, path)} }
}

type notValue struct{ v reflect.Value }

func (n notValue) String() string   { return strconv.FormatBool(n.v.IsValid() && !n.v.Bool()) }
func (n notValue) IsBoolFlag() bool { return true }
func (n notValue) Set(x string) error {
	b, err := strconv.ParseBool(x)
	if err != nil {
		return errors.New("give true or false")
	}
	n.v.SetBool(!b)
	return nil
}

// textField is a flag over a field that marshals as text (an enumeration).
func textField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return textValue{fieldOf(t, path)} }
}

type textValue struct{ v reflect.Value }

func (x textValue) String() string {
	if !x.v.IsValid() {
		return ""
	}
	b, err := x.v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return fmt.Sprint(x.v.Interface())
	}
	return string(b)
}

func (x textValue) Set(s string) error {
	return x.v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s))
}

// floatsField is a flag over a []float64 field, comma-separated.
func floatsField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return floatsValue{fieldOf(t, path)} }
}

type floatsValue struct{ v reflect.Value }

func (f floatsValue) String() string {
	if !f.v.IsValid() {
		return ""
	}
	var parts []string
	for _, x := range f.v.Interface().([]float64) {
		parts = append(parts, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

func (f floatsValue) Set(s string) error {
	v, err := parseFloats(s)
	if err != nil {
		return err
	}
	f.v.Set(reflect.ValueOf(v))
	return nil
}

// bytesField is a flag over an int64 byte count: auto (0) or e.g. 16GiB.
func bytesField(path string) func(*runTarget) flag.Value {
	return func(t *runTarget) flag.Value { return bytesValue{fieldOf(t, path)} }
}

type bytesValue struct{ v reflect.Value }

func (b bytesValue) String() string {
	if !b.v.IsValid() || b.v.Int() == 0 {
		return "auto"
	}
	return strconv.FormatInt(b.v.Int(), 10)
}

func (b bytesValue) Set(s string) error {
	n, err := kernel.ParseBytes(s)
	if err == nil {
		b.v.SetInt(n)
	}
	return err
}

// The --sgd-lr values that name a rule rather than a rate.
const (
	sgdAuto  = "auto"
	sgdPaper = "paper"
)

// sgdRate is --sgd-lr: auto, paper, a normalised rate, or raw:N.
func sgdRate(t *runTarget) flag.Value { return sgdRateValue{t} }

type sgdRateValue struct{ t *runTarget }

func (s sgdRateValue) String() string {
	switch {
	case s.t == nil:
		return ""
	case s.t.SGDRate != "":
		return s.t.SGDRate
	case s.t.SGD.RawLearningRate > 0:
		return "raw:" + strconv.FormatFloat(s.t.SGD.RawLearningRate, 'g', -1, 64)
	}
	return strconv.FormatFloat(s.t.SGD.LearningRate, 'g', -1, 64)
}

func (s sgdRateValue) Set(v string) error {
	v = strings.ToLower(strings.TrimSpace(v))
	bad := fmt.Errorf("use auto, paper, a number ≥ 0 (normalised units; 0 = the default %v) or raw:N with N > 0 (the paper's units, e.g. raw:90)", solvers.DefaultLearningRate)
	m := &s.t.SGD
	s.t.SGDRate, m.LearningRate, m.RawLearningRate = "", 0, 0
	switch {
	case v == sgdAuto || v == sgdPaper:
		s.t.SGDRate = v
	case strings.HasPrefix(v, "raw:"):
		x, err := strconv.ParseFloat(strings.TrimPrefix(v, "raw:"), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return bad
		}
		m.RawLearningRate = x
	default:
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return bad
		}
		m.LearningRate = x
	}
	return nil
}

// precondRank is --precond-rank: a rank ≥ 0, or auto
// (solvers.PrecondRankAuto).
func precondRank(t *runTarget) flag.Value { return precondRankValue{fieldOf(t, "CG.PrecondRank")} }

type precondRankValue struct{ v reflect.Value }

func (p precondRankValue) String() string {
	if !p.v.IsValid() {
		return ""
	}
	if p.v.Int() == solvers.PrecondRankAuto {
		return "auto"
	}
	return strconv.FormatInt(p.v.Int(), 10)
}

func (p precondRankValue) Set(x string) error {
	if strings.EqualFold(strings.TrimSpace(x), "auto") {
		p.v.SetInt(solvers.PrecondRankAuto)
		return nil
	}
	k, err := strconv.Atoi(strings.TrimSpace(x))
	if err != nil || k < 0 {
		return errors.New("give a rank ≥ 0 (0: no preconditioner) or auto")
	}
	p.v.SetInt(int64(k))
	return nil
}

// sgdSeed is --sgd-seed; its default (the value --seed gets) prints as "".
func sgdSeed(t *runTarget) flag.Value { return scalarValue{fieldOf(t, "SGD.Seed")} }

// grid returns the grid the flags describe (its Config, Methods and
// SGDRates; the caller sets the axes) and the machine's share of the
// configuration (memory budget, workers, residual traces), which a job does
// not store.
func (r *runFlags) grid() (repro.Grid, gpnb.Config, error) {
	t := r.t
	r.applyRules(&t)
	machine := t.Config
	c := t.Config
	c.Operator.MemoryBudget, c.Operator.Workers, c.DropResidualTraces = 0, 0, false
	if len(t.Lengthscales) != 1 || t.Lengthscales[0] != 1 || c.Init.Noise != 1 || c.Init.Signal != 1 {
		return repro.Grid{}, c, fmt.Errorf("--noise, --signal and --lengthscales: gpnb reproduce starts every job at the paper's θ = 1")
	}
	c.Init = kernel.Hyper{}
	sgd := t.SGD
	if !r.given("sgd-seed") {
		sgd.Seed = c.Seed // one seed fixes a job
	}
	g := repro.Grid{Config: c, Methods: map[string]solvers.Method{"cg": t.CG, "ap": t.AP, "sgd": sgd}}
	switch t.SGDRate {
	case sgdAuto:
		g.SGDRates = repro.SGDRatesAuto
	case sgdPaper:
		g.SGDRates = repro.SGDRatesPaper
	default:
		g.SGDRates = repro.SGDRatesGiven
	}
	return g, machine, nil
}

// parseFloats parses a comma-separated list of finite numbers.
func parseFloats(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a comma-separated list of finite numbers", s)
		}
		out = append(out, v)
	}
	return out, nil
}
