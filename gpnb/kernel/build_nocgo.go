//go:build !cgo

package kernel

// cgoBuild reports a build with cgo (Build.Cgo).
const cgoBuild = false
