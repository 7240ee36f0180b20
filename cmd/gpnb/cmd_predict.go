package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gpnb/gpnb/gpnb"
)

func init() {
	register(&command{name: "predict", short: "predictive mean and variance of a trained run (a checkpoint) at new points, in the data's units", run: runPredict})
}

// predictJSON is what gpnb predict --json writes: the points and the
// prediction in the data's units and on the z-scored scale.
type predictJSON struct {
	Run    string          `json:"run"`
	Data   string          `json:"data"`
	Step   int             `json:"step"`
	Points [][]float64     `json:"points"`
	Pred   gpnb.Prediction `json:"prediction"`
}

func runPredict(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("predict", "--resume RUN.ckpt --points FILE.csv [--data D --split K --subset N ...] [--json FILE|-]\n\nThe points file holds the input columns only (no target), one point a row, in the data's units.\nWithout --data the dataset the run names (a UCI set or synthetic-N-D-SEED, with its split) is loaded.", stderr)
	var df dataFlags
	df.register(fs, stderr)
	resume := fs.String("resume", "", "the trained run: a checkpoint of gpnb train --checkpoint or gpnb reproduce")
	points := fs.String("points", "", "CSV file of the points to predict at: the input columns, one point a row, in the data's units")
	jsonPath := fs.String("json", "", "write the points and the prediction as JSON to this file (- for stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *resume == "" || *points == "" {
		return fmt.Errorf("--resume RUN.ckpt and --points FILE.csv are required (see gpnb predict --help)")
	}
	st, err := gpnb.ReadCheckpoint(*resume)
	if err != nil {
		return fmt.Errorf("--resume %s: %w", *resume, err)
	}
	if df.data == "" {
		df.data, df.split = st.Dataset, st.Split
	}
	ds, err := df.load()
	if err != nil {
		return err
	}
	opt, err := gpnb.Resume(*resume, ds)
	if err != nil {
		return fmt.Errorf("--resume %s: %w (give the --data flags the run was trained with)", *resume, err)
	}
	defer opt.Close()
	x, err := ds.LoadPoints(*points)
	if err != nil {
		return fmt.Errorf("--points: %w", err)
	}
	p, err := opt.Predict(x)
	if err != nil {
		return err
	}
	if *jsonPath != "" {
		out := predictJSON{Run: *resume, Data: ds.String(), Step: opt.Steps(), Pred: p}
		for i := range p.Data.Mean {
			out.Points = append(out.Points, append([]float64(nil), x.RawRowView(i)...))
		}
		return writeJSON(*jsonPath, out, stdout)
	}
	lo, hi := p.Data.Band(1.96, true)
	fmt.Fprintf(stdout, "%s after %d steps, on %s (%s); data units, 95%% band of a new observation:\n", *resume, opt.Steps(), ds, p.Method)
	fmt.Fprintf(stdout, "%-30s %12s %12s %12s %12s\n", "point", "mean", "sd", "lower", "upper")
	for i, m := range p.Data.Mean {
		fmt.Fprintf(stdout, "%-30s %12.6g %12.6g %12.6g %12.6g\n", fmtPoint(x.RawRowView(i)), m, math.Sqrt(p.Data.VarNoisy[i]), lo[i], hi[i])
	}
	return nil
}

// fmtPoint shortens a point for the table.
func fmtPoint(x []float64) string {
	var parts []string
	for _, v := range x {
		parts = append(parts, fmt.Sprintf("%.4g", v))
	}
	s := strings.Join(parts, ",")
	if len(s) > 30 {
		s = s[:27] + "..."
	}
	return s
}
