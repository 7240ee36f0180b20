package gpnb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/gpnb/gpnb/internal/fieldtest"
	"github.com/gpnb/gpnb/solvers"
)

// oneFieldConfigs returns, for every exported leaf field of Config and of
// every solver method, a resolved configuration on d dimensions that differs
// from a resolved base in that field only, named by the field's path. The
// base has the paper's-text rules, under which every rule field may be set
// alone; "Rules" is the default configuration, whose rules, the authors',
// set those fields. A field added later is included without editing this
// function.
func oneFieldConfigs(t *testing.T, d int) map[string]Config {
	t.Helper()
	base, err := Config{Rules: solvers.RulesPaperText}.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Config{}
	add := func(name string, c Config) {
		r, err := c.Resolve(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := r.Differences(c, false); len(diff) > 0 {
			t.Fatalf("%s: Resolve changed %v: the test value must be valid and explicit", name, diff)
		}
		out[name] = r
	}
	for i, path := range fieldtest.Leaves(reflect.TypeFor[Config]()) {
		if path == "Solver" {
			continue // below, method by method
		}
		c := base
		c.Init = base.Init.Clone()
		if err := fieldtest.Set(&c, path, i, d); err != nil {
			t.Fatal(err)
		}
		if path == "Settings.MaxEpochs" {
			c.Settings.MaxIterations = 0 // one cap or the other
		}
		if path == "Rules" {
			if c, err = (Config{}).Resolve(d); err != nil {
				t.Fatal(err)
			}
		}
		if path == "Features" {
			// Features belong to the pathwise estimator, and come in pairs.
			c.Estimator, c.Features = Pathwise, 2*c.Features
		}
		add(path, c)
	}
	for _, m := range solvers.Methods() {
		typ := reflect.TypeOf(m)
		for i, path := range fieldtest.Leaves(typ) {
			p := reflect.New(typ)
			if err := fieldtest.Set(p.Interface(), path, i, d); err != nil {
				t.Fatal(err)
			}
			c := base
			c.Solver = p.Elem().Interface().(solvers.Method)
			if _, isCG := c.Solver.(solvers.CG); isCG && path == "PrecondNoise" {
				cg := c.Solver.(solvers.CG)
				cg.PrecondRank = 2 // a noise without a preconditioner means nothing
				c.Solver = cg
			}
			add(fmt.Sprintf("Solver.%s.%s", m.Name(), path), c)
		}
		c := base
		c.Solver = m
		add("Solver."+m.Name(), c)
	}
	return out
}

// TestConfigRoundTrip: every field of the configuration and of every solver
// method survives JSON and a checkpoint, bit for bit. (A mirror struct that
// forgot a field — CG.PrecondDiagonal was lost on resume this way — fails
// here.)
func TestConfigRoundTrip(t *testing.T) {
	const d = 2
	ds := synth(t, 30, d, 1)
	for name, c := range oneFieldConfigs(t, d) {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v (%s)", name, err, b)
		}
		if diff := c.Differences(back, false); len(diff) > 0 {
			t.Errorf("%s: JSON round trip changed %v (%s)", name, diff, b)
		}

		o, err := NewOptimiser(ds, Config{Probes: 2})
		if err != nil {
			t.Fatal(err)
		}
		st := o.State()
		st.Config = c
		enc, err := EncodeCheckpoint(st)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dec, err := DecodeCheckpoint(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := c.Differences(dec.Config, false); len(diff) > 0 {
			t.Errorf("%s: checkpoint round trip changed %v", name, diff)
		}
	}
}

// TestResumeRefusesEveryFixedField: resuming with a configuration that
// differs in any field not tagged resume:"change" (every solver parameter
// included) is ErrConfigMismatch naming the field; the others are taken.
func TestResumeRefusesEveryFixedField(t *testing.T) {
	const d = 2
	ds := synth(t, 30, d, 1)
	path := t.TempDir() + "/run.ckpt"
	o, err := NewOptimiser(ds, Config{CheckpointPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, c := range oneFieldConfigs(t, d) {
		fixed := o.Config().Differences(c, true)
		_, err := Resume(path, ds, WithConfig(c))
		switch {
		case len(fixed) > 0 && !errors.Is(err, ErrConfigMismatch):
			t.Errorf("%s: resume with it changed: got %v, want ErrConfigMismatch", name, err)
		case len(fixed) == 0 && err != nil:
			t.Errorf("%s may change on resume, but: %v", name, err)
		}
	}
}
