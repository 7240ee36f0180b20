//go:build ignore

// export writes the z-scored training subset and test part of a dataset
// exactly as gpnb reads them (data.Open with the same name, split, subset
// and subset seed, and test file for a CSV file), so that scikit-learn fits
// the very same numbers:
//
//	go run results/speed/fast-preset/export.go -data pol -split 0 -subset 2000 -subset-seed 58 -out DIR
//	go run results/speed/fast-preset/export.go -data train.csv -test test.csv -out DIR
//
// DIR/train.csv and DIR/test.csv hold one point a line, the d inputs then
// the target, written with %.17g (every float64 read back exactly), and
// DIR/fingerprint.txt the data's fingerprint (data.Dataset.Fingerprint).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/gonum/mat"

	"github.com/gpnb/gpnb/data"
)

func main() {
	name := flag.String("data", "pol", "dataset: a UCI name, synthetic-N-D-SEED or a CSV file")
	test := flag.String("test", "", "CSV: the test file")
	split := flag.Int("split", 0, "split")
	subset := flag.Int("subset", 0, "training points (0: all)")
	seed := flag.Uint64("subset-seed", 0, "seed of the subset")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if *out == "" {
		log.Fatal("give -out DIR")
	}
	opts := []data.Option{data.Split(*split)}
	if *test != "" {
		opts = []data.Option{data.TestFile(*test)}
	}
	if *subset > 0 {
		opts = append(opts, data.Subset(*subset), data.SubsetSeed(*seed))
	}
	ds, err := data.Open(*name, opts...)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	write(filepath.Join(*out, "train.csv"), ds.XTrain, ds.YTrain)
	write(filepath.Join(*out, "test.csv"), ds.XTest, ds.YTest)
	if err := os.WriteFile(filepath.Join(*out, "fingerprint.txt"), []byte(ds.Fingerprint()+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println(ds)
}

func write(path string, x *mat.Dense, y []float64) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := bufio.NewWriter(f)
	n, d := x.Dims()
	for i := 0; i < n; i++ {
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
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
