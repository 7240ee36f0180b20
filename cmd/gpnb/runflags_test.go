package main

import (
	"bytes"
	"errors"
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
	// The paper's-text rules, under which every rule field may be set
	// alone (gpnb's oneFieldConfigs); Config.Rules: the default, the
	// authors'.
	base, err := gpnb.Config{Rules: solvers.RulesPaperText}.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	authors, err := gpnb.Config{}.Resolve(d)
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
		if c.path == "Config.Rules" {
			src = targetOf(authors)
			src.Solver = c.solver
			var ap, sgd solvers.Method
			src.Config.Settings, ap = solvers.RulesAuthors.Apply(src.Config.Settings, src.AP)
			_, sgd = solvers.RulesAuthors.Apply(src.Config.Settings, src.SGD)
			src.AP, src.SGD = ap.(solvers.AP), sgd.(solvers.SGD)
		} else if c.path != "" {
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
		got, err := rf.config("test", 100, d)
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

// TestConfigErrorsNameTheirFlag: a bad value the command line lets through
// is refused by gpnb.Config.Resolve, and the error names the flag of the
// field (gpnb.ConfigError), for Config's fields and a solver's alike.
func TestConfigErrorsNameTheirFlag(t *testing.T) {
	for _, tc := range [][]string{
		{"--momentum", "1.5", "--solver", "sgd"},
		{"--block-size", "-3", "--solver", "ap"},
		{"--precond-noise", "-1", "--precond-rank", "5"},
		{"--features", "3", "--estimator", "pathwise"},
		{"--noise-min", "-1"},
		{"--max-epochs", "-2"},
		{"--budget", "-1"},
		{"--lengthscales", "1,2,3"},
	} {
		var rf runFlags
		fs := flag.NewFlagSet("gpnb t", flag.ContinueOnError)
		rf.register(fs, io.Discard, targetOf(gpnb.Config{}), nil)
		if err := fs.Parse(tc); err != nil {
			t.Fatalf("%v: %v", tc, err)
		}
		_, err := rf.config("x", 100, 2)
		want := tc[0] + ": gpnb: invalid configuration"
		if tc[0] == "--lengthscales" {
			want = "--noise/--signal/--lengthscales: "
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v: %v, want an error starting %q", tc, err, want)
		}
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
	if _, err := rf.config("x", 100, 2); err == nil || !strings.Contains(err.Error(), "--block-size applies to --solver ap only") {
		t.Errorf("got %v", err)
	}
}

// TestRulesFlag: --rules authors (the default) sets every rule of the
// authors' code for the chosen solver (and no flag of another solver trips
// its check) and equals spelling the flags out; --rules paper-text sets the
// paper's text; an explicit rule flag wins over either, changing its rule
// alone, and the configuration's Rules names what the fields hold.
func TestRulesFlag(t *testing.T) {
	parse := func(args ...string) gpnb.Config {
		t.Helper()
		var rf runFlags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rf.register(fs, io.Discard, defaultTarget(), nil)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		c, err := rf.config("pol", 500, 2)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return c
	}
	for _, solver := range []string{"cg", "ap", "sgd"} {
		spelled := []string{"--solver", solver, "--probe-tolerance", "mean", "--freeze", "joint"}
		switch solver {
		case "ap":
			spelled = append(spelled, "--ap-pick", "all")
		case "sgd":
			spelled = append(spelled, "--sgd-residual-start", "b", "--sgd-verify=false")
		}
		want := parse(spelled...)
		for _, args := range [][]string{{"--solver", solver}, {"--solver", solver, "--rules", "authors"}, {"--solver", solver, "--rules", "paper-text", "--freeze", "joint", "--probe-tolerance", "mean", "--ap-pick", "all", "--sgd-residual-start", "b", "--sgd-verify=false"}} {
			if solver != "ap" && slices.Contains(args, "--ap-pick") || solver != "sgd" && slices.Contains(args, "--sgd-verify=false") {
				continue // another solver's flags
			}
			got := parse(args...)
			if diff := want.Differences(got, false); len(diff) > 0 || got.Rules != solvers.RulesAuthors {
				t.Errorf("%s: %v gives rules %v and differs from %v in %v", solver, args, got.Rules, spelled, diff)
			}
		}
		paper := parse("--solver", solver, "--rules", "paper-text")
		if paper.Settings.ProbeRule != solvers.ProbeEach || paper.Settings.Freeze != solvers.FreezeColumn || paper.Rules != solvers.RulesPaperText {
			t.Errorf("%s: --rules paper-text gives %v with %+v", solver, paper.Rules, paper.Settings)
		}
	}
	sgd := parse("--solver", "sgd")
	if m := sgd.Solver.(solvers.SGD); m.ResidualStart != solvers.ResidualB || !m.NoVerify || sgd.Settings.Freeze != solvers.FreezeJoint {
		t.Errorf("sgd's defaults are not the authors' rules: %+v, %+v", m, sgd.Settings)
	}
	if ap := parse("--solver", "ap").Solver.(solvers.AP); ap.Pick != solvers.PickAll {
		t.Errorf("ap: %+v", ap)
	}
	if m := parse("--solver", "sgd", "--rules", "paper-text").Solver.(solvers.SGD); m.ResidualStart != solvers.ResidualTrue || m.NoVerify {
		t.Errorf("sgd under --rules paper-text: %+v", m)
	}
	c := parse("--solver", "sgd", "--freeze", "column")
	if c.Settings.Freeze != solvers.FreezeColumn || c.Settings.ProbeRule != solvers.ProbeMean || c.Rules != solvers.RulesPaperText || !c.Solver.(solvers.SGD).NoVerify {
		t.Errorf("an explicit --freeze column under the default rules: %v %+v %+v", c.Rules, c.Settings, c.Solver)
	}
	c = parse("--solver", "sgd", "--rules", "paper-text", "--freeze", "joint")
	if c.Settings.Freeze != solvers.FreezeJoint || c.Settings.ProbeRule != solvers.ProbeEach || c.Solver.(solvers.SGD).NoVerify {
		t.Errorf("--rules paper-text --freeze joint: %+v %+v", c.Settings, c.Solver)
	}
}

// TestHelpIsShort: every command's --help gives each of its flags one or
// two lines, and gpnb train's, which has every run flag, stays under 4 KB
// (DESIGN.md has the rest).
func TestHelpIsShort(t *testing.T) {
	for name, c := range commands {
		var out bytes.Buffer
		if err := c.run([]string{"--help"}, &out, &out); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s --help: %v", name, err)
		}
		text := out.String()
		lines := map[string]int{}
		flagName := ""
		for _, l := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(l, "  --"); ok {
				flagName = strings.FieldsFunc(rest, func(r rune) bool { return r == '=' || r == ' ' })[0]
			} else if !strings.HasPrefix(l, "    ") {
				flagName = ""
			}
			if flagName != "" {
				lines[flagName]++
			}
		}
		for f, n := range lines {
			if n > 2 {
				t.Errorf("gpnb %s --help: --%s takes %d lines", name, f, n)
			}
		}
		if name == "train" && len(text) > 4096 {
			t.Errorf("gpnb train --help is %d bytes, over 4 KB", len(text))
		}
		if name == "train" && len(lines) < len(runFlagTable) {
			t.Errorf("gpnb train --help lists %d flags, fewer than the %d run flags", len(lines), len(runFlagTable))
		}
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
// fast gives gpnb.Preset(fast) where no flag was given, and the flags given
// win.
func TestPresetFlags(t *testing.T) {
	const d = 3
	parse := func(args ...string) gpnb.Config {
		t.Helper()
		c, err := presetConfig(t, d, args...).Resolve(d)
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

// presetConfig returns the configuration gpnb train's run flags and
// --preset give for args on pol (500 points) with d input dimensions.
func presetConfig(t *testing.T, d int, args ...string) gpnb.Config {
	t.Helper()
	var rf runFlags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs, io.Discard, defaultTarget(), nil)
	preset := fs.String("preset", "", "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := rf.applyPreset(*preset, "pol"); err != nil {
		t.Fatal(err)
	}
	c, err := rf.config("pol", 500, d)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return c
}
