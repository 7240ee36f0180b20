// Package enum spells the small enumerations of gpnb's settings (values 0,
// 1, ... with one name each) as text, for their String, MarshalText and
// UnmarshalText methods, so that every package's settings print, parse and
// reject unknown values alike.
package enum

import (
	"fmt"
	"strings"
)

// Names spells the values 0, 1, ... of an enumeration.
type Names []string

// Name returns the name of v, or "typ(v)" for a value out of range, as a
// String method should.
func (e Names) Name(v int, typ string) string {
	if v >= 0 && v < len(e) {
		return e[v]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Marshal returns the name of v, or an error wrapping kind that names what
// the value is and lists the valid names.
func (e Names) Marshal(v int, what string, kind error) ([]byte, error) {
	if v < 0 || v >= len(e) {
		return nil, fmt.Errorf("%w: unknown %s %d: use one of %s", kind, what, v, e)
	}
	return []byte(e[v]), nil
}

// Unmarshal sets *dst to the value named b (case and surrounding spaces
// ignored), or to aliases[b] (may be nil); an unknown name is an error
// wrapping kind that names what the value is and lists the valid names.
func (e Names) Unmarshal(dst *int, b []byte, what string, kind error, aliases map[string]int) error {
	s := strings.ToLower(strings.TrimSpace(string(b)))
	for i, n := range e {
		if s == n {
			*dst = i
			return nil
		}
	}
	if v, ok := aliases[s]; ok {
		*dst = v
		return nil
	}
	return fmt.Errorf("%w: unknown %s %q: use one of %s", kind, what, b, e)
}

// String lists the names, comma-separated.
func (e Names) String() string { return strings.Join(e, ", ") }
