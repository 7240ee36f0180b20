package nb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpnb/gpnb/cuda"
	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

// TestPickBackend: in a build without the GPU backend PickBackend picks the
// CPU and says that the tag is missing; with it (go test -tags cudaemu, the
// GPU kernels emulated on the CPU, or -tags cuda on a GPU machine) it picks
// the device. Either way a step trained with its Option runs on the
// operator it names: the step record's operator description starts with
// kernel.GPUStoragePrefix exactly on the GPU.
func TestPickBackend(t *testing.T) {
	b := PickBackend(cuda.Options{})
	switch {
	case !cuda.Built:
		if b.Device != nil || !strings.Contains(b.Why, "built without -tags cuda") || !strings.HasPrefix(b.String(), "CPU (built without -tags cuda") {
			t.Errorf("without the cuda tag: %+v, %q: want the CPU, because of the missing tag", b, b)
		}
	case cuda.Available() != nil:
		if b.Device != nil {
			t.Errorf("no usable GPU (%v), but PickBackend picked %v", cuda.Available(), b)
		}
	default:
		devs, err := cuda.Devices()
		if err != nil || b.Device == nil || b.Device.Name != devs[0].Name || !strings.HasPrefix(b.String(), "CUDA on GPU 0: "+devs[0].Name) {
			t.Errorf("with the GPU backend and a usable GPU 0 (%v, %v): picked %+v", devs, err, b)
		}
	}
	t.Logf("PickBackend: %v", b)

	ds, err := data.Synthetic(60, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	o, err := gpnb.NewOptimiser(ds, gpnb.Config{Seed: 1, WarmStart: true}, b.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if err := o.Run(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	op := o.History()[0].Operator
	if onGPU := strings.HasPrefix(op, kernel.GPUStoragePrefix); onGPU != (b.Device != nil) {
		t.Errorf("backend %v trained on the operator %q", b, op)
	}
}

// TestPickBackendCases: every branch of the choice, with the GPU's answers
// made up.
func TestPickBackendCases(t *testing.T) {
	gpu := cuda.DeviceInfo{Ordinal: 0, Name: "Test GPU", Major: 9}
	gpu1 := cuda.DeviceInfo{Ordinal: 1, Name: "Other GPU", Major: 8}
	two := func() ([]cuda.DeviceInfo, error) { return []cuda.DeviceInfo{gpu, gpu1}, nil }
	opens := func(cuda.Options) error { return nil }
	noDriver := func() string { return "" }
	for _, c := range []struct {
		name   string
		p      gpuProbe
		opt    cuda.Options
		device string // "" for the CPU
		why    []string
	}{
		{"no tag", gpuProbe{built: false, driver: noDriver}, cuda.Options{}, "", []string{"built without -tags cuda"}},
		{"no tag, a driver", gpuProbe{built: false, driver: func() string { return "580.1" }}, cuda.Options{}, "",
			[]string{"built without -tags cuda", "NVIDIA driver 580.1", "-tags cuda"}},
		{"no devices", gpuProbe{built: true, devices: func() ([]cuda.DeviceInfo, error) { return nil, errors.New("the CUDA driver sees no GPU") }, driver: noDriver},
			cuda.Options{}, "", []string{"sees no GPU"}},
		{"device out of range", gpuProbe{built: true, devices: two, open: opens, driver: noDriver}, cuda.Options{Device: 2}, "",
			[]string{"Device is 2", "2 GPU(s)"}},
		{"device fails", gpuProbe{built: true, devices: two, open: func(cuda.Options) error { return errors.New("no kernel module loads") }, driver: noDriver},
			cuda.Options{}, "", []string{"GPU 0 (Test GPU) cannot run it", "no kernel module loads"}},
		{"device 0", gpuProbe{built: true, devices: two, open: opens, driver: noDriver}, cuda.Options{}, "Test GPU", []string{"GPU 0 runs"}},
		{"device 1", gpuProbe{built: true, devices: two, open: opens, driver: noDriver}, cuda.Options{Device: 1, Precision: kernel.Float32}, "Other GPU", []string{"GPU 1 runs"}},
	} {
		var opened *cuda.Options
		if c.p.open != nil {
			open := c.p.open
			c.p.open = func(o cuda.Options) error { opened = &o; return open(o) }
		}
		b := pickBackend(c.p, c.opt)
		if got := ""; b.Device != nil {
			got = b.Device.Name
			if got != c.device || b.opt != c.opt || opened == nil || *opened != c.opt {
				t.Errorf("%s: picked %q with options %+v (opened with %v): want %q, %+v", c.name, got, b.opt, opened, c.device, c.opt)
			}
		} else if c.device != "" || !strings.HasPrefix(b.String(), "CPU (") {
			t.Errorf("%s: picked the CPU (%q), want %q", c.name, b, c.device)
		}
		for _, w := range c.why {
			if !strings.Contains(b.Why, w) {
				t.Errorf("%s: Why = %q lacks %q", c.name, b.Why, w)
			}
		}
	}
}
