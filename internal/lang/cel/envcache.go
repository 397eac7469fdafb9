package cel

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/google/cel-go/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// EnvCache shares the CEL environments expressions compile against: one
// environment (the apiserver's base library, the declared variables, the
// call bounds) per set of variables, built once and used by every
// expression that declares the same ones. Building one costs about as much
// as compiling an expression and keeps its own copy of every declaration,
// so a rule set that builds one per expression pays for it in compile time
// and heap per rule. Environments are immutable and safe for concurrent
// use; so is the cache. Its keys are the variable sets used and their
// declared types (a policy's typed variables: as many as the distinct sets
// of names and types its rules declare). An environment is held weakly,
// by the programs compiled against it: it is forgotten when no rule uses
// it, so a cache that lives as long as a kind's adapter holds no more
// environments than the rules alive need.
//
// It also shares programs: an expression compiled again with the same
// text against the same environment and budget (the same match condition
// in many policies, a policy compiled again at its next generation) is
// the program already compiled, which is immutable. A program is held
// weakly: it is forgotten when no rule uses it, so the cache holds no
// more than the rules alive do.
type EnvCache struct {
	mu       sync.Mutex
	envs     map[string]weak.Pointer[envEntry]
	programs map[programKey]weak.Pointer[Program]
	types    *goTypes // what mutations learn of the built-in kinds' Go types
}

// programKey names a compiled program: its environment, text, budget and
// required type.
type programKey struct {
	env, src, want string
	budget         int64
}

// NewEnvCache returns an empty cache.
func NewEnvCache() *EnvCache {
	return &EnvCache{envs: map[string]weak.Pointer[envEntry]{}, programs: map[programKey]weak.Pointer[Program]{}, types: newGoTypes()}
}

// program returns the program of k while some rule still uses it.
func (c *EnvCache) program(k programKey) *Program {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.programs[k].Value()
}

// keep records p as the program of k (the first one kept wins, so that
// concurrent compiles of one expression share it), and forgets it once it
// is collected.
func (c *EnvCache) keep(k programKey, p *Program) *Program {
	if c == nil {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.programs[k].Value(); q != nil {
		return q
	}
	c.programs[k] = weak.Make(p)
	runtime.AddCleanup(p, c.forget, k)
	return p
}

// forget drops k once its program is collected (unless it was compiled
// and kept again meanwhile).
func (c *EnvCache) forget(k programKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.programs[k].Value() == nil {
		delete(c.programs, k)
	}
}

// Programs is the number of programs held (alive or not yet forgotten).
func (c *EnvCache) Programs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.programs)
}

// goTypes is the cache's record of Go types, or a new one without a cache.
func (c *EnvCache) goTypes() *goTypes {
	if c == nil {
		return newGoTypes()
	}
	return c.types
}

type envEntry struct {
	once    sync.Once
	env     *cel.Env
	bounded cel.ProgramOption
	err     error
}

// get returns the environment for key, building it with build the first
// time (concurrent callers of one key wait for the one build). The entry
// is the caller's to keep (a program keeps its environment's): the cache
// holds it only weakly.
func (c *EnvCache) get(key string, build func() (*cel.Env, cel.ProgramOption, error)) *envEntry {
	if c == nil {
		e := &envEntry{}
		e.env, e.bounded, e.err = build()
		return e
	}
	c.mu.Lock()
	e := c.envs[key].Value()
	if e == nil {
		e = &envEntry{}
		c.envs[key] = weak.Make(e)
		runtime.AddCleanup(e, c.forgetEnv, key)
	}
	c.mu.Unlock()
	e.once.Do(func() { e.env, e.bounded, e.err = build() })
	return e
}

// forgetEnv drops key once its environment is collected (unless it was
// built again meanwhile).
func (c *EnvCache) forgetEnv(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.envs[key].Value() == nil {
		delete(c.envs, key)
	}
}

// Len is the number of environments held by some program.
func (c *EnvCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.envs {
		if e.Value() != nil {
			n++
		}
	}
	return n
}

// envKey names an environment: its variables in order (each typed one
// by typesKey when the caller names its types, else by the identity of its
// type, which the caller keeps for as long as the cache) and the extra
// options' name.
func envKey(names []string, typed map[string]*apiservercel.DeclType, typesKey, extra string) string {
	var b strings.Builder
	b.WriteString(extra)
	for _, n := range names {
		b.WriteByte('|')
		b.WriteString(n)
		if dt, ok := typed[n]; ok {
			b.WriteString(":")
			if typesKey != "" {
				b.WriteString("=" + typesKey)
			} else {
				b.WriteString(typeID(dt))
			}
		}
	}
	return b.String()
}

// typeID is the identity of a declared type.
func typeID(dt *apiservercel.DeclType) string { return fmt.Sprintf("%p", dt) }
