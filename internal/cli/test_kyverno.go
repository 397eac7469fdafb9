package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	pathpkg "path"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/value"
)

// A kyverno-test.yaml runs as `kyverno test` runs it: every resource
// through the admission chain with the suite's policies (CREATE, the
// operation its values give, or each operation a row names), then every
// expected row compared with the rule results.

// kyvernoSuiteError is an exit-2 error naming a kyverno-test.yaml.
func kyvernoSuiteError(t *suite.KyvernoTest, field string, err error) error {
	return &ExitError{Code: 2, Err: fmt.Errorf("%w: %s: %s: %v", suite.ErrInvalid, t.Path, field, err)}
}

// kyvernoSuite is a loaded kyverno-test.yaml: its chain, its resources,
// the names of its policies.
type kyvernoSuite struct {
	t      *suite.KyvernoTest
	chain  *runner.Chain
	docs   []source.Document
	loaded map[string]bool
	user   engine.UserInfo // the requester (userinfo)
	// vaps are the suite's ValidatingAdmissionPolicies, each checked
	// alone (rows with isValidatingAdmissionPolicy); nil: none.
	vaps *audit.AdmissionPolicies
	// payloads are the JSON payloads (jsonPayloads), by the name rows
	// give them, in the suite's order.
	payloads []kyvernoPayload
}

// kyvernoPayload is a JSON payload: its name (the path as the suite
// writes it) and its document.
type kyvernoPayload struct {
	name string
	obj  map[string]any
}

// kyvernoRuns are the results of one operation: by resource key
// (apiVersion,kind,namespace,name), by policy name, its rule results (a
// loaded policy has an entry even without results, as kyverno test's
// responses); keys in the resources' order.
type kyvernoRuns struct {
	byKey map[string]map[string][]kyvernoRuleResult
	keys  []string
	// objects are the objects after the mutate rules, by resource key
	// (nil when denied, with the denial in denials).
	objects map[string]any
	denials map[string]string
	// targets are the results of mutates of existing objects, by target
	// (kyverno.TargetName) and policy name; targetObjects the targets as
	// the rules left them; targetKeys in the order first met.
	targets       map[string]map[string][]kyvernoRuleResult
	targetObjects map[string]any
	targetKeys    []string
	// payloads are the keys of JSON payloads among keys (the payload's
	// name, not a resource key).
	payloads map[string]bool
}

func runKyvernoSuite(ctx context.Context, t *suite.KyvernoTest, o *testOptions, s Streams) ([]caseResult, error) {
	ks, err := loadKyvernoSuite(t, o, s)
	if err != nil {
		return nil, err
	}
	ops := []string{""}
	for _, r := range t.Results {
		if r.Operation != "" && !slices.Contains(ops, r.Operation) {
			ops = append(ops, r.Operation)
		}
	}
	runs := map[string]*kyvernoRuns{}
	for _, op := range ops {
		if runs[op], err = ks.run(ctx, op, s); err != nil {
			return nil, err
		}
	}
	var out []caseResult
	for _, row := range t.Results {
		out = append(out, compareKyvernoRow(t, row, runs[row.Operation], ks.loaded)...)
	}
	return out, nil
}

