package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
)

// A Gatekeeper suite (suite.yaml, test.gatekeeper.sh/v1alpha1 Suite) runs
// as `gator verify` runs it: each test's template and constraint, each
// case's object reviewed (CREATE) with its inventory as the cluster's
// synced data, and each assertion's count of violations compared.

func runGatorSuite(ctx context.Context, gs *suite.GatorSuite, o *testOptions, s Streams) ([]caseResult, error) {
	var out []caseResult
	for i := range gs.Tests {
		t := &gs.Tests[i]
		name := t.Name
		if name == "" {
			name = fmt.Sprintf("tests[%d]", i)
		}
		if gs.Skip || t.Skip {
			out = append(out, caseResult{Suite: gs.Path, Case: name + " (skipped)", Passed: true, Note: "skipped"})
			continue
		}
		res, err := runGatorTest(ctx, gs, t, name, o, s)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

func runGatorTest(ctx context.Context, gs *suite.GatorSuite, t *suite.GatorTest, name string, o *testOptions, s Streams) ([]caseResult, error) {
	paths := []string{gs.Resolve(t.Template)}
	if t.Constraint != "" {
		paths = append(paths, gs.Resolve(t.Constraint))
	}
	docs, err := source.ReadPaths(paths, nil)
	if err != nil {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("%w: %s: %s: %v", suite.ErrInvalid, gs.Path, name, err)}
	}
	reg := newGatorRegistry()
	if o.registry != nil {
		reg = o.registry.kinds("")
	}
	res := source.LoadRules(docs, reg)
	errs := res.Errors
	for _, sk := range res.Skipped {
		errs = append(errs, errors.New(sk))
	}
	if t.Invalid {
		c := caseResult{Suite: gs.Path, Case: name + " (invalid)", Passed: len(errs) > 0}
		if !c.Passed {
			c.Reason = "the template and constraint loaded; the test expects them to be invalid"
		}
		return []caseResult{c}, nil
	}
	if len(errs) > 0 || len(res.Rules) == 0 {
		reason := "no constraint loaded"
		if len(errs) > 0 {
			reason = errors.Join(errs...).Error()
		}
		out := make([]caseResult, 0, len(t.Cases))
		for _, c := range t.Cases {
			out = append(out, caseResult{Suite: gs.Path, Case: name + "/" + c.Name, Reason: reason})
		}
		return out, nil
	}
	snap := engine.NewSnapshot(res.Rules)
	var out []caseResult
	for i := range t.Cases {
		c := &t.Cases[i]
		cr := caseResult{Suite: gs.Path, Case: name + "/" + c.Name}
		if c.Name == "" {
			cr.Case = fmt.Sprintf("%s/cases[%d]", name, i)
		}
		if o.run != "" && !strings.Contains(cr.Case, o.run) {
			continue
		}
		if c.Skip {
			cr.Case += " (skipped)"
			cr.Passed, cr.Note = true, "skipped"
			out = append(out, cr)
			continue
		}
		msgs, err := gatorReview(ctx, gs, c, snap, s)
		if err != nil {
			return nil, err
		}
		var failed []string
		for j := range c.Assertions {
			a := &c.Assertions[j]
			n := 0
			for _, m := range msgs {
				if a.Message == nil || a.MessageRegexp().MatchString(m) {
					n++
				}
			}
			if err := a.Check(n); err != nil {
				what := fmt.Sprintf("assertions[%d]", j)
				if a.Message != nil {
					what += fmt.Sprintf(" (message %q)", *a.Message)
				}
				failed = append(failed, what+": "+err.Error())
				break // as gator: the first assertion that fails
			}
		}
		if len(failed) > 0 {
			cr.Reason = strings.Join(failed, "; ")
			if len(msgs) > 0 {
				cr.Reason += "; violations: " + strings.Join(msgs, " | ")
			}
		}
		cr.Passed = cr.Reason == ""
		out = append(out, cr)
	}
	return out, nil
}

// gatorReview reviews a case's object with its inventory and returns the
// messages of the constraint's violations.
func gatorReview(ctx context.Context, gs *suite.GatorSuite, c *suite.GatorCase, snap *engine.Snapshot, s Streams) ([]string, error) {
	invalid := func(field string, err error) error {
		return &ExitError{Code: 2, Err: fmt.Errorf("%w: %s: case %q: %s: %v", suite.ErrInvalid, gs.Path, c.Name, field, err)}
	}
	objs, err := source.ReadPaths([]string{gs.Resolve(c.Object)}, nil)
	if err != nil {
		return nil, invalid("object", err)
	}
	if len(objs) != 1 {
		return nil, invalid("object", fmt.Errorf("%s holds %d objects; a case reviews one", c.Object, len(objs)))
	}
	var resolver engine.ObjectReader
	if len(c.Inventory) > 0 {
		inv := make([]string, len(c.Inventory))
		for i, p := range c.Inventory {
			inv[i] = gs.Resolve(p)
		}
		docs, err := source.ReadPaths(inv, nil)
		if err != nil {
			return nil, invalid("inventory", err)
		}
		r, _, err := newStaticResolver(docs)
		if err != nil {
			return nil, invalid("inventory", err)
		}
		resolver = r
	}
	req, err := gatorRequest(objs[0].Object)
	if err != nil {
		return nil, invalid("object", fmt.Errorf("%s: %w", c.Object, err))
	}
	chain := runner.NewChain(runner.NewEngineOptions(snap, engineOptions(resolver, nil)), runner.ChainOptions{})
	res, err := chain.Run(ctx, req)
	if err != nil {
		return nil, invalid("object", err)
	}
	var msgs []string
	if res.Decision != nil {
		for _, tr := range res.Decision.Trace {
			if tr.Outcome == engine.Failed {
				return nil, invalid("object", fmt.Errorf("%s %s failed: %s", tr.Kind, tr.Rule, tr.Reason))
			}
			m, _ := gatekeeperViolations(tr.Detail)
			msgs = append(msgs, m...)
		}
	}
	return msgs, nil
}

// gatorRequest is the admission a case's object stands for: the object
// created, or, for an AdmissionReview (admission.k8s.io, any version), its
// request (operation, object, oldObject, namespace, userInfo), as gator
// reviews it.
func gatorRequest(obj map[string]any) (runner.Request, error) {
	av, _ := obj["apiVersion"].(string)
	if kind, _ := obj["kind"].(string); kind != "AdmissionReview" || !strings.HasPrefix(av, "admission.k8s.io/") {
		return newAdmission(obj, "").request(rules.Create), nil
	}
	req, ok := obj["request"].(map[string]any)
	if !ok {
		return runner.Request{}, fmt.Errorf("missing an AdmissionRequest object: an AdmissionReview needs its request")
	}
	object, _ := req["object"].(map[string]any)
	old, _ := req["oldObject"].(map[string]any)
	if object == nil && old == nil {
		return runner.Request{}, fmt.Errorf("no object or oldObject found to review")
	}
	op, _ := req["operation"].(string)
	r := runner.Request{Operation: rules.Operation(strings.ToUpper(op)), Object: object, Old: old}
	switch r.Operation {
	case "":
		r.Operation = rules.Create
	case rules.Delete:
		if old == nil {
			return runner.Request{}, fmt.Errorf("oldObject cannot be nil for DELETE operations")
		}
		r.Object, r.Old = old, nil
	case rules.Create:
		r.Old = nil
	}
	if r.Object == nil {
		r.Object = old
	}
	a := newAdmission(r.Object, "")
	r.Namespace = a.ns
	if ns, ok := req["namespace"].(string); ok && ns != "" {
		r.Namespace = ns
	}
	if u, ok := req["userInfo"].(map[string]any); ok {
		var err error
		if r.User, err = userInfoOf(u); err != nil {
			return runner.Request{}, fmt.Errorf("request.userInfo: %w", err)
		}
	}
	return r, nil
}
