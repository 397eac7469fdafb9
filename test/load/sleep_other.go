//go:build !linux

package load

import "time"

// sleepPrecise sleeps for d (see the Linux version).
func sleepPrecise(d time.Duration) { time.Sleep(d) }
