package main

import (
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
	"github.com/gpnb/gpnb/internal/fieldtest"
	"github.com/gpnb/gpnb/solvers"
)

// TestRunFlagsCoverEveryField: every exported field of gpnb.Config (but
// its solver) and of every solver method has a flag, and a configuration
// that differs from the default in any one field survives the round trip
// through the command line: its flags, parsed again, give it back bit for
// bit. A field added later without a flag fails here.
func TestRunFlagsCoverEveryField(t *testing.T) {
	const d = 2
	covered := map[string]bool{}
	for _, f := range runFlagTable {
		for _, p := range f.paths {
			covered[p] = true
		}
	}
	base, err := gpnb.Config{}.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	type one struct {
		path   string
		solver string
	}
	var cases []one
	for _, p := range fieldtest.Leaves(reflect.TypeFor[gpnb.Config]()) {
		if p != "Solver" {
			cases = append(cases, one{"Config." + p, "cg"})
		}
	}
	for _, m := range solvers.Methods() {
		for _, p := range fieldtest.Leaves(reflect.TypeOf(m)) {
			cases = append(cases, one{reflect.TypeOf(m).Name() + "." + p, m.Name()})
		}
		cases = append(cases, one{"", m.Name()})
	}
	for i, c := range cases {
		if c.path != "" && !covered[c.path] {
			t.Errorf("%s has no flag in runFlagTable", c.path)
			continue
		}
		src := targetOf(base)
		src.Solver = c.solver
		if c.path != "" {
			if err := fieldtest.Set(&src, c.path, i, d); err != nil {
				t.Fatal(err)
			}
		}
		if c.path == "CG.PrecondNoise" {
			src.CG.PrecondRank = 2
		}
		if c.path == "Config.Settings.MaxEpochs" {
			src.Config.Settings.MaxIterations = 0 // one cap or the other
		}
		if c.path == "Config.Features" {
			// Features belong to the pathwise estimator, and come in pairs.
			src.Config.Estimator, src.Config.Features = gpnb.Pathwise, 2*src.Config.Features
		}
		if c.path == "Config.Init.Lengthscales" {
			src.Lengthscales = src.Config.Init.Lengthscales
		}
		want := src.Config
		switch c.solver {
		case "cg":
			want.Solver = src.CG
		case "ap":
			want.Solver = src.AP
		case "sgd":
			want.Solver = src.SGD
		case "cholesky":
			want.Solver, want.Estimator = solvers.Cholesky{}, gpnb.ExactGradient
		}
		want, err := want.Resolve(d)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		var args []string
		for _, f := range runFlagTable {
			other := false
			for solver, names := range methodFlags {
				other = other || (solver != c.solver && slices.Contains(names, f.name))
			}
			if !other {
				args = append(args, "--"+f.name+"="+f.value(&src).String())
			}
		}
		var rf runFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rf.register(fs, io.Discard, targetOf(gpnb.Config{}), nil)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%s: parsing %s: %v", c.path, strings.Join(args, " "), err)
		}
		got, err := rf.config("test", d)
		if err != nil {
			t.Fatalf("%s: %v (%s)", c.path, err, strings.Join(args, " "))
		}
		if got, err = got.Resolve(d); err != nil {
			t.Fatal(err)
		}
		if diff := want.Differences(got, false); len(diff) > 0 {
			t.Errorf("%s (solver %s): the command line %s gives back a configuration that differs in %v", c.path, c.solver, strings.Join(args, " "), diff)
		}
	}
}

// TestDeprecatedFlags: the old spellings still work, say what replaces them,
// and set the same field as the new one.
func TestDeprecatedFlags(t *testing.T) {
	for old, name := range deprecatedFlags {
		var rf runFlags
		var msg strings.Builder
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		rf.register(fs, &msg, targetOf(gpnb.Config{}), nil)
		v, want := "7", "7"
		if b, ok := fs.Lookup(name).Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			v, want = "false", "false"
		}
		if vals, ok := boolSpellings[old]; ok { // an old bool for a new value
			v, want = "true", vals[1]
		}
		if err := fs.Parse([]string{"--" + old + "=" + v}); err != nil {
			t.Fatalf("--%s: %v", old, err)
		}
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s=%s set --%s to %q, want %q", old, v, name, got, want)
		}
		if !strings.Contains(msg.String(), "--"+old+" is deprecated") || !strings.Contains(msg.String(), "use --"+name) {
			t.Errorf("--%s: no deprecation note naming --%s: %q", old, name, msg.String())
		}
	}
	if !slices.Contains(methodFlags["cg"], "precond-diagonal") {
		t.Error("precond-diagonal is not a CG flag")
	}
}

