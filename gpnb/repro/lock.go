package repro

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LockFile is the name of a job's lock, DIR/jobs/<id>/lock. The runner that
// runs a job holds an exclusive flock(2) on it for as long as it does, and
// writes its process id, host and start time into it; a second gpnb
// reproduce on the same directory skips the job instead of running it twice
// (two runners writing one checkpoint would corrupt each other's work).
// Locks are released by the kernel when their process ends, however it
// ends, so a killed runner leaves no stale lock. The file is removed when
// the job finishes; an unfinished job's file stays (it is empty of meaning
// without the flock). On systems without flock (not unix) nothing is
// detected.
const LockFile = "lock"

// openLockFile opens a lock file for tryLock, creating it when create is
// true.
func openLockFile(path string, create bool) (*os.File, error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE
	}
	return os.OpenFile(path, flag, 0o644)
}

// lockOwner is what a runner writes into a lock it holds.
type lockOwner struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host,omitempty"`
	Task  string    `json:"task,omitempty"` // SchedulerTask: "slurm job 123_4"
	Since time.Time `json:"since"`
}

func (o lockOwner) String() string {
	s := fmt.Sprintf("pid %d", o.PID)
	if o.Host != "" {
		s += " on " + o.Host
	}
	if o.Task != "" {
		s += ", " + o.Task
	}
	return s + ", since " + o.Since.UTC().Format("2006-01-02 15:04:05 MST")
}

// heldLock is a lock this process holds.
type heldLock struct {
	f    *os.File
	path string
}

// release drops the lock; remove deletes the file first (while it is still
// held, so that no other runner can be holding it at that moment).
func (l *heldLock) release(remove bool) {
	if l == nil || l.f == nil {
		return
	}
	if remove {
		os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
}

// acquire takes the lock at path for owner. When another process holds it,
// l is nil and other describes that process. err (with l non-nil and other
// empty) means locking is not possible here and the caller goes on unlocked.
func acquire(path string, owner lockOwner) (l *heldLock, other string, err error) {
	f, held, err := tryLock(path, true)
	if !held {
		return nil, describeOwner(path), nil
	}
	if f != nil {
		// Best effort: the owner is only shown to whoever finds the lock held.
		b, _ := json.Marshal(owner)
		if f.Truncate(0) == nil {
			f.WriteAt(append(b, '\n'), 0)
		}
	}
	return &heldLock{f: f, path: path}, "", err
}

// describeOwner reads the owner a runner wrote into a lock file.
func describeOwner(path string) string {
	b, err := os.ReadFile(path)
	var o lockOwner
	if err != nil || json.Unmarshal(b, &o) != nil || o.PID == 0 {
		return "another process"
	}
	return "another gpnb reproduce (" + o.String() + ")"
}

// heldElsewhere reports, without creating anything, whether another process
// holds the lock at path, and who it is.
func heldElsewhere(path string) (bool, string) {
	if !lockingWorks {
		return false, ""
	}
	f, held, err := tryLock(path, false)
	switch {
	case !held:
		return true, describeOwner(path)
	case err == nil && f != nil:
		f.Close()
	}
	return false, "" // free, missing (no runner has run the job), or not lockable
}

// claimStatus picks the status file this run writes: DIR/status.json, or,
// while other runners write that one, the first free DIR/status-K.json
// (K = 2, 3, ...). Each is guarded by a lock DIR/.status[-K].lock held for
// the whole run, so that concurrent runners on one directory do not
// overwrite each other's progress.
func claimStatus(dir string, owner lockOwner) (path string, l *heldLock, err error) {
	for k := 1; k <= 32; k++ {
		name, lock := StatusFile, ".status.lock"
		if k > 1 {
			name, lock = fmt.Sprintf("status-%d.json", k), fmt.Sprintf(".status-%d.lock", k)
		}
		l, other, err := acquire(filepath.Join(dir, lock), owner)
		if other == "" {
			return filepath.Join(dir, name), l, err
		}
	}
	return filepath.Join(dir, fmt.Sprintf("status-pid%d.json", owner.PID)), nil, nil
}
