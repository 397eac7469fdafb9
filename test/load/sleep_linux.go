package load

import (
	"syscall"
	"time"
)

// sleepPrecise sleeps for d with the kernel's high-resolution timers. Go's
// timers wake the scheduler through epoll_wait, whose timeout has
// millisecond granularity: a fixed-rate stream paced with time.Sleep sends
// its requests up to a millisecond late, which would count as server
// latency. A nanosleep system call blocks only this goroutine's thread.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
