// Package par is the module's one work queue: fixed tiles of work spread
// over goroutines, so that a result whose partition depends on the problem
// size alone has the same bits on any number of cores.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// ForTiles calls fn(w, t) for every tile t < ntiles on up to workers
// goroutines (at least one; workers ≤ 0 means GOMAXPROCS) and returns when
// all have returned. w < workers is the index of the goroutine, for its own
// buffers. Tiles are handed out in order from one shared counter, so a slow
// tile does not hold up the others. fn must determine tile t's output from
// its inputs alone, never from what an earlier tile left in w's buffers:
// then the result does not depend on the schedule, and a partition that
// depends on the problem size only gives the same bits on any number of
// cores. With one worker (or one tile) the tiles run in order on the
// calling goroutine.
func ForTiles(ntiles, workers int, fn func(w, t int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, ntiles))
	if workers == 1 {
		for t := 0; t < ntiles; t++ {
			fn(0, t)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= ntiles {
					return
				}
				fn(w, t)
			}
		}()
	}
	wg.Wait()
}

// Tiles returns the number of tiles of size items that cover n items:
// ⌈n/size⌉.
func Tiles(n, size int) int { return (n + size - 1) / size }

// Span returns the items [lo, hi) of tile t when n items are cut into tiles
// of size: the last tile holds the rest.
func Span(t, n, size int) (lo, hi int) { return t * size, min((t+1)*size, n) }
