package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"golang.org/x/sync/semaphore"
)

// Admission control: what a review may hold while it waits and while it is
// evaluated.
//
// A review goes through three stages, each bounded:
//
//  1. Its body is read, before anything else is taken, within the review's
//     deadline (the connection's read deadline is set to it), into memory
//     reserved from the body budget as the bytes arrive: a client sending
//     slowly holds only what it has sent, and no evaluation slot. A review
//     whose next bytes do not fit the body budget is answered 503 at once
//     (it never waits holding part of its body: see readBody).
//  2. Its evaluation cost (reviewCost, an estimate from the body) is
//     reserved from the evaluation budget, then an evaluation slot is
//     taken; its body reservation is then given back (the cost includes
//     the body). Both waits end at the review's deadline (HTTP 503).
//  3. It is evaluated, answered, and the reservation released.
//
// The two budgets are separate so that bodies waiting in stage 2 can never
// starve the evaluations they wait for: the evaluation budget is only ever
// held by reviews being evaluated, which finish. The memory reviews hold is
// therefore at most MaxReviewMemory (evaluations) plus half of it (bodies
// read or waiting).

// Memory budget defaults.
const (
	// DefaultReviewMemory is the evaluation budget without GOMEMLIMIT:
	// by reviewCost, room for a review of DefaultMaxReviewBytes of
	// typical Kubernetes objects (the load test's Deployment, Pod,
	// ConfigMap, Service and Namespace cost 4.1 to 5.1 times their size),
	// and for one of 5.7 MiB of the densest JSON ([[],[],...], 44 times).
	DefaultReviewMemory = 256 << 20
	// minReviewMemory is the smallest budget derived from GOMEMLIMIT.
	minReviewMemory = 16 << 20
	// bodyBudgetShare: the body budget is MaxReviewMemory/bodyBudgetShare.
	bodyBudgetShare = 2
	// readChunk is the first reservation of a body whose length is
	// unknown or larger; each next one doubles what the body holds.
	readChunk = 64 << 10
)

// Review cost model (reviewCost). Measured on 3 MB reviews (a Patch rule
// adding a label; GOGC=5 so that the heap peak is the live peak): an array
// of numbers ([1,1,...], 2 bytes an element) peaked at 29.5 times the body,
// about 59 bytes an element; of {} or [] at 27 and 23.5 times (81 and 70
// bytes per element, two punctuation marks each); of "" at 15.5 times
// (46 bytes per element); an object of short members at 7.8 times (66
// bytes per member); one 3 MB string at 2 times. Every element of a tree
// costs a map entry or slice slot, an interface and its boxed value, and
// the elements of arrays and objects are separated by commas, so the cost
// is bounded by costPerByte per byte plus costPerNode per ',', '[' and '{'
// (commas inside strings are counted too, which only overestimates).
const (
	costPerByte = 2  // the body, the response
	costPerNode = 64 // a decoded element (about 60 measured), copy-on-write
)

// reviewCost estimates the memory evaluating body takes, in bytes. It reads
// the body three times at memory speed (bytes.Count), a few microseconds
// for a 10 KB review.
func reviewCost(body []byte) int64 {
	nodes := int64(bytes.Count(body, []byte{','})) + int64(bytes.Count(body, []byte{'['})) + int64(bytes.Count(body, []byte{'{'}))
	return costPerByte*int64(len(body)) + costPerNode*nodes
}

// DefaultMaxReviewMemory is the evaluation budget when Options leave it 0:
// half the Go memory limit (GOMEMLIMIT, debug.SetMemoryLimit; serve
// derives it from the container's) when one is set, else
// DefaultReviewMemory. The other half is for the body budget (half of this
// one), the rule snapshot, the caches of the operator and the collector's
// headroom: a live heap close to the soft limit makes the collector run
// continuously, and answers come late. With a Go memory limit of 230MiB,
// reviews may use 115 MiB in evaluation plus 57.5 MiB of bodies read or
// waiting, 172.5 MiB in all, leaving 57.5 MiB for the rest.
func DefaultMaxReviewMemory() int64 {
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		return max(limit/2, minReviewMemory)
	}
	return DefaultReviewMemory
}

// budget holds the two reservations of admission control.
type budget struct {
	evalCap, bodyCap int64
	eval, body       *semaphore.Weighted
}

func newBudget(total int64) *budget {
	b := &budget{evalCap: total, bodyCap: max(total/bodyBudgetShare, 1)}
	b.eval = semaphore.NewWeighted(b.evalCap)
	b.body = semaphore.NewWeighted(b.bodyCap)
	return b
}

// overloaded is the answer to a review that could not be admitted before
// its deadline.
var overloaded = &httpError{http.StatusServiceUnavailable, "modwright: overloaded: the review could not be admitted (memory budget, evaluation slots) before its deadline"}

// bodiesOverloaded is the answer to a review whose body does not fit the
// body budget now.
var bodiesOverloaded = &httpError{http.StatusServiceUnavailable, "modwright: overloaded: the bodies of the reviews being read fill their memory budget"}

