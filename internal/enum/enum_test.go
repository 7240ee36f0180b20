package enum

import (
	"errors"
	"strings"
	"testing"
)

type colour int

var errKind = errors.New("invalid thing")

var colours = Enum[colour]{Type: "colour", What: "colour", Err: errKind, Names: []string{"red", "green"}, Aliases: map[string]colour{"verde": 1}}

func TestEnumRoundTrip(t *testing.T) {
	for v := range colour(len(colours.Names)) {
		b, err := colours.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := colour(-1)
		if err := colours.Unmarshal(&got, b); err != nil || got != v {
			t.Errorf("Unmarshal(%q) = %d, %v; want %d", b, got, err, v)
		}
	}
	var got colour
	if err := colours.Unmarshal(&got, []byte(" GREEN ")); err != nil || got != 1 {
		t.Errorf("Unmarshal(\" GREEN \") = %d, %v; want 1 (case and spaces ignored)", got, err)
	}
	got = 0
	if err := colours.Unmarshal(&got, []byte("verde")); err != nil || got != 1 {
		t.Errorf("Unmarshal of an alias = %d, %v; want 1", got, err)
	}
	if s := colours.Name(1); s != "green" {
		t.Errorf("Name(1) = %q", s)
	}
	if s := colours.Name(5); s != "colour(5)" {
		t.Errorf("Name(5) = %q, want colour(5)", s)
	}
}

func TestEnumErrors(t *testing.T) {
	if _, err := colours.Marshal(2); !errors.Is(err, errKind) || err.Error() != "invalid thing: unknown colour 2: use one of red, green" {
		t.Errorf("Marshal(2) error = %v", err)
	}
	got := colour(7)
	err := colours.Unmarshal(&got, []byte("blue"))
	if !errors.Is(err, errKind) || !strings.Contains(err.Error(), `unknown colour "blue": use one of red, green`) || got != 7 {
		t.Errorf("Unmarshal(blue) = %d, %v; want an error and dst unchanged", got, err)
	}
}
