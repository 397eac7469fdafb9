package webhook

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/engine"
)

// enteredHandler tells when a request reached the handler.
func enteredHandler(h http.Handler, entered chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		h.ServeHTTP(w, r)
	})
}

// TestDragnetSlowBodiesHoldNoSlot: clients that send their body slowly
// (more of them than evaluation slots) neither keep a normal review from
// being answered nor hold anything past their own deadline, which answers
// them with an error. Over HTTP/1.1 (one connection each) and HTTP/2 (one
// connection, stalled streams).
func TestDragnetSlowBodiesHoldNoSlot(t *testing.T) {
	const maxInFlight, slow = 2, 4
	good := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(`"a":"b"`, "nginx:1"), "")
	for _, proto := range []string{"HTTP/1.1", "HTTP/2"} {
		t.Run(proto, func(t *testing.T) {
			h, _ := newTestDragnet(t, engine.New(engine.Options{}), func(o *Options) { o.MaxInFlight = maxInFlight })
			entered := make(chan struct{}, 2*slow)
			srv := httptest.NewUnstartedServer(enteredHandler(h, entered))
			if proto == "HTTP/2" {
				srv.EnableHTTP2 = true
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			client := srv.Client()
			client.Timeout = time.Minute // a bound for a broken server, not a measure

			// The slow clients: headers and one byte of a 1,000-byte body,
			// then nothing; each with a 1 s deadline.
			answers := make(chan string, slow)
			var stall sync.WaitGroup
			stall.Add(1)
			defer stall.Done()
			for range slow {
				if proto == "HTTP/1.1" {
					conn, err := net.Dial("tcp", srv.Listener.Addr().String())
					if err != nil {
						t.Fatal(err)
					}
					defer conn.Close()
					fmt.Fprintf(conn, "POST %s?timeout=1s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", DragnetPath)
					go func() {
						_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
						resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
						if err != nil {
							answers <- err.Error()
							return
						}
						resp.Body.Close()
						answers <- resp.Status
					}()
					continue
				}
				pr, pw := io.Pipe()
				defer pw.Close()
				go func() {
					_, _ = pw.Write([]byte("{"))
					stall.Wait()
				}()
				req, err := http.NewRequest(http.MethodPost, srv.URL+DragnetPath+"?timeout=1s", pr)
				if err != nil {
					t.Fatal(err)
				}
				req.ContentLength = 1000
				req.Header.Set("Content-Type", "application/json")
				go func() {
					resp, err := client.Do(req)
					if err != nil {
						answers <- err.Error()
						return
					}
					resp.Body.Close()
					if resp.ProtoMajor != 2 {
						answers <- "not HTTP/2: " + resp.Proto
					}
					answers <- resp.Status
				}()
			}
			for range slow {
				<-entered
			}

			// A normal review is answered while they stall.
			resp, err := client.Post(srv.URL+DragnetPath+"?timeout=10s", "application/json", strings.NewReader(good))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"allowed":true`) {
				t.Errorf("normal review during the slow ones: %s %s", resp.Status, b)
			}

			// Each slow client is answered by its deadline, with an error,
			// though its body never finished.
			for range slow {
				if got := <-answers; got != "408 Request Timeout" {
					t.Errorf("slow client answered %q, want 408 Request Timeout", got)
				}
			}
		})
	}
}

// gate is an evaluator that holds every evaluation until released, and
// records how many bytes of reviews (by reviewCost) evaluate at once.
type gate struct {
	Evaluator
	mu       sync.Mutex
	now, max int64
	running  chan int64 // the cost of each evaluation that starts
	release  chan struct{}
	costs    map[string]int64 // namespace → cost of that review
}

func (g *gate) Evaluate(ctx context.Context, snap *engine.Snapshot, req engine.Request) (*engine.Decision, error) {
	cost := g.costs[req.Namespace]
	g.mu.Lock()
	g.now += cost
	g.max = max(g.max, g.now)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.now -= cost
		g.mu.Unlock()
	}()
	g.running <- cost
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Evaluator.Evaluate(ctx, snap, req)
}

// TestDragnetMemoryBudget: reviews are admitted by the memory their
// evaluation takes, not only by count; those that do not fit wait, and are
// answered 503 by their deadline if nothing frees; a review larger than the
// whole budget is refused at once.
func TestDragnetMemoryBudget(t *testing.T) {
	body := func(ns string, labels int) string {
		l := make([]string, labels)
		for i := range l {
			l[i] = fmt.Sprintf(`"l%d":"v"`, i)
		}
		return reviewBody(ReviewV1, "CREATE", "", "Pod", ns, pod(strings.Join(l, ","), "nginx:1"), "")
	}
	// Reviews a, b, c cost about the same; the budget takes two of them.
	// huge is about as long (its body fits the body budget) but dense: a
	// thousand commas in a string, each counted as an element.
	a, b, c := body("a", 100), body("b", 100), body("c", 100)
	huge := strings.Replace(body("huge", 100), `"l0":"v"`, `"l0":"`+strings.Repeat(",", 1000)+`"`, 1)
	ca, cb, cc := reviewCost([]byte(a)), reviewCost([]byte(b)), reviewCost([]byte(c))
	budget := ca + cb + cc/2
	g := &gate{Evaluator: engine.New(engine.Options{}), running: make(chan int64, 4), release: make(chan struct{}),
		costs: map[string]int64{"a": ca, "b": cb, "c": cc, "huge": reviewCost([]byte(huge))}}
	h, reg := newTestDragnet(t, g, func(o *Options) { o.MaxInFlight = 100; o.MaxReviewMemory = budget })

	if rec := post(t, h, DragnetPath+"?timeout=1h", huge); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "more than the review memory budget") {
		t.Errorf("a review larger than the budget: %d %s, want 413 at once", rec.Code, rec.Body)
	}
	// Refused unread, a malformed one is answered as malformed.
	if rec := post(t, h, DragnetPath+"?timeout=1h", strings.Replace(huge, `"uid"`, `"nouid"`, 1)); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "request.uid is empty") {
		t.Errorf("a malformed review larger than the budget: %d %s, want 400", rec.Code, rec.Body)
	}

	answers := make(chan *httptest.ResponseRecorder, 3)
	go func() { answers <- post(t, h, DragnetPath+"?timeout=1h", a) }()
	go func() { answers <- post(t, h, DragnetPath+"?timeout=1h", b) }()
	<-g.running
	<-g.running // a and b evaluate; c cannot fit

	// c waits for its share until its deadline, and is answered 503.
	if rec := post(t, h, DragnetPath+"?timeout=200ms", c); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "overloaded") {
		t.Errorf("a review that does not fit: %d %s, want 503", rec.Code, rec.Body)
	}
	// With a longer deadline, c is admitted when a or b finishes.
	go func() { answers <- post(t, h, DragnetPath+"?timeout=1h", c) }()
	select {
	case <-g.running:
		t.Fatal("c evaluated while a and b held the budget")
	case <-time.After(50 * time.Millisecond): // not a measure: c must not start at all
	}
	g.release <- struct{}{}
	<-g.running // c starts once one of them has finished
	g.release <- struct{}{}
	g.release <- struct{}{}
	for range 3 {
		if rec := <-answers; rec.Code != http.StatusOK {
			t.Errorf("admitted review: %d %s", rec.Code, rec.Body)
		}
	}
	if g.max > budget {
		t.Errorf("reviews of %d bytes evaluated at once, more than the budget of %d", g.max, budget)
	}
	// The refusals are counted with the reviews' operation.
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", "error"); n != 2 {
		t.Errorf("%v reviews counted as errors, want 2 (huge, c's first)", n)
	}
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "operation", "CREATE"); n != 5 {
		t.Errorf("%v reviews counted as CREATE, want 5", n)
	}
	if n := counterSum(t, reg, "modwright_admission_reviews_total", "outcome", "invalid"); n != 1 {
		t.Errorf("%v reviews counted as invalid, want 1", n)
	}
}

// TestDragnetBodyBudget: a body is read into memory reserved as it arrives,
// from a budget separate from evaluation's (half of it): bodies larger than
// it are refused, a body that does not fit now is answered 503 at once
// (never waiting while holding part of a body), and reservations are given
// back whatever the outcome.
func TestDragnetBodyBudget(t *testing.T) {
	ev := &countingEvaluator{Evaluator: engine.New(engine.Options{})}
	small := reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod("", "nginx:1"), "")
	budget := reviewCost([]byte(small))
	h, _ := newTestDragnet(t, ev, func(o *Options) { o.MaxReviewMemory = budget })
	bigLabel := `"x":"` + strings.Repeat("a", int(budget)) + `"`
	for _, chunked := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodPost, DragnetPath, strings.NewReader(reviewBody(ReviewV1, "CREATE", "", "Pod", "ns1", pod(bigLabel, "nginx:1"), "")))
		req.Header.Set("Content-Type", "application/json")
		if chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "body memory budget") {
			t.Errorf("chunked %v: %d %s, want 413", chunked, rec.Code, rec.Body)
		}
	}
	allFree := func() bool {
		if !h.mem.body.TryAcquire(h.mem.bodyCap) {
			return false
		}
		h.mem.body.Release(h.mem.bodyCap)
		if !h.mem.eval.TryAcquire(h.mem.evalCap) {
			return false
		}
		h.mem.eval.Release(h.mem.evalCap)
		return true
	}
	if !allFree() {
		t.Fatal("a refused review kept its reservation")
	}

	// Other bodies hold all but a few bytes of the body budget: the review
	// is answered at once, unevaluated, without waiting for them.
	h.mem.body.TryAcquire(h.mem.bodyCap - 10)
	if rec := post(t, h, DragnetPath+"?timeout=1h", small); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "bodies of the reviews being read") {
		t.Errorf("body budget full: %d %s, want 503 at once", rec.Code, rec.Body)
	}
	h.mem.body.Release(h.mem.bodyCap - 10)
	if ev.n.Load() != 0 {
		t.Errorf("%d evaluations of refused reviews", ev.n.Load())
	}

	for range 3 {
		if rec := post(t, h, DragnetPath, small); rec.Code != http.StatusOK {
			t.Errorf("small review: %d %s", rec.Code, rec.Body)
		}
	}
	if !allFree() {
		t.Fatal("an answered review kept its reservation")
	}
}

func TestMemoryBudgetDefault(t *testing.T) {
	h, _ := newTestDragnet(t, engine.New(engine.Options{}), nil)
	if eval, body := h.MemoryBudget(); eval != DefaultMaxReviewMemory() || body != eval/2 {
		t.Errorf("budgets %d, %d; want %d and half", eval, body, DefaultMaxReviewMemory())
	}
	old := debug.SetMemoryLimit(230 << 20)
	defer debug.SetMemoryLimit(old)
	if got := DefaultMaxReviewMemory(); got != 115<<20 {
		t.Errorf("with GOMEMLIMIT=230MiB: %d, want 115 MiB", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := DefaultMaxReviewMemory(); got != DefaultReviewMemory {
		t.Errorf("without a memory limit: %d, want %d", got, DefaultReviewMemory)
	}
}

func TestReviewCost(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int64
	}{
		{`""`, 2 * 2},
		{`[1,2]`, 2*5 + 64*2},
		{`{"a":[{},{}],"b":"x,y"}`, 2*23 + 64*(4+1+2)},
	} {
		if got := reviewCost([]byte(tc.body)); got != tc.want {
			t.Errorf("reviewCost(%s) = %d, want %d", tc.body, got, tc.want)
		}
	}
}
