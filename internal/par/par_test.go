package par

import (
	"sync/atomic"
	"testing"
)

// Every tile runs exactly once, on a worker index below the worker count,
// whatever the count; workers ≤ 0 means GOMAXPROCS.
func TestForTiles(t *testing.T) {
	for _, nt := range []int{0, 1, 7, 100} {
		for _, workers := range []int{-1, 0, 1, 2, 5, 200} {
			counts := make([]atomic.Int32, nt)
			limit := workers
			if limit <= 0 {
				limit = 1 << 30
			}
			var bad atomic.Bool
			ForTiles(nt, workers, func(w, i int) {
				if w < 0 || w >= max(1, min(limit, nt)) {
					bad.Store(true)
				}
				counts[i].Add(1)
			})
			if bad.Load() {
				t.Errorf("ntiles %d, workers %d: a worker index out of range", nt, workers)
			}
			for i := range counts {
				if c := counts[i].Load(); c != 1 {
					t.Errorf("ntiles %d, workers %d: tile %d ran %d times", nt, workers, i, c)
				}
			}
		}
	}
}

func TestSpan(t *testing.T) {
	n, size := 10, 4
	if got := Tiles(n, size); got != 3 {
		t.Fatalf("Tiles(10, 4) = %d, want 3", got)
	}
	want := [][2]int{{0, 4}, {4, 8}, {8, 10}}
	for i, w := range want {
		if lo, hi := Span(i, n, size); lo != w[0] || hi != w[1] {
			t.Errorf("Span(%d) = [%d, %d), want [%d, %d)", i, lo, hi, w[0], w[1])
		}
	}
	if Tiles(0, 4) != 0 {
		t.Error("Tiles(0, 4) != 0")
	}
}
