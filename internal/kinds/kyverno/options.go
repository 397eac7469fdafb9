package kyverno

import (
	"slices"
	"time"

	"github.com/modwright/modwright/internal/lang/cel"
)

// Option configures the kinds.
type Option func(*options)

type options struct {
	values *Values
	// celEnvs are the CEL environments and programs the kinds' policies
	// share (set by NewKinds).
	celEnvs *cel.EnvCache
	// exceptions are the PolicyExceptions every policy honours, and
	// exceptionSource those read at each evaluation.
	exceptions      []*Exception
	exceptionSource ExceptionSource
	// metrics count the rules' results (set by NewKinds).
	metrics *Metrics
	// clock tells an exception's expiry; nil: time.Now.
	clock func() time.Time
}

// WithClock sets the clock PolicyExceptions expire by.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// now is the clock's time.
func (o *options) now() time.Time {
	if o.clock != nil {
		return o.clock()
	}
	return time.Now()
}

// WithValues gives every policy the values of a kyverno test suite (its
// values file), as Kyverno's CLI adds them to a rule's context.
func WithValues(v *Values) Option { return func(o *options) { o.values = v } }

// Values are the variables of a kyverno test suite: global ones, per
// policy and resource, per policy and rule. Names may be dotted
// ("request.operation") to set a nested member.
type Values struct {
	Global   []NameValue
	Policies []PolicyValues
}

// NameValue is one variable (its value a JSON value tree).
type NameValue struct {
	Name  string
	Value any
}

// PolicyValues are the variables of one policy.
type PolicyValues struct {
	Name      string
	Resources []ResourceValues
	Rules     []RuleValues
}

// ResourceValues are the variables of one resource (by name).
type ResourceValues struct {
	Name   string
	Values []NameValue
}

// RuleValues are the variables of one rule (by name, or its autogen
// name).
type RuleValues struct {
	Name   string
	Values []NameValue
}

// For returns the variables of a policy's evaluation on a resource: the
// global ones, then the resource's (later ones win).
func (v *Values) For(policy, resource string) []NameValue {
	out := slices.Clone(v.Global)
	for _, p := range v.Policies {
		if p.Name != policy {
			continue
		}
		for _, r := range p.Resources {
			if r.Name == resource {
				out = append(out, r.Values...)
			}
		}
	}
	return out
}

// ForRule returns the variables of a policy's rule.
func (v *Values) ForRule(policy, rule string) []NameValue {
	var out []NameValue
	for _, p := range v.Policies {
		if p.Name != policy {
			continue
		}
		for _, r := range p.Rules {
			if r.Name == rule || "autogen-"+r.Name == rule || "autogen-cronjob-"+r.Name == rule {
				out = append(out, r.Values...)
			}
		}
	}
	return out
}