func loadKyvernoSuite(t *suite.KyvernoTest, o *testOptions, s Streams) (*kyvernoSuite, error) {
	reg := o.registry.kinds("")
	if o.registry == nil {
		var err error
		if reg, err = newKyvernoTestRegistry(t.Values, t.ResolveAll(t.Exceptions)); err != nil {
			return nil, kyvernoSuiteError(t, "exceptions", err)
		}
	}
	snap, policies, err := loadRules(t.ResolveAll(t.Policies), s, reg, ruleLoading{policies: true})
	if err != nil {
		if ee, ok := err.(*ExitError); ok {
			return nil, kyvernoSuiteError(t, "policies", ee.Err)
		}
		return nil, err
	}
	ks := &kyvernoSuite{t: t, loaded: map[string]bool{}}
	for _, r := range snap.Rules() {
		if info := r.Info(); isKyvernoKind(info.Group) {
			ks.loaded[info.Name] = true
		}
	}
	if ks.docs, err = source.ReadPaths(t.ResolveAll(t.Resources), nil); err != nil {
		return nil, kyvernoSuiteError(t, "resources", err)
	}
	for _, f := range []struct {
		field string
		files []string
	}{{"httpPayloads", t.HTTPPayloads}, {"envoyPayloads", t.EnvoyPayloads}} {
		if len(f.files) > 0 {
			return nil, kyvernoSuiteError(t, f.field, errors.New("check requests of Kyverno's authorization policies are not run: modwright does not serve those policies"))
		}
	}
	for i, name := range t.JSONPayloads {
		if strings.Contains(name, ",") {
			// Resources are keyed apiVersion,kind,namespace,name.
			return nil, kyvernoSuiteError(t, fmt.Sprintf("jsonPayloads[%d]", i), fmt.Errorf("%q: a payload's path holds no comma", name))
		}
		obj, err := source.ReadPayload(t.Resolve(name))
		if err != nil {
			return nil, kyvernoSuiteError(t, fmt.Sprintf("jsonPayloads[%d]", i), err)
		}
		ks.payloads = append(ks.payloads, kyvernoPayload{name, obj})
	}
	resolver, err := kyvernoResolver(t)
	if err != nil {
		return nil, err
	}
	ks.user = userOf(resolver)
	if ks.vaps, err = audit.NewAdmissionPolicies(policies, contextObjects(resolver), metav1.NamespaceDefault); err != nil {
		return nil, kyvernoSuiteError(t, "paramResources", err)
	}
	for _, name := range ks.vaps.Names() {
		ks.loaded[name] = true
	}
	ks.chain = runner.NewChain(runner.NewEngineOptions(snap, engineOptions(resolver, nil)),
		runner.ChainOptions{Policies: policies, Objects: contextObjects(resolver)})
	return ks, nil
}

// kyvernoResolver reads what a suite gives of the cluster: the values'
// namespaces (their labels), the userinfo file (the requester, its
// roles), the context file (objects and images, for the CEL libraries),
// the cluster resources, the recorded apiCall responses; nil when it
// gives none.
func kyvernoResolver(t *suite.KyvernoTest) (engine.ObjectReader, error) {
	docs := kyvernoNamespaces(t.Values)
	if t.Context != "" {
		c, err := source.ReadPaths([]string{t.Resolve(t.Context)}, nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, "context", err)
		}
		if len(c) != 1 || c[0].APIVersion() != kyvernoCLIAPIVersion || c[0].Kind() != kindContext {
			return nil, kyvernoSuiteError(t, "context", fmt.Errorf("%s: want one %s %s document", t.Context, kyvernoCLIAPIVersion, kindContext))
		}
		docs = append(docs, c[0])
	}
	if len(t.ClusterResources) > 0 {
		objs, err := source.ReadPaths(t.ResolveAll(t.ClusterResources), nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, "clusterResources", err)
		}
		docs = append(docs, objs...)
	}
	if t.UserInfo != "" {
		ui, err := source.ReadPaths([]string{t.Resolve(t.UserInfo)}, nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, "userinfo", err)
		}
		if len(ui) != 1 || ui[0].APIVersion() != kyvernoCLIAPIVersion || ui[0].Kind() != kindUserInfo {
			return nil, kyvernoSuiteError(t, "userinfo", fmt.Errorf("%s: want one %s %s document", t.UserInfo, kyvernoCLIAPIVersion, kindUserInfo))
		}
		docs = append(docs, ui[0])
	}
	if len(t.TargetResources) > 0 {
		targets, err := source.ReadPaths(t.ResolveAll(t.TargetResources), nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, "targetResources", err)
		}
		docs = append(docs, targets...)
	}
	if len(t.ParamResources) > 0 {
		params, err := source.ReadPaths(t.ResolveAll(t.ParamResources), nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, "paramResources", err)
		}
		for _, d := range params {
			docs = append(docs, inDefaultNamespace(d))
		}
	}
	seen := map[string]bool{}
	for i, row := range t.Results {
		if row.CloneSourceResource == "" || seen[row.CloneSourceResource] {
			continue
		}
		seen[row.CloneSourceResource] = true
		src, err := source.ReadPaths([]string{t.Resolve(row.CloneSourceResource)}, nil)
		if err != nil {
			return nil, kyvernoSuiteError(t, fmt.Sprintf("results[%d].cloneSourceResource", i), err)
		}
		docs = append(docs, src...)
	}
	if len(docs) == 0 && len(t.APICallResponses) == 0 && len(t.GlobalContextEntries) == 0 {
		return nil, nil
	}
	r, _, err := newStaticResolver(docs)
	if err != nil {
		field := "userinfo"
		if t.Context != "" {
			field = "context"
		}
		return nil, kyvernoSuiteError(t, field, err)
	}
	for i := range t.APICallResponses {
		e := &t.APICallResponses[i]
		err := e.Validate()
		if err == nil {
			resp := &engine.HTTPResponse{Status: e.Response.StatusCode, Body: e.Response.Body}
			if resp.Status == 0 {
				resp.Status = 200
			}
			err = r.addAnyBody(e.Method, e.URL+e.URLPath, resp)
		}
		if err != nil {
			return nil, kyvernoSuiteError(t, fmt.Sprintf("apiCallResponses[%d]", i), err)
		}
	}
	if len(t.GlobalContextEntries) > 0 {
		if err := r.addGlobals(context.Background(), t); err != nil {
			return nil, kyvernoSuiteError(t, "globalContextEntries", err)
		}
	}
	return r, nil
}

