package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

// hyperFlags are the kernel and hyperparameter flags shared by mll, solve and
// train: --kernel, --noise, --signal, --lengthscales.
type hyperFlags struct {
	kernel       string
	noise        float64
	signal       float64
	lengthscales string
}

func (h *hyperFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.kernel, "kernel", "matern32", "kernel: matern12, matern32, matern52 or rbf")
	fs.Float64Var(&h.noise, "noise", 1, "noise scale σ (> 0); H = K + σ²I")
	fs.Float64Var(&h.signal, "signal", 1, "signal scale s (> 0); k(x,x) = s²")
	fs.StringVar(&h.lengthscales, "lengthscales", "1", "length scales ℓ: one value for every input dimension, or d comma-separated values")
}

// kernel returns the kernel for d input dimensions, or an error that says
// which flag is wrong.
func (h *hyperFlags) build(d int) (kernel.Kernel, error) {
	fam, err := kernel.ParseFamily(h.kernel)
	if err != nil {
		return kernel.Kernel{}, fmt.Errorf("--kernel: %w", err)
	}
	ls, err := parseFloats(h.lengthscales)
	if err != nil {
		return kernel.Kernel{}, fmt.Errorf("--lengthscales: %w", err)
	}
	if len(ls) == 1 && d > 1 {
		v := ls[0]
		ls = make([]float64, d)
		for i := range ls {
			ls[i] = v
		}
	}
	hp := kernel.Hyper{Lengthscales: ls, Signal: h.signal, Noise: h.noise}
	if err := hp.Validate(d); err != nil {
		return kernel.Kernel{}, fmt.Errorf("--noise/--signal/--lengthscales: %w", err)
	}
	return kernel.Kernel{Family: fam, Hyper: hp}, nil
}

// parseFloats parses a comma-separated list of finite numbers.
func parseFloats(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	out := make([]float64, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("empty value in %q", s)
		}
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number", p)
		}
		out = append(out, v)
	}
	return out, nil
}
