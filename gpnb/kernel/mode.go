package kernel

import (
	"fmt"
	"strings"
)

// Mode says how an Operator holds K_θ(X,X).
type Mode int

const (
	// ModeAuto picks ModeDense when the n×n cache fits Options.MemoryBudget
	// and ModeMatrixFree otherwise.
	ModeAuto Mode = iota
	// ModeDense builds K once per θ and multiplies with gemm.
	ModeDense
	// ModeMatrixFree computes row tiles of K on the fly for every product,
	// using O(n·d) memory.
	ModeMatrixFree
)

// String returns the mode's name as ParseMode accepts it ("dense").
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeDense:
		return "dense"
	case ModeMatrixFree:
		return "matrixfree"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// MarshalText returns String().
func (m Mode) MarshalText() ([]byte, error) {
	if m < ModeAuto || m > ModeMatrixFree {
		return nil, fmt.Errorf("kernel: unknown operator mode %d: use one of auto, dense, matrixfree", int(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses a mode as ParseMode does.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err == nil {
		*m = v
	}
	return err
}

// ParseMode parses auto, dense or matrixfree (case-insensitive;
// "matrix-free", "mf" and "tiled" are accepted aliases).
func ParseMode(s string) (Mode, error) {
	switch strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(strings.TrimSpace(s))) {
	case "auto", "":
		return ModeAuto, nil
	case "dense", "cache", "cached":
		return ModeDense, nil
	case "matrixfree", "mf", "tiled", "free":
		return ModeMatrixFree, nil
	}
	return 0, fmt.Errorf("kernel: unknown operator mode %q: use one of auto, dense, matrixfree", s)
}