// inDefaultNamespace places a built-in namespaced object that names no
// namespace in "default", as kubectl would create it (a parameter object:
// an admission policy's binding and a validate.cel's paramRef find it
// there).
func inDefaultNamespace(d source.Document) source.Document {
	if d.Namespace() != "" || kinds.IsClusterScoped(d.Kind()) ||
		!clientgoscheme.Scheme.Recognizes(schema.FromAPIVersionAndKind(d.APIVersion(), d.Kind())) {
		return d
	}
	obj := maps.Clone(d.Object)
	md, _ := obj["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	md["namespace"] = metav1.NamespaceDefault
	obj["metadata"] = md
	d.Object = obj
	return d
}

// kyvernoNamespaces are the Namespaces a values file describes (their
// labels, for namespaceSelectors).
func kyvernoNamespaces(v *suite.KyvernoValues) []source.Document {
	if v == nil {
		return nil
	}
	var out []source.Document
	for _, n := range v.NamespaceSelector {
		ls := map[string]any{}
		for k, l := range n.Labels {
			ls[k] = l
		}
		out = append(out, source.Document{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": n.Name, "labels": ls}}})
	}
	for _, n := range v.Namespaces {
		out = append(out, source.Document{Object: n})
	}
	return out
}

// run evaluates every resource with operation op ("": each resource's own).
func (ks *kyvernoSuite) run(ctx context.Context, op string, s Streams) (*kyvernoRuns, error) {
	out := &kyvernoRuns{byKey: map[string]map[string][]kyvernoRuleResult{}, objects: map[string]any{}, denials: map[string]string{},
		targets: map[string]map[string][]kyvernoRuleResult{}, targetObjects: map[string]any{}, payloads: map[string]bool{}}
	for _, d := range ks.docs {
		obj := value.DeepCopy(d.Object).(map[string]any)
		a := newAdmission(obj, "default")
		if md, ok := obj["metadata"].(map[string]any); ok && a.ns != "" {
			md["namespace"] = a.ns // as kyverno test defaults it
		}
		key := strings.Join([]string{d.APIVersion(), a.kind, a.ns, a.name}, ",")
		if _, dup := out.byKey[key]; dup {
			if op == "" {
				fmt.Fprintf(s.Err, "warning: %s: %s: %s %s/%s appears twice; the first is tested\n", ks.t.Path, d.Origin, a.kind, a.ns, a.name)
			}
			continue
		}
		rop := rules.Operation(strings.ToUpper(op))
		if op == "" {
			rop = kyvernoOperation(ks.t.Values, a.name)
		}
		a.user = ks.user
		req := a.request(rop)
		if rop == rules.Update {
			req.Old = obj // as kyverno test: the old object is the object
		}
		res, err := ks.chain.Run(ctx, req)
		if err != nil {
			return nil, kyvernoSuiteError(ks.t, "resources", fmt.Errorf("%s: %w", d.Origin, err))
		}
		byPolicy := ks.collect(res, out)
		ks.checkVAPs(ctx, obj, a.ns, byPolicy)
		out.add(key, byPolicy, res)
	}
	if op != "" {
		return out, nil // rows of an operation name resources (kyverno test: payloads are no trigger of one)
	}
	for i, p := range ks.payloads {
		res, err := ks.chain.Run(ctx, runner.Request{Operation: rules.Create, Object: value.DeepCopy(p.obj).(map[string]any), User: ks.user, Payload: true})
		if err != nil {
			return nil, kyvernoSuiteError(ks.t, fmt.Sprintf("jsonPayloads[%d]", i), fmt.Errorf("%s: %w", p.name, err))
		}
		out.add(p.name, ks.collect(res, out), res)
		out.payloads[p.name] = true
	}
	return out, nil
}

// collect is the rule results of res by policy name (every loaded policy
// present); the results of mutates of existing objects go to out's
// targets.
func (ks *kyvernoSuite) collect(res *runner.Result, out *kyvernoRuns) map[string][]kyvernoRuleResult {
	byPolicy := map[string][]kyvernoRuleResult{}
	for name := range ks.loaded {
		byPolicy[name] = nil
	}
	if res.Decision == nil {
		return byPolicy
	}
	for _, tr := range res.Decision.Trace {
		for _, rr := range kyvernoResults(tr.Detail) {
			name := lastSegment(rr.Policy)
			if rr.Target != "" {
				// A mutate of an existing object: its rows name the target.
				if out.targets[rr.Target] == nil {
					out.targets[rr.Target] = map[string][]kyvernoRuleResult{}
					out.targetKeys = append(out.targetKeys, rr.Target)
				}
				out.targets[rr.Target][name] = append(out.targets[rr.Target][name], rr)
				if len(rr.Generated) > 0 {
					out.targetObjects[rr.Target] = rr.Generated[0]
				}
				continue
			}
			byPolicy[name] = append(byPolicy[name], rr)
		}
	}
	return byPolicy
}

// add records the results of the resource or payload of key.
func (r *kyvernoRuns) add(key string, byPolicy map[string][]kyvernoRuleResult, res *runner.Result) {
	r.byKey[key] = byPolicy
	r.objects[key], r.denials[key] = res.Object, res.Denial
	r.keys = append(r.keys, key)
}

// checkVAPs adds the results of the suite's ValidatingAdmissionPolicies
// on obj (as created) to byPolicy: fail with the policy's messages, pass
// when a policy that can match the object's kind admits it.
func (ks *kyvernoSuite) checkVAPs(ctx context.Context, obj map[string]any, ns string, byPolicy map[string][]kyvernoRuleResult) {
	if ks.vaps == nil {
		return
	}
	fails := ks.vaps.Check(ctx, obj, ns)
	for _, name := range ks.vaps.Names() {
		if !ks.vaps.Covers(name, obj) {
			continue
		}
		rr := kyvernoRuleResult{Policy: name, Status: kyvernoPass}
		for _, f := range fails {
			if f.Policy == name {
				rr.Status, rr.Message = kyvernoFail, f.Message
			}
		}
		byPolicy[name] = append(byPolicy[name], rr)
	}
}

func lastSegment(s string) string { return s[strings.LastIndex(s, "/")+1:] }

// kyvernoOperation is a resource's operation: request.operation in the
// values (a policy's per-resource values, else the global ones), else
// CREATE.
func kyvernoOperation(v *suite.KyvernoValues, resource string) rules.Operation {
	if v == nil {
		return rules.Create
	}
	for _, p := range v.Policies {
		for _, r := range p.Resources {
			if op, ok := r.Values["request.operation"].(string); ok && r.Name == resource && op != "" {
				return rules.Operation(strings.ToUpper(op))
			}
		}
	}
	if op, ok := v.GlobalValues["request.operation"].(string); ok && op != "" {
		return rules.Operation(strings.ToUpper(op))
	}
	return rules.Create
}

// compareKyvernoRow checks one expected row as kyverno test does: the
// resources it names (name, or namespace/name; none found: every
// resource), the rule results of its policy and rule (or the rule's
// autogen-, autogen-cronjob- variants); a policy with no result for a
// resource passes as "Excluded" (the rule did not match).
func compareKyvernoRow(t *suite.KyvernoTest, row suite.KyvernoResult, runs *kyvernoRuns, loaded map[string]bool) []caseResult {
	path := t.Path
	var sel []string
	for _, want := range row.Resources {
		p := strings.Split(want, "/")
		for _, k := range runs.keys {
			if runs.payloads[k] {
				if k == pathpkg.Clean(want) {
					sel = append(sel, k) // a payload, by its name
				}
				continue
			}
			parts := strings.Split(k, ",")
			if (len(p) == 1 && p[0] == parts[3]) || (len(p) == 2 && p[0] == parts[2] && p[1] == parts[3]) {
				sel = append(sel, k)
			}
		}
	}
	policy := lastSegment(row.Policy)
	var out []caseResult
	if len(sel) == 0 {
		if tk := targetsNamed(runs, row.Resources); len(tk) > 0 {
			return compareTargetRows(t, row, runs, tk, policy)
		}
		sel = runs.keys
	}
	if len(sel) == 0 {
		// Nothing to compare with (kyverno test: no result for the row,
		// a failure): never a row passed by default.
		return []caseResult{caseResult{Suite: path, Policy: row.Policy, Rule: row.Rule, Resource: strings.Join(row.Resources, ","), Expected: row.Result, Reason: "Not found"}.named()}
	}
	for _, k := range sel {
		c := caseResult{Suite: path, Policy: row.Policy, Rule: row.Rule, Resource: strings.ReplaceAll(k, ",", "/"), Expected: row.Result}
		results, ok := runs.byKey[k][policy]
		if !ok || !loaded[policy] {
			c.Reason = "Not found"
			out = append(out, c.named())
			continue
		}
		n := 0
		for _, rr := range results {
			if row.Rule != "" && rr.Rule != row.Rule && rr.Rule != "autogen-"+row.Rule && rr.Rule != "autogen-cronjob-"+row.Rule {
				continue
			}
			n++
			rc := c
			rc.Rule, rc.Got = rr.Rule, string(rr.Status)
			switch {
			case row.GeneratedResource != "" || len(row.GeneratedResources) > 0:
				if len(rr.Generated) == 0 {
					// Nothing generated: the result alone, as kyverno test.
					if string(rr.Status) != row.Result {
						rc.Reason = fmt.Sprintf("Want %s, got %s", row.Result, rr.Status)
					}
					break
				}
				files := row.GeneratedResources
				if row.GeneratedResource != "" && len(files) == 0 {
					files = []string{row.GeneratedResource}
				}
				for _, g := range rr.Generated {
					gc := rc
					gc.Resource = objectName(g)
					gc.Reason = compareGenerated(t, files, g)
					if gc.Reason == "" && string(rr.Status) != row.Result {
						gc.Reason = fmt.Sprintf("Want %s, got %s", row.Result, rr.Status)
					}
					gc.Passed = gc.Reason == ""
					out = append(out, gc.named())
				}
				continue
			case row.PatchedResources != "":
				reason, missing := comparePatched(t, row.PatchedResources, runs.objects[k], runs.denials[k])
				switch {
				case missing && !row.FailOnMissingResources:
					// kyverno test leaves such a row out (failOnMissingResources
					// makes it fail): shown, passed, and said.
					rc.Note = "Skipped: " + reason
				case missing:
					rc.Reason = "Resource error: " + reason
				case reason != "":
					rc.Reason = reason
				case string(rr.Status) != row.Result:
					rc.Reason = fmt.Sprintf("Want %s, got %s", row.Result, rr.Status)
				}
			default:
				rc.Reason = statusReason(row.Result, rr)
			}
			rc.Passed = rc.Reason == ""
			out = append(out, rc.named())
		}
		if n == 0 {
			c.Passed, c.Note = true, "Excluded"
			out = append(out, c.named())
		}
	}
	return out
}

// targetsNamed are the mutated targets a row names (name, or
// namespace/name), as kyverno test finds a row's resources among the
// targets when they are not among the resources.
func targetsNamed(runs *kyvernoRuns, resources []string) []string {
	var out []string
	for _, want := range resources {
		for _, k := range runs.targetKeys {
			_, nsName, _ := strings.Cut(k, " ")
			ns, name, namespaced := strings.Cut(nsName, "/")
			if !namespaced {
				name, ns = nsName, ""
			}
			if want == name || want == ns+"/"+name {
				out = append(out, k)
			}
		}
	}
	return out
}

// compareTargetRows checks a row naming mutated targets: the rule's
// result for each, and its patchedResources against the target as the
// rules left it.
func compareTargetRows(t *suite.KyvernoTest, row suite.KyvernoResult, runs *kyvernoRuns, keys []string, policy string) []caseResult {
	var out []caseResult
	for _, k := range keys {
		c := caseResult{Suite: t.Path, Policy: row.Policy, Rule: row.Rule, Resource: k, Expected: row.Result}
		n := 0
		for _, rr := range runs.targets[k][policy] {
			if row.Rule != "" && rr.Rule != row.Rule {
				continue
			}
			n++
			rc := c
			rc.Got = string(rr.Status)
			if row.PatchedResources != "" && rr.Status == "pass" {
				if reason, _ := comparePatched(t, row.PatchedResources, runs.targetObjects[k], ""); reason != "" {
					rc.Reason = reason
				}
			}
			if rc.Reason == "" {
				rc.Reason = statusReason(row.Result, rr)
			}
			rc.Passed = rc.Reason == ""
			out = append(out, rc.named())
		}
		if n == 0 {
			c.Reason = "Not found"
			out = append(out, c.named())
		}
	}
	return out
}

// statusReason is why a rule result is not the row's ("" when it is):
// the result wanted and got, and the rule's message.
func statusReason(want string, rr kyvernoRuleResult) string {
	if string(rr.Status) == want {
		return ""
	}
	reason := fmt.Sprintf("Want %s, got %s", want, rr.Status)
	if rr.Message != "" {
		reason += ": " + rr.Message
	}
	return reason
}

// named fills a Kyverno row's case name: policy, rule, resource.
func (c caseResult) named() caseResult {
	c.Case = fmt.Sprintf("%s %s %s", c.Policy, c.Rule, c.Resource)
	if c.Note != "" {
		c.Case += " (" + c.Note + ")"
	}
	return c
}

// comparePatched compares the object the mutate rules left with the one of
// patchedResources (by apiVersion, kind, namespace and name), as kyverno
// test does: the expected object's namespace defaulted as the tested
// one's, both tidied of empty maps, lists and nulls, then equal. It
// returns why they differ ("" when equal); missing: the file has no such
// object.
func comparePatched(t *suite.KyvernoTest, file string, got any, denial string) (reason string, missing bool) {
	if got == nil {
		return "Resource error: the object was denied, so no patched resource to compare: " + denial, false
	}
	return compareObject(t, file, got, "patched", nil)
}

// compareGenerated compares a generated object with the one of files (the
// first equal passes), as kyverno test does: as comparePatched, with
// Kyverno's generate labels left out of both (managed-by kyverno kept).
func compareGenerated(t *suite.KyvernoTest, files []string, got map[string]any) string {
	var reasons []string
	for _, f := range files {
		reason, missing := compareObject(t, f, got, "generated", generateLabelsTidied)
		if reason == "" {
			return ""
		}
		if missing {
			reason = "Resource error: " + reason
		}
		reasons = append(reasons, reason)
	}
	return strings.Join(reasons, "\n")
}

// generateLabelsTidied sets obj's labels as kyverno test's
// FixupGenerateLabels does: managed-by kyverno, without the
// generate.kyverno.io/ labels.
func generateLabelsTidied(obj map[string]any) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	labels := map[string]any{"app.kubernetes.io/managed-by": "kyverno"}
	old, _ := md["labels"].(map[string]any)
	for k, v := range old {
		if !strings.HasPrefix(k, "generate.kyverno.io/") {
			labels[k] = v
		}
	}
	md["labels"] = labels
}

// objectName is kind namespace/name (kind name when cluster-scoped).
func objectName(obj map[string]any) string {
	a := newAdmission(obj, "")
	if a.ns == "" {
		return a.kind + "/" + a.name
	}
	return a.kind + "/" + a.ns + "/" + a.name
}

// compareObject compares got with the object of file of the same
// apiVersion, kind, namespace and name (what: "patched", "generated");
// fix, if not nil, changes copies of both first.
func compareObject(t *suite.KyvernoTest, file string, got any, what string, fix func(map[string]any)) (reason string, missing bool) {
	docs, err := source.ReadPaths([]string{t.Resolve(file)}, nil)
	if err != nil {
		return "Resource error: " + err.Error(), false
	}
	g := newAdmission(got.(map[string]any), "default")
	av, _ := g.obj["apiVersion"].(string)
	for _, d := range docs {
		e := newAdmission(value.DeepCopy(d.Object).(map[string]any), "default")
		if d.APIVersion() != av || e.kind != g.kind || e.ns != g.ns || e.name != g.name {
			continue
		}
		if md, ok := e.obj["metadata"].(map[string]any); ok && e.ns != "" {
			md["namespace"] = e.ns
		}
		if fix != nil {
			got = value.DeepCopy(got)
			fix(e.obj)
			fix(got.(map[string]any))
		}
		want, have := tidy(e.obj), tidy(got)
		if value.Equal(want, have) {
			return "", false
		}
		return "Resource diff: the " + what + " resource differs from " + file + ":\n" + strings.TrimRight(unifiedDiff(file, what, toYAML(want), toYAML(have), false), "\n"), false
	}
	return fmt.Sprintf("%s %s/%s is not in %s", g.kind, g.ns, g.name, file), true
}

// tidy drops nulls and empty maps and lists, as kyverno test does before
// comparing.
func tidy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if e = tidy(e); e != nil {
				out[k] = e
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range t {
			if e = tidy(e); e != nil {
				out = append(out, e)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}
