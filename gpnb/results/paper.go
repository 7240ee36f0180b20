package results

import (
	"fmt"
	"math"
	"strings"
)

// The paper's published numbers (Table 2: mean over 10 splits, full
// datasets, A100 GPU; the average speed-ups of Table 1), printed beside
// ours (Summary.PaperComparison, Summary.Table1Paper, the runs tables'
// paper_ columns). Keys are {dataset, solver}.
var (
	// PaperTestLLH holds the test log-likelihoods {cold, warm}.
	PaperTestLLH = map[[2]string][2]float64{
		{"pol", "cg"}: {1.268, 1.268}, {"pol", "ap"}: {1.269, 1.268}, {"pol", "sgd"}: {1.266, 1.268},
		{"elevators", "cg"}: {-0.386, -0.386}, {"elevators", "ap"}: {-0.386, -0.386}, {"elevators", "sgd"}: {-0.385, -0.386},
		{"bike", "cg"}: {2.150, 2.150}, {"bike", "ap"}: {2.151, 2.153}, {"bike", "sgd"}: {2.179, 2.149},
		{"protein", "cg"}: {-0.587, -0.588}, {"protein", "ap"}: {-0.587, -0.587}, {"protein", "sgd"}: {-0.587, -0.589},
		{"keggdirected", "cg"}: {1.082, 1.081}, {"keggdirected", "ap"}: {1.082, 1.081}, {"keggdirected", "sgd"}: {1.081, 1.073},
	}
	// PaperSpeedUp holds the per-dataset warm-start speed-ups.
	PaperSpeedUp = map[[2]string]float64{
		{"pol", "cg"}: 3.9, {"elevators", "cg"}: 2.6, {"bike", "cg"}: 3.5, {"protein", "cg"}: 2.8, {"keggdirected", "cg"}: 3.4,
		{"pol", "ap"}: 22.6, {"elevators", "ap"}: 26.2, {"bike", "ap"}: 13.6, {"protein", "ap"}: 8.2, {"keggdirected", "ap"}: 12.8,
		{"pol", "sgd"}: 13.4, {"elevators", "sgd"}: 5.2, {"bike", "sgd"}: 12.2, {"protein", "sgd"}: 6.0, {"keggdirected", "sgd"}: 7.4,
	}
	// PaperTotalMinutes holds the total runtimes in minutes {cold, warm}.
	PaperTotalMinutes = map[[2]string][2]float64{
		{"pol", "cg"}: {7.857, 2.003}, {"pol", "ap"}: {22.390, 0.993}, {"pol", "sgd"}: {41.306, 3.077},
		{"elevators", "cg"}: {2.758, 1.072}, {"elevators", "ap"}: {13.547, 0.516}, {"elevators", "sgd"}: {4.921, 0.980},
		{"bike", "cg"}: {7.689, 2.180}, {"bike", "ap"}: {12.306, 0.904}, {"bike", "sgd"}: {81.843, 6.733},
		{"protein", "cg"}: {31.438, 11.270}, {"protein", "ap"}: {45.417, 5.519}, {"protein", "sgd"}: {46.915, 7.874},
		{"keggdirected", "cg"}: {64.290, 18.807}, {"keggdirected", "ap"}: {62.235, 4.857}, {"keggdirected", "sgd"}: {360.436, 48.721},
	}
	// PaperAverageSpeedUp holds Table 1's averages over the five datasets.
	PaperAverageSpeedUp = map[string]float64{"cg": 3.2, "ap": 16.7, "sgd": 8.8}
)

// PaperComparison puts our test log-likelihoods, speed-ups and iteration
// ratios next to the paper's, for the UCI datasets and solvers present. The
// average row compares the mean of our per-dataset speed-ups with the mean
// of the paper's over the same datasets.
func (s *Summary) PaperComparison() *Table {
	t := &Table{Title: "Comparison with the paper",
		Caption: "Our measured test log-likelihoods and warm-start speed-ups next to the paper's Table 2 (mean over 10 splits of the full datasets, on an A100 GPU).",
		Columns: []Column{{Name: "Dataset", Merge: true}, {Name: "Solver"},
			{Name: "Test LLH cold"}, {Name: "Test LLH + ws"}, {Name: "Paper test LLH cold"}, {Name: "Paper test LLH + ws"},
			{Name: "Speed-up"}, {Name: "Paper speed-up"}, {Name: "Iteration ratio"}}}
	llh := func(e *Entry) Cell {
		if e == nil {
			return Missing()
		}
		return Cell{Num: true, Value: e.LLH.Mean, SE: math.NaN(), Digits: 3}
	}
	val := func(v float64, ok bool, digits int, suffix string) Cell {
		if !ok {
			return Missing()
		}
		return Cell{Num: true, Value: v, SE: math.NaN(), Digits: digits, Suffix: suffix}
	}
	subset := false
	for _, key := range s.Solvers {
		var ours, paper []float64
		flagged := false
		m := s.Method(key)
		for _, d := range s.Datasets {
			k := [2]string{d.Name, key}
			p, inPaper := PaperTestLLH[k]
			if !inPaper || (s.Entry(d.Name, key, Cold) == nil && s.Entry(d.Name, key, Warm) == nil) {
				continue
			}
			subset = subset || d.Subset
			sp, ok := s.SpeedUp[k]
			it := s.IterationRatio[k]
			if ok {
				ours = append(ours, sp)
				paper = append(paper, PaperSpeedUp[k])
				flagged = flagged || s.Unlike[k] != ""
			}
			t.Rows = append(t.Rows, Row{Text(d.Label()), Text(m.SolverLabel()),
				llh(s.Entry(d.Name, key, Cold)), llh(s.Entry(d.Name, key, Warm)),
				val(p[0], true, 3, ""), val(p[1], true, 3, ""),
				s.speedUpCell(d.Name, key), val(PaperSpeedUp[k], true, 1, "×"), val(it, ok, 1, "×")})
		}
		if len(ours) > 0 {
			ourAvg := val(NewStat(ours).Mean, true, 1, "×")
			if flagged {
				ourAvg.Suffix += unlikeMark
			}
			t.Rows = append(t.Rows, Row{Text(fmt.Sprintf("average over %d dataset(s)", len(ours))), Text(m.SolverLabel()),
				Missing(), Missing(), Missing(), Missing(),
				ourAvg, val(NewStat(paper).Mean, true, 1, "×"), val(s.AverageIterationRatio[key], true, 1, "×")})
		}
	}
	var avg []string
	for _, solver := range []string{"cg", "ap", "sgd"} {
		avg = append(avg, fmt.Sprintf("%s %.1f×", Method{Solver: solver}.SolverLabel(), PaperAverageSpeedUp[solver]))
	}
	t.Notes = []string{
		"The paper's average speed-ups over all five datasets (Table 1) are " + strings.Join(avg, ", ") + "; the average rows here use the paper's per-dataset values for the datasets present.",
		"Speed-ups are ratios of wall-clock times and depend on the machine (ours: a CPU) and on n; the iteration ratio does not depend on the machine.",
	}
	t.Notes = append(t.Notes, s.unlikeNotes()...)
	t.Notes = append(t.Notes, s.unconvergedNotes()...)
	if subset {
		t.Notes = append(t.Notes, "Datasets shown with (n=…) were run on a random subset of the training split, the paper on all of it: their log-likelihoods are not expected to match the paper's (fewer points fit less well), and speed-ups at another n on another machine need not match either.")
	}
	return t
}
