//go:build !unix

package repro

import "os"

// lockingWorks reports whether tryLock excludes other processes here.
const lockingWorks = false

// tryLock only opens (or creates) path on this platform: there is no flock(2), so two
// runners on one directory are not detected (see Runner).
func tryLock(path string, create bool) (f *os.File, held bool, err error) {
	if f, err = openLockFile(path, create); err != nil {
		return nil, true, err
	}
	return f, true, nil
}