// readBody reads r's body into buf, within ctx's deadline and reserving
// what it holds from the body budget first. It returns the body and the
// bytes reserved, to give back whatever the error.
func (d *Dragnet) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, buf []byte) (body []byte, held int64, herr *httpError) {
	return readBody(ctx, w, r, buf, d.opts.MaxReviewBytes, d.mem)
}

// readBody reads r's body into buf, at most maxBytes, within ctx's
// deadline, reserving what it holds from mem's body budget first (the
// dragnet and the other webhooks' Handler share it).
func readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, buf []byte, maxBytes int64, mem *budget) (body []byte, held int64, herr *httpError) {
	if r.ContentLength > maxBytes {
		return buf, 0, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("modwright: the review is %d bytes, more than the limit of %d", r.ContentLength, maxBytes)}
	}
	// net/http's body reads do not observe the request's context: bound
	// them with the connection's (HTTP/1) or stream's (HTTP/2) read
	// deadline, cleared once the body is read. A ResponseWriter that
	// cannot (http.ErrNotSupported) is read as it comes, and the server's
	// own read timeout is the bound.
	rc := http.NewResponseController(w)
	deadlineSet := false
	if dl, ok := ctx.Deadline(); ok {
		deadlineSet = rc.SetReadDeadline(dl) == nil
	}
	defer func() {
		if herr == nil {
			if deadlineSet {
				_ = rc.SetReadDeadline(time.Time{})
			}
			return
		}
		if r.ProtoMajor == 1 {
			// Whatever remains of the body stays unread: close the
			// connection after the answer, or net/http would first try
			// to read the rest (up to 256 KiB) from a client that may
			// never send it.
			w.Header().Set("Connection", "close")
		}
	}()
	in := http.MaxBytesReader(w, r.Body, maxBytes)
	b := buf[:0]
	for {
		if int64(len(b)) == held {
			// Reserve before reading (and allocating): at least
			// readChunk, doubling, never more than the body can be.
			n := max(int64(len(b)), readChunk)
			if r.ContentLength >= 0 {
				n = min(n, r.ContentLength+1-int64(len(b)))
			}
			n = min(n, maxBytes+1-int64(len(b)))
			if held+n > mem.bodyCap {
				return b, held, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("modwright: the review is larger than the body memory budget of %d bytes (half the review memory budget)", mem.bodyCap)}
			}
			// Never wait here: a review holding part of its body while
			// waiting for more memory could wait on others doing the same
			// (and over HTTP/2, the bytes a waiting stream has not read
			// fill the connection's flow-control window and stall every
			// other stream on it, including those that hold memory).
			if !mem.body.TryAcquire(n) {
				return b, held, bodiesOverloaded
			}
			held += n
			if int64(cap(b)) < held {
				nb := make([]byte, len(b), held)
				copy(nb, b)
				b = nb
			}
		}
		m, err := in.Read(b[len(b):held])
		b = b[:len(b)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				return b, held, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("modwright: the review is larger than the limit of %d bytes", maxBytes)}
			case errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil:
				return b, held, &httpError{http.StatusRequestTimeout, "modwright: the review's body did not arrive before its deadline"}
			}
			return b, held, &httpError{http.StatusBadRequest, "modwright: reading the review: " + err.Error()}
		}
	}
	if len(b) == 0 {
		return b, held, &httpError{http.StatusBadRequest, "modwright: empty body; expected an AdmissionReview"}
	}
	return b, held, nil
}

// admit reserves cost from the evaluation budget and takes an evaluation
// slot, waiting at most until ctx's deadline; release gives both back.
func (d *Dragnet) admit(ctx context.Context, cost int64) *httpError {
	if cost > d.mem.evalCap {
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("modwright: evaluating this review would take about %d bytes, more than the review memory budget of %d", cost, d.mem.evalCap)}
	}
	// TryAcquire first: Acquire calls ctx.Done(), which allocates the
	// channel of a context nobody waited on yet.
	if !d.mem.eval.TryAcquire(cost) {
		if err := d.mem.eval.Acquire(ctx, cost); err != nil {
			return overloaded
		}
	}
	select {
	case d.slots <- struct{}{}:
	default:
		select {
		case d.slots <- struct{}{}:
		case <-ctx.Done():
			d.mem.eval.Release(cost)
			return overloaded
		}
	}
	d.opts.Metrics.InFlight(1)
	return nil
}

func (d *Dragnet) release(cost int64) {
	<-d.slots
	d.mem.eval.Release(cost)
	d.opts.Metrics.InFlight(-1)
}

// MemoryBudget returns the budgets in force, in bytes: evaluations (the
// MaxReviewMemory option or its default) and bodies read or waiting, for
// the start-up log.
func (d *Dragnet) MemoryBudget() (evaluation, bodies int64) {
	return d.mem.evalCap, d.mem.bodyCap
}
