//go:build ignore

// characters writes the suite's made-up data sets as CSV files, a training
// and a test file each, in the data's own units (gpnb and export.go z-score
// them as they read them):
//
//	go run results/speed/fast-preset/characters.go -out DIR
//
// DIR/noiseless-N-train.csv, -test.csv: a draw of a Matérn-3/2 Gaussian
// process (length scales 0.6, 0.9 and 1.5 in 3 of 5 inputs on [-1,1], the
// other two irrelevant), observed without noise: the marginal likelihood's
// optimum has σ → 0.
// DIR/duplicates-N-train.csv, -test.csv: 6 inputs, every training input
// repeated in 4 rows, each with its own noise (standard deviation 0.1 of a
// target of standard deviation about 1): K is singular.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/gpnb/kernel"
)

func main() {
	out := flag.String("out", "", "output directory")
	n := flag.Int("n", 2000, "training points")
	flag.Parse()
	if *out == "" {
		log.Fatal("give -out DIR")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	nt := *n / 2
	rng := rand.New(rand.NewPCG(67, 1))

	// noiseless: one draw of the GP at all n+nt points, by Cholesky.
	x := uniform(rng, *n+nt, 5)
	k := kernel.Kernel{Family: kernel.Matern32, Hyper: kernel.Hyper{Lengthscales: []float64{0.6, 0.9, 1.5, 1e9, 1e9}, Signal: 1, Noise: 1e-5}}
	g := mat.NewSymDense(*n+nt, nil)
	for i := 0; i < *n+nt; i++ {
		for j := 0; j <= i; j++ {
			g.SetSym(i, j, k.At(x.RawRowView(i), x.RawRowView(j)))
		}
		g.SetSym(i, i, g.At(i, i)+1e-10)
	}
	var c mat.Cholesky
	if !c.Factorize(g) {
		log.Fatal("K is not positive definite")
	}
	var l mat.TriDense
	c.LTo(&l)
	z := mat.NewVecDense(*n+nt, nil)
	for i := 0; i < *n+nt; i++ {
		z.SetVec(i, rng.NormFloat64())
	}
	f := mat.NewVecDense(*n+nt, nil)
	f.MulVec(&l, z)
	write(*out, fmt.Sprintf("noiseless-%d", *n), x, f.RawVector().Data, *n)

	// duplicates: n/4 distinct training inputs, each in 4 rows.
	const rep = 4
	d := 6
	base := uniform(rng, *n/rep+nt, d)
	xd := mat.NewDense(*n+nt, d, nil)
	y := make([]float64, *n+nt)
	for i := 0; i < *n+nt; i++ {
		src := i % (*n / rep)
		if i >= *n {
			src = *n/rep + i - *n
		}
		row := base.RawRowView(src)
		xd.SetRow(i, row)
		y[i] = math.Sin(3*row[0]) + row[1]*row[2] + 0.5*math.Cos(2*row[3]) + 0.1*rng.NormFloat64()
	}
	write(*out, fmt.Sprintf("duplicates-%d", *n), xd, y, *n)
}

func uniform(rng *rand.Rand, n, d int) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 2*rng.Float64()-1)
		}
	}
	return x
}

// write writes rows [0, n) to NAME-train.csv and the rest to NAME-test.csv,
// with a header line, inputs then the target.
func write(dir, name string, x *mat.Dense, y []float64, n int) {
	_, d := x.Dims()
	for _, part := range []struct {
		file   string
		lo, hi int
	}{{name + "-train.csv", 0, n}, {name + "-test.csv", n, len(y)}} {
		fp, err := os.Create(filepath.Join(dir, part.file))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriter(fp)
		for j := 0; j < d; j++ {
			fmt.Fprintf(w, "x%d,", j+1)
		}
		w.WriteString("y\n")
		for i := part.lo; i < part.hi; i++ {
			for j := 0; j < d; j++ {
				w.WriteString(strconv.FormatFloat(x.At(i, j), 'g', 17, 64))
				w.WriteByte(',')
			}
			w.WriteString(strconv.FormatFloat(y[i], 'g', 17, 64))
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			log.Fatal(err)
		}
		if err := fp.Close(); err != nil {
			log.Fatal(err)
		}
	}
}
