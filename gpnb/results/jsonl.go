package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadJSONLines reads a file of JSON objects, one a line (blank lines
// skipped), as results/gpu's Python scripts write their runs, or a file
// that holds one JSON object over any number of lines (gpnb solve --json).
func ReadJSONLines(path string) ([]map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var one map[string]any
	if err := json.Unmarshal(b, &one); err == nil {
		return []map[string]any{one}, nil
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrBadRecord, path, n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// JSONLinesTable is a row per object of rows and a column per field spec,
// key[:digits][=header]: a number with digits decimals (none given: as
// JSON writes it), a string as it is, "—" for a missing key. The column
// "outcome" says "finished", or an object's "error" up to its first full
// stop.
func JSONLinesTable(rows []map[string]any, specs string) (*Table, error) {
	t := &Table{Title: "Runs"}
	type col struct {
		key    string
		digits int
	}
	var cols []col
	for _, f := range strings.Split(specs, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		c := col{digits: -1}
		f, header, _ := strings.Cut(f, "=")
		if a, b, ok := strings.Cut(f, ":"); ok {
			d, err := strconv.Atoi(b)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("column %q: write decimals as key:2", f)
			}
			f, c.digits = a, d
		}
		c.key = f
		if header == "" {
			header = f
		}
		cols = append(cols, c)
		t.Columns = append(t.Columns, Column{Name: header})
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no column given: name the keys to show, e.g. dataset,train_seconds:1")
	}
	for _, m := range rows {
		var row Row
		for _, c := range cols {
			row = append(row, jsonCell(m, c.key, c.digits))
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func jsonCell(m map[string]any, key string, digits int) Cell {
	if key == "outcome" {
		e, ok := m["error"].(string)
		if !ok {
			return Text("finished")
		}
		first, _, _ := strings.Cut(e, ".")
		return Text(first)
	}
	switch v := m[key].(type) {
	case float64:
		if digits < 0 {
			return Verbatim(strconv.FormatFloat(v, 'g', -1, 64))
		}
		return Number(v, digits, "")
	case string:
		return Text(v)
	case bool:
		return Text(strconv.FormatBool(v))
	case nil:
		return Missing()
	default:
		b, _ := json.Marshal(v)
		return Text(string(b))
	}
}
