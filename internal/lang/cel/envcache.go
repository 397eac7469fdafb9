package cel

import (
	"fmt"
	"strings"
	"sync"

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
// use; so is the cache. Its keys are the variable sets used, a handful per
// kind: a cache lives as long as what compiles through it (a kind's
// adapter, or one rule's compilation for types only that rule declares).
type EnvCache struct {
	mu    sync.Mutex
	envs  map[string]*envEntry
	types *goTypes // what mutations learn of the built-in kinds' Go types
}

// NewEnvCache returns an empty cache.
func NewEnvCache() *EnvCache { return &EnvCache{envs: map[string]*envEntry{}, types: newGoTypes()} }

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
// time (concurrent callers of one key wait for the one build).
func (c *EnvCache) get(key string, build func() (*cel.Env, cel.ProgramOption, error)) (*cel.Env, cel.ProgramOption, error) {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	e := c.envs[key]
	if e == nil {
		e = &envEntry{}
		c.envs[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.env, e.bounded, e.err = build() })
	return e.env, e.bounded, e.err
}

// Len is the number of environments held.
func (c *EnvCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.envs)
}

// envKey names an environment: its variables in order (each typed one
// by the identity of its type, which the caller keeps for as long as the
// cache) and the extra options' name.
func envKey(names []string, typed map[string]*apiservercel.DeclType, extra string) string {
	var b strings.Builder
	b.WriteString(extra)
	for _, n := range names {
		b.WriteByte('|')
		b.WriteString(n)
		if dt, ok := typed[n]; ok {
			b.WriteString(":")
			b.WriteString(typeID(dt))
		}
	}
	return b.String()
}

// typeID is the identity of a declared type.
func typeID(dt *apiservercel.DeclType) string { return fmt.Sprintf("%p", dt) }
