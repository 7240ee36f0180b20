package main

import (
	"fmt"
	"io"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/gpnb/kernel"
)

func init() {
	register(&command{
		name:  "mll",
		short: "exact (Cholesky) log marginal likelihood and its gradient",
		run:   runMLL,
	})
}

// mllGrad is ∇L with respect to the constrained hyperparameters.
type mllGrad struct {
	Noise        float64   `json:"noise"`
	Signal       float64   `json:"signal"`
	Lengthscales []float64 `json:"lengthscales"`
}

// mllResult is the JSON that "gpnb mll" prints.
type mllResult struct {
	Dataset string  `json:"dataset"`
	NTrain  int     `json:"n_train"`
	D       int     `json:"d"`
	Kernel  string  `json:"kernel"`
	MLL     float64 `json:"mll"`
	Grad    mllGrad `json:"grad"`
}

// loadRun loads the dataset the data flags name, the configuration the run
// flags give for it and its initial kernel: what mll and solve work on.
func loadRun(df *dataFlags, rf *runFlags) (ds *data.Dataset, cfg gpnb.Config, k kernel.Kernel, err error) {
	if ds, err = df.load(); err == nil {
		cfg, err = rf.config(ds.Name, ds.NTrain(), ds.D())
		k = kernel.Kernel{Family: cfg.Kernel, Hyper: cfg.Init}
	}
	return ds, cfg, k, err
}

func runMLL(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mll", "--data D [flags]\n\nThe exact (Cholesky) log marginal likelihood and its gradient at θ.", stderr)
	var df dataFlags
	var rf runFlags
	df.register(fs, stderr)
	rf.register(fs, stderr, targetOf(gpnb.Config{}), only("kernel", "noise", "signal", "lengthscales"))
	jsonPath := fs.String("json", "", "write the result to `FILE` (-: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ds, _, k, err := loadRun(&df, &rf)
	if err != nil {
		return err
	}
	e, err := gpnb.NewExact(ds.XTrain, ds.YTrain, k)
	if err != nil {
		return err
	}
	d := ds.D()
	g := make([]float64, d+2)
	if err := e.Gradient(g); err != nil {
		return err
	}
	res := mllResult{
		Dataset: ds.Name, NTrain: ds.NTrain(), D: d, Kernel: k.Family.String(), MLL: e.MLL(),
		Grad: mllGrad{Lengthscales: g[:d], Signal: g[d], Noise: g[d+1]},
	}
	if *jsonPath == "" {
		_, err := fmt.Fprintf(stdout, "%s: log marginal likelihood %.10g\n∂L/∂noise %.6g  ∂L/∂signal %.6g  ∂L/∂lengthscales %.6g\n",
			ds, res.MLL, res.Grad.Noise, res.Grad.Signal, res.Grad.Lengthscales)
		return err
	}
	return writeJSON(*jsonPath, res, stdout)
}
