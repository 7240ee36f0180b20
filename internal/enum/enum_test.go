package enum

import (
	"errors"
	"strings"
	"testing"
)

var errKind = errors.New("invalid thing")

func TestNamesRoundTrip(t *testing.T) {
	e := Names{"red", "green"}
	for v := range e {
		b, err := e.Marshal(v, "colour", errKind)
		if err != nil {
			t.Fatal(err)
		}
		got := -1
		if err := e.Unmarshal(&got, b, "colour", errKind, nil); err != nil || got != v {
			t.Errorf("Unmarshal(%q) = %d, %v; want %d", b, got, err, v)
		}
	}
	got := -1
	if err := e.Unmarshal(&got, []byte(" GREEN "), "colour", errKind, nil); err != nil || got != 1 {
		t.Errorf("Unmarshal(\" GREEN \") = %d, %v; want 1 (case and spaces ignored)", got, err)
	}
	if err := e.Unmarshal(&got, []byte("verde"), "colour", errKind, map[string]int{"verde": 1}); err != nil || got != 1 {
		t.Errorf("Unmarshal of an alias = %d, %v; want 1", got, err)
	}
	if s := e.Name(1, "Colour"); s != "green" {
		t.Errorf("Name(1) = %q", s)
	}
	if s := e.Name(5, "Colour"); s != "Colour(5)" {
		t.Errorf("Name(5) = %q, want Colour(5)", s)
	}
}

func TestNamesErrors(t *testing.T) {
	e := Names{"red", "green"}
	if _, err := e.Marshal(2, "colour", errKind); !errors.Is(err, errKind) || err.Error() != "invalid thing: unknown colour 2: use one of red, green" {
		t.Errorf("Marshal(2) error = %v", err)
	}
	got := 7
	err := e.Unmarshal(&got, []byte("blue"), "colour", errKind, nil)
	if !errors.Is(err, errKind) || !strings.Contains(err.Error(), `unknown colour "blue": use one of red, green`) || got != 7 {
		t.Errorf("Unmarshal(blue) = %d, %v; want an error and dst unchanged", got, err)
	}
}
