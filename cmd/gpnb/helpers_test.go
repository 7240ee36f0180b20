package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// runCmd runs the gpnb command line (args[0] the command) in-process, as
// main does, and returns the exit code, stdout and stderr. It may be called
// from several goroutines at once.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// runJSON runs the gpnb command line, which must succeed, and decodes its
// stdout (what --json - prints) into a T; it returns stderr too.
func runJSON[T any](t *testing.T, args ...string) (T, string) {
	t.Helper()
	var v T
	code, out, stderr := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("gpnb %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("gpnb %s: bad JSON %q: %v", strings.Join(args, " "), out, err)
	}
	return v, stderr
}

// readJSON decodes the JSON file at path (a command's --json FILE) into a T.
func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
