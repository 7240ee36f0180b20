//go:build unix

package repro

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockingWorks reports whether tryLock excludes other processes here.
const lockingWorks = true

// tryLock opens path (creating it when create is true) and takes an exclusive flock(2) on it
// without blocking. held is false when another open file holds the lock — in
// practice another gpnb reproduce, since the kernel drops a lock when its
// process ends, however it ends. A conflict is retried a few times over
// ~0.2 s so that a brief probe (Plan's) never makes a runner skip a job. An
// error (a file system without flock, say) leaves f nil and held true: the
// caller goes on unlocked, as before locking existed.
func tryLock(path string, create bool) (f *os.File, held bool, err error) {
	if f, err = openLockFile(path, create); err != nil {
		return nil, true, err
	}
	for attempt := 0; ; attempt++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK) && attempt < 4:
			time.Sleep(50 * time.Millisecond)
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, false, nil
		}
		f.Close()
		return nil, true, err
	}
}
