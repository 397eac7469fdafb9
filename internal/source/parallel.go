package source

import (
	"runtime"
	"sync"
)

// parallelMin is the number of items below which work is done on the
// calling goroutine: starting workers costs more than it saves.
const parallelMin = 64

// ForEach calls fn(i) for every i in [0, n), spread over GOMAXPROCS
// goroutines when n is large enough. fn must only write to its own index's
// results.
func ForEach(n int, fn func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < parallelMin || workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	workers = min(workers, n/(parallelMin/2))
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		wg.Go(func() {
			for i := start; i < end; i++ {
				fn(i)
			}
		})
	}
	wg.Wait()
}
