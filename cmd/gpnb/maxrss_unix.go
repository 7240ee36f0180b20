//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"runtime"
	"syscall"
)

// maxRSS returns the process's peak resident set size in bytes, or -1 when
// the system does not say.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes on macOS
	}
	return int64(ru.Maxrss) * 1024 // kilobytes elsewhere
}
