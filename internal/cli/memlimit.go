package cli

import (
	"errors"
	"math"
	"math/bits"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// defaultMemoryLimitRatio is --memory-limit-ratio's default: the Go memory
// limit is 90% of the container's memory limit (less the CUE workers'
// share), the rest for what the collector does not count (the binary's
// pages, thread stacks, cgo).
const defaultMemoryLimitRatio = 0.9

// cueWorkerOverhead is what a CUE worker process takes beside its heap
// (--cue-worker-memory): its stacks, runtime and pages of its own.
const cueWorkerOverhead = 16 << 20

// minDerivedMemoryLimit is the smallest Go memory limit derived from the
// container's: below it the limit would keep the collector running all
// the time, and none is set (the log says why).
const minDerivedMemoryLimit = 32 << 20

// noLimit is a container memory limit taken for none: cgroup v1 writes
// "no limit" as a number near math.MaxInt64, which no ratio of would fit
// an int64 once converted back from a float.
const noLimit = 1 << 62

// memoryLimit is what memoryLimit.apply decides from.
type memoryLimit struct {
	ratio float64
	// reserved is the container's memory left to other processes of the
	// container (the CUE workers).
	reserved uint64
	lookup   func(string) (string, bool)
	// container reads the container's memory limit (the cgroup's);
	// memlimit.ErrNoLimit when it has none.
	container func() (uint64, error)
	// set is debug.SetMemoryLimit.
	set func(int64) int64
}

// apply sets the Go memory limit to ratio of the container's memory limit
// less reserved, unless the GOMEMLIMIT environment variable is set (the
// runtime has applied it), ratio is 0, or the container has no limit, and
// logs which applies. It returns the limit it set, 0 when it set none.
func (m memoryLimit) apply(log logr.Logger) int64 {
	if v, ok := m.lookup("GOMEMLIMIT"); ok && v != "" {
		log.Info("memory limit: GOMEMLIMIT is set and applies; --memory-limit-ratio is ignored", "GOMEMLIMIT", v)
		return 0
	}
	if m.ratio == 0 {
		log.Info("memory limit: none (--memory-limit-ratio=0)")
		return 0
	}
	c, err := m.container()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit) || errors.Is(err, memlimit.ErrNoCgroup) || (err == nil && c >= noLimit):
		log.Info("memory limit: none (the container has no memory limit)")
		return 0
	case err != nil:
		log.Info("memory limit: none (the container's memory limit could not be read)", "error", err.Error())
		return 0
	}
	if c <= m.reserved {
		log.Info("memory limit: none (the CUE workers may take all of the container's memory limit)", "containerBytes", c, "cueWorkersBytes", m.reserved)
		return 0
	}
	limit := int64(m.ratio * float64(c-m.reserved))
	if limit < minDerivedMemoryLimit {
		log.Info("memory limit: none (what the container's memory limit leaves the server is too small to set one)", "containerBytes", c, "cueWorkersBytes", m.reserved, "bytes", limit)
		return 0
	}
	m.set(limit)
	log.Info("memory limit: from the container's", "bytes", limit, "containerBytes", c, "cueWorkersBytes", m.reserved, "ratio", m.ratio)
	return limit
}

// cueReserved is the container's memory the CUE workers may take: as
// many workers as --cue-workers allows (0: the default of cuelang's
// Workers), each its --cue-worker-memory and an overhead; none when CUE
// evaluates in the server (-1). Flags too large to multiply give the
// most a uint64 holds, not a product wrapped around to a small one.
func cueReserved(workers int, workerMemory int64, defaultWorkers int) uint64 {
	switch {
	case workers < 0:
		return 0
	case workers == 0:
		workers = defaultWorkers
	}
	hi, lo := bits.Mul64(uint64(workers), uint64(max(workerMemory, 0))+cueWorkerOverhead)
	if hi != 0 {
		return math.MaxUint64 // more than any container has
	}
	return lo
}
