//go:build cuda || cudaemu

package cuda

// group returns the NC of a column group of width kg (1 ≤ kg ≤ maxNC) for
// kernels with steps of step, and its index in their tables.
func group(kg, step int) (nc, idx int) {
	nc = (kg + step - 1) / step * step
	return nc, nc/step - 1
}

// dVariant returns the index in dVariants of the kernel variant for d.
func dVariant(d int) int {
	switch {
	case d <= 8:
		return 0
	case d <= 32:
		return 1
	}
	return 2
}
