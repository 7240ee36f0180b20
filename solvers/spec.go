package solvers

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Every Method of this package is its own serialisable description: a struct
// of plain exported fields. MarshalMethod writes it as one JSON object, its
// fields plus "name"; UnmarshalMethod reads that back, refusing unknown
// fields, so no mirror struct can forget a parameter. For encoding/gob, the
// methods are registered under stable names, so a Method held in an
// interface field (gpnb.Config.Solver) encodes as it is.
func init() {
	for _, m := range Methods() {
		gob.RegisterName("gpnb/solvers."+reflect.TypeOf(m).Name(), m)
	}
}

// Methods returns each method of this package with its zero (default)
// configuration, in the order cg, ap, sgd, cholesky.
func Methods() []Method { return []Method{CG{}, AP{}, SGD{}, Cholesky{}} }

// Canonical returns m as a value of its method type (a *CG becomes a CG), so
// that two methods compare with ==; nil and methods of other packages are
// returned unchanged.
func Canonical(m Method) Method {
	if m == nil {
		return nil
	}
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && !v.IsNil() {
		if e, ok := v.Elem().Interface().(Method); ok {
			return e
		}
	}
	return m
}

// MarshalMethod returns m as a JSON object: "name" (as Method.Name spells
// it) and m's fields under their JSON names, e.g.
// {"name":"sgd","batch_size":1000,"raw_learning_rate":90}. Zero fields,
// which mean the method's defaults, are left out.
func MarshalMethod(m Method) ([]byte, error) {
	m = Canonical(m)
	if !known(m) {
		return nil, fmt.Errorf("%w: method %T is not one of this package's (cg, ap, sgd, cholesky) and cannot be serialised", ErrSettings, m)
	}
	fields, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	name, _ := json.Marshal(m.Name())
	out := append([]byte(`{"name":`), name...)
	if len(fields) > 2 { // not "{}"
		out = append(append(out, ','), fields[1:]...)
		return out, nil
	}
	return append(out, '}'), nil
}

// UnmarshalMethod parses what MarshalMethod writes. A missing or unknown
// name, or a field the named method does not have, is an ErrSettings error.
func UnmarshalMethod(b []byte) (Method, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: solver method: %v", ErrSettings, err)
	}
	var name string
	if err := json.Unmarshal(raw["name"], &name); err != nil || name == "" {
		return nil, fmt.Errorf("%w: solver method %s has no \"name\": give one of cg, ap, sgd, cholesky", ErrSettings, b)
	}
	m, err := ParseMethod(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSettings, err)
	}
	delete(raw, "name")
	rest, _ := json.Marshal(raw)
	p := reflect.New(reflect.TypeOf(m))
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p.Interface()); err != nil {
		return nil, fmt.Errorf("%w: solver method %q: %v (its fields are %s)", ErrSettings, name, err, strings.Join(FieldNames(m), ", "))
	}
	return p.Elem().Interface().(Method), nil
}

// FieldNames returns the JSON names of m's parameters, sorted.
func FieldNames(m Method) []string {
	t := reflect.TypeOf(Canonical(m))
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func known(m Method) bool {
	switch m.(type) {
	case CG, AP, SGD, Cholesky:
		return true
	}
	return false
}

// Check returns the ErrSettings error that m's Start would return for its
// parameters (on any n), or nil.
func Check(m Method) error {
	switch m := Canonical(m).(type) {
	case CG:
		return m.check()
	case AP:
		_, err := m.blockSize(1)
		return err
	case SGD:
		_, _, _, err := m.resolved(1)
		return err
	case Cholesky:
		return nil
	case nil:
		return fmt.Errorf("%w: no solver method: use CG, AP, SGD or Cholesky", ErrSettings)
	}
	return fmt.Errorf("%w: method %T is not one of this package's (cg, ap, sgd, cholesky)", ErrSettings, m)
}
