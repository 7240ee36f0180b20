// Package fieldtest helps tests prove that every field of a configuration
// survives a round trip (through a checkpoint, JSON, command-line flags):
// it lists a struct's exported leaf fields by path and sets any one of them
// to a non-zero value, so that a field added later is covered without
// editing the test.
package fieldtest

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
)

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// Leaves returns the paths ("Settings.RelTolMean") of the exported leaf
// fields of struct type t, in declaration order. Nested structs are
// descended into, except those that marshal as text; interfaces, slices and
// scalars are leaves.
func Leaves(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Type.Kind() == reflect.Struct && !f.Type.Implements(textMarshaler) {
			for _, sub := range Leaves(f.Type) {
				out = append(out, f.Name+"."+sub)
			}
			continue
		}
		out = append(out, f.Name)
	}
	return out
}

// Set sets the leaf field at path of the struct *p to a valid non-zero
// value (an enumeration to its value 1, a number to one that depends on
// seed, a bool to true, a string to one naming seed, a []float64 to dims
// values). It returns an error for a path that is not a settable leaf of a
// kind it knows.
func Set(p any, path string, seed, dims int) error {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("fieldtest: Set needs a pointer to a struct, got %T", p)
	}
	v = v.Elem()
	for _, name := range strings.Split(path, ".") {
		v = v.FieldByName(name)
		if !v.IsValid() {
			return fmt.Errorf("fieldtest: %T has no field %s", p, path)
		}
	}
	// 0.25 .. 0.875, exact in binary; below 1, which some fractions
	// (SGD.Momentum) must be, whatever index a field gets.
	x := float64(seed%6+2) * 0.125
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.Type().Implements(textMarshaler) {
			v.SetInt(1) // an enumeration: its first non-default value
		} else {
			v.SetInt(int64(seed%5 + 3))
		}
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(seed%5 + 3))
	case reflect.Float64:
		v.SetFloat(x)
	case reflect.String:
		v.SetString(fmt.Sprintf("field-%d.ckpt", seed))
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Float64 {
			return fmt.Errorf("fieldtest: %s: slices of %s are not supported", path, v.Type().Elem())
		}
		s := make([]float64, dims)
		for i := range s {
			s[i] = x + float64(i)*0.5
		}
		v.Set(reflect.ValueOf(s))
	default:
		return fmt.Errorf("fieldtest: %s: kind %s is not supported", path, v.Kind())
	}
	return nil
}
