package modrule

import (
	"fmt"
	"sync"
	"testing"

	"github.com/modwright/modwright/api/v1beta1"
)

func withRegex(re string) func(*v1beta1.ModRuleSpec) {
	return func(s *v1beta1.ModRuleSpec) {
		s.Match = append(s.Match, v1beta1.MatchItem{Select: "$.metadata.name", MatchRegex: p(re)})
	}
}

// Rules compiled with one Cache share their parsed expressions and regexes;
// without one (Compile, or another Cache) nothing is shared.
func TestCacheShared(t *testing.T) {
	c := NewCache()
	a, err := CompileWith(rule("ns", "a", withRegex("^web-")), c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := CompileWith(rule("ns", "b", withRegex("^web-")), c)
	if err != nil {
		t.Fatal(err)
	}
	if a.Criteria[0].Select != b.Criteria[0].Select || a.Criteria[1].Regex != b.Criteria[1].Regex {
		t.Error("rules compiled with one Cache do not share their expressions and regexes")
	}
	if e, r := c.Len(); e != 2 || r != 1 {
		t.Errorf("Len() = %d expressions, %d regexes; want 2, 1", e, r)
	}

	for name, compile := range map[string]func(*v1beta1.ModRule) (*Rule, error){
		"Compile":          Compile,
		"CompileWith(nil)": func(mr *v1beta1.ModRule) (*Rule, error) { return CompileWith(mr, nil) },
		"another Cache":    func(mr *v1beta1.ModRule) (*Rule, error) { return CompileWith(mr, &Cache{}) },
	} {
		r, err := compile(rule("ns", "c", withRegex("^web-")))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Criteria[0].Select == a.Criteria[0].Select || r.Criteria[1].Regex == a.Criteria[1].Regex {
			t.Errorf("%s shares the Cache's expressions", name)
		}
	}
	if e, r := (*Cache)(nil).Len(); e != 0 || r != 0 {
		t.Errorf("a nil Cache holds %d, %d", e, r)
	}

	// Failures are reported the same way and are not kept.
	_, err = CompileWith(rule("ns", "bad", withRegex("a(b")), c)
	if err == nil {
		t.Fatal("bad regex compiled")
	}
	if _, r := c.Len(); r != 1 {
		t.Errorf("a failed regex is cached: %d regexes", r)
	}
}

// A Cache holds at most CacheLimit entries of each kind, also when many
// goroutines fill it at once.
func TestCacheBounded(t *testing.T) {
	var c Cache // the zero value is usable
	const n = CacheLimit + 100
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				if _, err := CompileWith(rule("ns", "r", withRegex(fmt.Sprintf("^web-%d$", i))), &c); err != nil {
					t.Error(err)
					return
				}
				if e, r := c.Len(); e > CacheLimit || r > CacheLimit {
					t.Errorf("Len() = %d, %d; over %d", e, r, CacheLimit)
					return
				}
			}
		})
	}
	wg.Wait()
	e, r := c.Len()
	if e != 2 || r == 0 || r > CacheLimit {
		t.Errorf("after %d distinct regexes Len() = %d expressions, %d regexes; want 2 and at most %d", n, e, r, CacheLimit)
	}
}
