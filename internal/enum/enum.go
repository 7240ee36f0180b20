// Package enum spells the small enumerations of gpnb's settings (values 0,
// 1, ... with one name each) as text, for their String, MarshalText and
// UnmarshalText methods, so that every package's settings print, parse and
// reject unknown values alike.
package enum

import (
	"fmt"
	"strings"
)

// Enum describes an enumeration T: the names of its values 0, 1, ... and
// how its errors read.
type Enum[T ~int] struct {
	Type  string   // T's Go name, for String of a value out of range: "APPick(7)"
	What  string   // what a value is, in error messages: "AP pick rule"
	Err   error    // what an unknown value or name wraps
	Names []string // the name of each value, in order
	// Aliases are other names UnmarshalText accepts (may be nil).
	Aliases map[string]T
}

// Name returns the name of v, or "Type(v)" for a value out of range, as a
// String method should.
func (e Enum[T]) Name(v T) string {
	if v >= 0 && int(v) < len(e.Names) {
		return e.Names[v]
	}
	return fmt.Sprintf("%s(%d)", e.Type, v)
}

// Marshal returns the name of v, or an error for a value out of range that
// lists the valid names.
func (e Enum[T]) Marshal(v T) ([]byte, error) {
	if v < 0 || int(v) >= len(e.Names) {
		return nil, fmt.Errorf("%w: unknown %s %d: use one of %s", e.Err, e.What, v, strings.Join(e.Names, ", "))
	}
	return []byte(e.Names[v]), nil
}

// Unmarshal sets *dst to the value named b (case and surrounding spaces
// ignored) or aliased by it; an unknown name is an error that lists the
// valid names, and leaves *dst as it was.
func (e Enum[T]) Unmarshal(dst *T, b []byte) error {
	s := strings.ToLower(strings.TrimSpace(string(b)))
	for i, n := range e.Names {
		if s == n {
			*dst = T(i)
			return nil
		}
	}
	if v, ok := e.Aliases[s]; ok {
		*dst = v
		return nil
	}
	return fmt.Errorf("%w: unknown %s %q: use one of %s", e.Err, e.What, b, strings.Join(e.Names, ", "))
}
