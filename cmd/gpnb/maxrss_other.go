//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

// maxRSS returns -1: this system has no getrusage, so the peak resident
// set size is reported as unknown.
func maxRSS() int64 { return -1 }
