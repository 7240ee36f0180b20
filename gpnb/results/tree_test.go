package results

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoFinishedCheckpointTracked: a job of the results/ tree that has its
// result.json keeps no checkpoint in git (the runner deletes it once the
// result is written; only an unfinished job's checkpoint may be committed,
// once, when work on it stops).
func TestNoFinishedCheckpointTracked(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (git rev-parse: %v): the tracked files cannot be listed", err)
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--", "results").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	tracked := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		tracked[f] = true
	}
	n := 0
	for f := range tracked {
		if path.Base(f) != "checkpoint" {
			continue
		}
		n++
		res := path.Join(path.Dir(f), ResultFile)
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(res))); err == nil || tracked[res] {
			t.Errorf("%s is tracked but its job has finished (%s): git rm --cached it", f, res)
		}
	}
	t.Logf("%d tracked files under results/, %d of them checkpoints of unfinished jobs", len(tracked)-1, n)
}
