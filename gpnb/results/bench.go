package results

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Benchmark is one line of a `go test -bench` log: the benchmark's name
// (without "Benchmark" and the -GOMAXPROCS suffix) and its metrics by
// unit, as the log writes them.
type Benchmark struct {
	Set, Name string
	Metrics   map[string]string
	Units     []string // in the log's order
}

var (
	metricRe = regexp.MustCompile(`([0-9.]+) (\S+)`)
	procsRe  = regexp.MustCompile(`-\d+$`)
)

// ReadBenchmarks reads the Benchmark lines of a go test -bench log.
func ReadBenchmarks(set, path string) ([]Benchmark, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Benchmark
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		fields := strings.Fields(line)
		b := Benchmark{Set: set, Name: procsRe.ReplaceAllString(strings.TrimPrefix(fields[0], "Benchmark"), ""), Metrics: map[string]string{}}
		for _, m := range metricRe.FindAllStringSubmatch(line[len(fields[0]):], -1) {
			if _, dup := b.Metrics[m[2]]; !dup {
				b.Units = append(b.Units, m[2])
			}
			b.Metrics[m[2]] = m[1]
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s holds no Benchmark line of go test -bench", ErrNoResults, path)
	}
	return out, nil
}

// BenchColumn is a column of BenchTable: the first of Units a benchmark
// reports (units separated by "|" in ParseBenchColumns); with Ref, the
// value of the same benchmark in set Ref, or with Ratio that value over
// this one.
type BenchColumn struct {
	Units       []string
	Ref, Header string
	Ratio       bool
}

// ParseBenchColumns parses unit[|unit...][@set[:ratio]][=header], comma
// separated.
func ParseBenchColumns(s string) []BenchColumn {
	var out []BenchColumn
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var c BenchColumn
		f, c.Header, _ = strings.Cut(f, "=")
		f, ref, _ := strings.Cut(f, "@")
		c.Ref, _, c.Ratio = strings.Cut(ref, ":ratio")
		c.Units = strings.Split(f, "|")
		out = append(out, c)
	}
	return out
}

// BenchTable is one row per benchmark of the sets other than those only
// referred to, with the set when there are several, the name and the
// columns; no columns: every unit the benchmarks report. A missing value
// is "—".
func BenchTable(all []Benchmark, cols []BenchColumn) *Table {
	refs := map[string]bool{}
	for _, c := range cols {
		if c.Ref != "" {
			refs[c.Ref] = true
		}
	}
	var rows []Benchmark
	sets := map[string]bool{}
	for _, b := range all {
		if !refs[b.Set] {
			rows = append(rows, b)
			sets[b.Set] = true
		}
	}
	if len(cols) == 0 {
		seen := map[string]bool{}
		for _, b := range rows {
			for _, u := range b.Units {
				if !seen[u] {
					seen[u] = true
					cols = append(cols, BenchColumn{Units: []string{u}})
				}
			}
		}
	}
	t := &Table{Title: "Benchmarks"}
	if len(sets) > 1 {
		t.Columns = append(t.Columns, Column{Name: "set", Merge: true})
	}
	t.Columns = append(t.Columns, Column{Name: "benchmark"})
	for _, c := range cols {
		t.Columns = append(t.Columns, Column{Name: c.header()})
	}
	for _, b := range rows {
		var row Row
		if len(sets) > 1 {
			row = append(row, Text(b.Set))
		}
		row = append(row, Text(b.Name))
		for _, c := range cols {
			row = append(row, c.cell(b, all))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func (c BenchColumn) header() string {
	switch {
	case c.Header != "":
		return c.Header
	case c.Ratio:
		return c.Ref + " / this"
	case c.Ref != "":
		return c.Units[0] + " (" + c.Ref + ")"
	}
	return c.Units[0]
}

// value is the first of c's units that b reports, "" for none.
func (c BenchColumn) value(b Benchmark) string {
	for _, u := range c.Units {
		if v, ok := b.Metrics[u]; ok {
			return v
		}
	}
	return ""
}

func (c BenchColumn) cell(b Benchmark, all []Benchmark) Cell {
	if c.Ref == "" {
		return benchText(c.value(b))
	}
	for _, o := range all {
		if o.Set != c.Ref || o.Name != b.Name {
			continue
		}
		if !c.Ratio {
			return benchText(c.value(o))
		}
		x, e1 := strconv.ParseFloat(c.value(o), 64)
		y, e2 := strconv.ParseFloat(c.value(b), 64)
		if e1 != nil || e2 != nil || y == 0 {
			return Missing()
		}
		return Number(x/y, 2, "×")
	}
	return Missing()
}

// benchText is a value as the log writes it, "—" for none.
func benchText(v string) Cell {
	if v == "" {
		return Missing()
	}
	return Verbatim(v)
}

// TestsTable counts the tests of `go test -v` logs, a row a log: the
// "--- PASS", "--- SKIP" and "--- FAIL" lines (subtests included).
func TestsTable(labels, paths []string) (*Table, error) {
	t := &Table{Title: "Tests", Columns: []Column{{Name: "log"}, {Name: "passed"}, {Name: "skipped"}, {Name: "failed"}}}
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var n [3]int
		for _, line := range strings.Split(string(b), "\n") {
			for k, w := range []string{"--- PASS", "--- SKIP", "--- FAIL"} {
				if strings.Contains(line, w) {
					n[k]++
				}
			}
		}
		t.Rows = append(t.Rows, Row{Text(labels[i]), Number(float64(n[0]), 0, ""), Number(float64(n[1]), 0, ""), Number(float64(n[2]), 0, "")})
	}
	return t, nil
}
