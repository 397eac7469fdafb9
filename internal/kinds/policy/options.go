package policy

import (
	"github.com/modwright/modwright/internal/lang/cel"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
)

// Option is a front end's choice for how policies compile.
type Option func(*options)

type options struct {
	cue     cuelang.Language
	nested  *NestedCache
	celEnvs *cel.EnvCache
}

// WithCUE compiles the policies' CUE members with l: a front end that
// serves gives it Workers, so that a program that does not end or grows
// without bound is stopped.
func WithCUE(l cuelang.Language) Option { return func(o *options) { o.cue = l } }

// WithCELEnvs compiles the policies' CEL expressions against the
// environments of envs (a Kind's cache, shared by its rules): policies
// that declare the same variables share one environment. Without it each
// expression builds its own.
func WithCELEnvs(envs *cel.EnvCache) Option { return func(o *options) { o.celEnvs = envs } }

// WithNestedCache compiles nested {{ }} variables through c (a Kind's
// cache, shared by its rules); without it each rule has its own.
func WithNestedCache(c *NestedCache) Option { return func(o *options) { o.nested = c } }
