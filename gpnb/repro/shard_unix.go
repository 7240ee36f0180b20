//go:build unix

package repro

import (
	"errors"
	"syscall"
)

// lockWait takes an exclusive flock(2) on path (created if missing),
// waiting for another holder to drop it, and returns the function that
// releases it. The holders are runs dealing a grid (Runner.ShardJobs), each
// for as long as it takes to read and rewrite ShardsFile.
func lockWait(path string) (unlock func(), err error) {
	f, err := openLockFile(path, true)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