// TestMethodFlagForOtherSolver: a solver's parameter given with another
// --solver is an error, not silently ignored.
func TestMethodFlagForOtherSolver(t *testing.T) {
	var rf runFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	rf.register(fs, io.Discard, targetOf(gpnb.Config{}), nil)
	if err := fs.Parse([]string{"--solver", "cg", "--block-size", "100"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rf.config("x", 2); err == nil || !strings.Contains(err.Error(), "--block-size applies to --solver ap only") {
		t.Errorf("got %v", err)
	}
}

// TestAuthorsRules: --authors-rules sets every rule of the authors' code for
// the chosen solver (and no flag of another solver trips its check), an
// explicit flag among them wins, and the result equals spelling the flags
// out.
func TestAuthorsRules(t *testing.T) {
	parse := func(args ...string) gpnb.Config { return parseTrain(t, 2, args...) }
	for _, solver := range []string{"cg", "ap", "sgd"} {
		got := parse("--solver", solver, "--authors-rules")
		spelled := []string{"--solver", solver, "--probe-tolerance", "mean", "--freeze", "joint"}
		switch solver {
		case "ap":
			spelled = append(spelled, "--ap-pick", "all")
		case "sgd":
			spelled = append(spelled, "--sgd-residual-start", "b", "--sgd-verify=false")
		}
		want := parse(spelled...)
		if diff := want.Differences(got, false); len(diff) > 0 {
			t.Errorf("%s: --authors-rules differs from %v in %v", solver, spelled, diff)
		}
		if got.Settings.ProbeRule != solvers.ProbeMean || got.Settings.Freeze != solvers.FreezeJoint {
			t.Errorf("%s: settings %+v", solver, got.Settings)
		}
	}
	sgd := parse("--solver", "sgd", "--authors-rules")
	if m := sgd.Solver.(solvers.SGD); m.ResidualStart != solvers.ResidualB || !m.NoVerify {
		t.Errorf("sgd: %+v", m)
	}
	if ap := parse("--solver", "ap", "--authors-rules").Solver.(solvers.AP); ap.Pick != solvers.PickAll {
		t.Errorf("ap: %+v", ap)
	}
	if c := parse("--solver", "sgd", "--authors-rules", "--freeze", "column"); c.Settings.Freeze != solvers.FreezeColumn || c.Settings.ProbeRule != solvers.ProbeMean {
		t.Errorf("an explicit --freeze column did not win: %+v", c.Settings)
	}
	if c := parse("--solver", "sgd"); c.Settings.Freeze != solvers.FreezeColumn || c.Settings.ProbeRule != solvers.ProbeEach {
		t.Errorf("the defaults are not the paper's text: %+v", c.Settings)
	}
}

// --precond-rank takes a rank or auto (solvers.PrecondRankAuto), and prints
// what it parses.
func TestPrecondRankFlag(t *testing.T) {
	for in, want := range map[string]int{"auto": solvers.PrecondRankAuto, "AUTO": solvers.PrecondRankAuto, "0": 0, "100": 100} {
		var tg runTarget
		v := precondRank(&tg)
		if err := v.Set(in); err != nil || tg.CG.PrecondRank != want {
			t.Errorf("--precond-rank %s: %d (%v), want %d", in, tg.CG.PrecondRank, err, want)
		}
		if back := v.String(); back != strings.ToLower(in) {
			t.Errorf("--precond-rank %s prints as %s", in, back)
		}
	}
	for _, bad := range []string{"-1", "-3", "x", ""} {
		var tg runTarget
		if err := precondRank(&tg).Set(bad); err == nil {
			t.Errorf("--precond-rank %q accepted", bad)
		}
	}
}

// --preset paper gives what no preset gives, for every solver; --preset
// fast sets its choices where no flag was given, and the flags given win.
func TestPresetFlags(t *testing.T) {
	const d = 3
	parse := func(args ...string) gpnb.Config {
		t.Helper()
		c, err := parseTrain(t, d, args...).Resolve(d)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, s := range []string{"cg", "ap", "sgd", "cholesky"} {
		if diff := parse("--solver", s).Differences(parse("--solver", s, "--preset", "paper"), false); len(diff) > 0 {
			t.Errorf("--solver %s: --preset paper changes %v", s, diff)
		}
	}
	fast, err := gpnb.Preset("fast", "cg", "pol")
	if err != nil {
		t.Fatal(err)
	}
	fast.Init = kernel.DefaultHyper(d)
	if fast, err = fast.Resolve(d); err != nil {
		t.Fatal(err)
	}
	if diff := parse("--preset", "fast").Differences(fast, false); len(diff) > 0 {
		t.Errorf("--preset fast differs from gpnb.Preset(fast) in %v", diff)
	}
	given := parse("--preset", "fast", "--probes", "8", "--precision", "float32", "--precond-rank", "0", "--param", "softplus")
	want := fast
	want.Probes, want.Operator.Precision, want.Solver, want.Param = 8, kernel.Float32, solvers.CG{}, gpnb.ParamSoftplus
	if diff := given.Differences(want, false); len(diff) > 0 {
		t.Errorf("flags given with --preset fast: differs from the preset with them in %v", diff)
	}
}

// parseTrain returns the configuration gpnb train's run flags, --preset and
// --authors-rules give for args on pol with d input dimensions.
func parseTrain(t *testing.T, d int, args ...string) gpnb.Config {
	t.Helper()
	var rf runFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs, io.Discard, paperTarget(), nil)
	preset := fs.String("preset", "", "")
	authors := fs.Bool("authors-rules", false, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := rf.applyNamed(*preset, *authors, "pol"); err != nil {
		t.Fatal(err)
	}
	c, err := rf.config("pol", d)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return c
}
