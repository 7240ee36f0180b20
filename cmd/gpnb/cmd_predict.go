package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
	"github.com/gpnb/gpnb/gpnb"
	"github.com/gpnb/gpnb/internal/atomicfile"
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
	Inputs []string        `json:"inputs"` // the points' column names
	Points [][]float64     `json:"points"`
	Pred   gpnb.Prediction `json:"prediction"`
}

const predictSynopsis = `--resume RUN.ckpt --points FILE.csv [flags]

Predicts at the points (in the data's units; columns matched by name when both files have a
header). Without --data, the data and columns the run recorded. The CSV holds the inputs, mean,
var (latent), var_noisy (a new observation), lower_95 and upper_95 (its 95% band).`

func runPredict(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("predict", predictSynopsis, stderr)
	var df dataFlags
	df.register(fs, stderr)
	resume := fs.String("resume", "", "the trained run's checkpoint `FILE`")
	points := fs.String("points", "", "CSV `FILE` of the points")
	out := fs.String("out", "", "write the predictions to `FILE`: .json, else CSV (-: stdout)")
	jsonPath := fs.String("json", "", "write points and prediction as JSON to `FILE` (-: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *resume == "" || *points == "" {
		return fmt.Errorf("--resume RUN.ckpt and --points FILE.csv are required: train first with gpnb train --data D --checkpoint RUN.ckpt (see gpnb predict --help)")
	}
	opt, err := resumeForPredict(*resume, &df)
	if err != nil {
		return err
	}
	defer opt.Close()
	ds := opt.Dataset()
	x, err := ds.LoadPoints(*points, df.pointsOptions()...)
	if err != nil {
		return fmt.Errorf("--points: %w", err)
	}
	p, err := opt.Predict(x)
	if err != nil {
		return err
	}
	res := predictJSON{Run: *resume, Data: ds.String(), Step: opt.Steps(), Inputs: inputNames(ds), Pred: p}
	for i := range p.Data.Mean {
		res.Points = append(res.Points, append([]float64(nil), x.RawRowView(i)...))
	}
	if *out == "" && *jsonPath == "" {
		return printPredictions(stdout, res, x, p.Method)
	}
	if err := writeJSON(*jsonPath, res, stdout); err != nil || *out == "" {
		return err
	}
	if strings.EqualFold(filepath.Ext(*out), ".json") {
		return writeJSON(*out, res, stdout)
	}
	return writePredictionsCSV(*out, res, stdout)
}

// resumeForPredict loads the data (the run's own, with its CSV columns,
// unless --data is given) and resumes the run on them.
func resumeForPredict(path string, df *dataFlags) (*gpnb.Optimiser, error) {
	st, err := gpnb.ReadCheckpoint(path)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	if df.data == "" {
		df.data, df.split, df.recorded = st.Dataset, st.Split, st.Columns.Options()
	}
	ds, err := df.load()
	if err != nil {
		return nil, err
	}
	opt, err := gpnb.Resume(path, ds)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %w (give the --data flags the run was trained with)", path, err)
	}
	return opt, nil
}

// inputNames returns the names of ds's input columns: from the CSV header,
// else x1, x2, ...
func inputNames(ds *data.Dataset) []string {
	if ds.Columns.Header {
		return ds.Columns.InputNames()
	}
	names := make([]string, ds.D())
	for j := range names {
		names[j] = "x" + strconv.Itoa(j+1)
	}
	return names
}

// printPredictions writes the human-readable table.
func printPredictions(w io.Writer, res predictJSON, x *mat.Dense, method string) error {
	p := res.Pred.Data
	lo, hi := p.Band(1.96, true)
	fmt.Fprintf(w, "%s after %d steps, on %s (%s); data units, 95%% band of a new observation:\n", res.Run, res.Step, res.Data, method)
	fmt.Fprintf(w, "%-30s %12s %12s %12s %12s\n", fmtPoint(res.Inputs), "mean", "sd", "lower", "upper")
	for i, m := range p.Mean {
		if _, err := fmt.Fprintf(w, "%-30s %12.6g %12.6g %12.6g %12.6g\n", fmtPoint(fmtFloats(x.RawRowView(i), 'g', 4)), m, math.Sqrt(p.VarNoisy[i]), lo[i], hi[i]); err != nil {
			return err
		}
	}
	return nil
}

// predictionColumns name the columns that follow the inputs in the CSV.
var predictionColumns = []string{"mean", "var", "var_noisy", "lower_95", "upper_95"}

// writePredictionsCSV writes one row a point: its inputs, then the
// predictionColumns, in the data's units and full precision, to path ("-":
// stdout), atomically.
func writePredictionsCSV(path string, res predictJSON, stdout io.Writer) error {
	p := res.Pred.Data
	lo, hi := p.Band(1.96, true)
	write := func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(append(append([]string(nil), res.Inputs...), predictionColumns...)); err != nil {
			return err
		}
		for i, x := range res.Points {
			row := append(slices.Clone(x), p.Mean[i], p.Var[i], p.VarNoisy[i], lo[i], hi[i])
			if err := cw.Write(fmtFloats(row, 'g', -1)); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	if path == "-" {
		return write(stdout)
	}
	if err := atomicfile.Write(path, 0o644, write); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}

// fmtFloats formats values with strconv's format and precision.
func fmtFloats(v []float64, format byte, prec int) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.FormatFloat(x, format, prec, 64)
	}
	return out
}

// fmtPoint joins a point's fields for the table, shortened to 30 characters.
func fmtPoint(fields []string) string {
	s := strings.Join(fields, ",")
	if len(s) > 30 {
		s = s[:27] + "..."
	}
	return s
}
