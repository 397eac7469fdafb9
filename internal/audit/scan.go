package audit

import (
	"context"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

// Status is a result, as PolicyReports name them.
type Status string

// Results.
const (
	Pass  Status = "pass"
	Fail  Status = "fail"
	Warn  Status = "warn"
	Error Status = "error"
	Skip  Status = "skip"
)

// Statuses are the results, the most pressing first (a capped report
// keeps results in this order).
var Statuses = []Status{Fail, Error, Warn, Skip, Pass}

// rank orders statuses as Statuses does.
func (s Status) rank() int {
	for i, x := range Statuses {
		if x == s {
			return i
		}
	}
	return len(Statuses)
}

// Resource names an object.
type Resource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// String is kind namespace/name.
func (r Resource) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Result is one rule's result on one object.
type Result struct {
	// Policy is the rule's key (namespace/name, or name); Kind its kind,
	// Group its kind's API group.
	Policy string `json:"policy"`
	Kind   string `json:"kind"`
	Group  string `json:"-"`
	// Rule is the rule inside the policy (Kyverno's), else the policy's
	// name.
	Rule     string   `json:"rule"`
	Result   Status   `json:"result"`
	Message  string   `json:"message,omitempty"`
	Severity string   `json:"severity,omitempty"`
	Category string   `json:"category,omitempty"`
	Resource Resource `json:"resource"`
}

// innerResults is a kind's trace detail that knows the results of the
// rules inside its policy (Kyverno's rules, a ModwrightPolicy's
// validations).
type innerResults interface {
	AuditResults(yield func(rule, status, message string))
}

// labelled is a rule that gives its results a severity and a category
// (Kyverno's policies.kyverno.io annotations).
type labelled interface {
	ReportLabels() (severity, category string)
}

// Scanner evaluates objects for a background scan. It is safe for
// concurrent use.
type Scanner struct {
	eng    *engine.Engine
	snap   *engine.Snapshot
	labels map[string][2]string      // by rule key
	groups map[engine.RuleRef]string // by kind and key
}

// NewScanner scans with snap's rules and the readers of opts (its trace
// is always kept: the results come from it).
func NewScanner(snap *engine.Snapshot, opts engine.Options) *Scanner {
	opts.NoTrace = false
	s := &Scanner{eng: engine.New(opts), snap: snap, labels: map[string][2]string{}, groups: map[engine.RuleRef]string{}}
	for _, r := range snap.Rules() {
		info := r.Info()
		s.groups[engine.RuleRef{Kind: info.Kind, Key: info.Key}] = info.Group
		if l, ok := r.(labelled); ok {
			sev, cat := l.ReportLabels()
			s.labels[r.Info().Key] = [2]string{sev, cat}
		}
	}
	return s
}

// Scan evaluates obj (namespace ns: its own, or the namespace a namespaced
// object without one is taken to be in; "" for a cluster-scoped one) and
// returns the results of the rules that applied, in evaluation order. An
// error is the evaluation's end (its context's), never a rule's.
func (s *Scanner) Scan(ctx context.Context, obj map[string]any, ns string) ([]Result, error) {
	req := kinds.OfflineRequest(obj, ns, rules.Create)
	req.Background, req.Phases = true, engine.Validate
	dec, err := s.eng.Evaluate(ctx, s.snap, req)
	if err != nil {
		return nil, err
	}
	res := Resource{APIVersion: apiVersion(req.Kind), Kind: req.Kind.Kind, Namespace: ns, Name: req.Name}
	if md, ok := obj["metadata"].(map[string]any); ok {
		res.UID, _ = md["uid"].(string)
	}
	rejected := map[string][]string{}
	for _, r := range dec.Rejections {
		msg := r.Message
		if msg == "" {
			msg = "rejected by " + r.Rule
		}
		rejected[r.Rule] = append(rejected[r.Rule], msg)
	}
	for _, w := range dec.Warnings {
		rejected[w.Rule] = append(rejected[w.Rule], w.Message)
	}
	var out []Result
	for i := range dec.Trace {
		tr := &dec.Trace[i]
		if tr.Phase != engine.Validate || tr.Outcome == engine.NotMatched {
			continue
		}
		base := Result{Policy: tr.Rule, Kind: tr.Kind, Group: s.groups[engine.RuleRef{Kind: tr.Kind, Key: tr.Rule}], Rule: policyName(tr.Rule), Resource: res}
		if l, ok := s.labels[tr.Rule]; ok {
			base.Severity, base.Category = l[0], l[1]
		}
		add := func(rule string, st Status, msg string) {
			r := base
			if rule != "" {
				r.Rule = rule
			}
			r.Result, r.Message = st, msg
			out = append(out, r)
		}
		if in, ok := tr.Detail.(innerResults); ok {
			in.AuditResults(func(rule, status, msg string) { add(rule, Status(status), msg) })
			continue
		}
		switch {
		case tr.Outcome == engine.Failed:
			add("", Error, tr.Reason)
		case tr.Outcome == engine.Skipped:
			add("", Skip, tr.Reason)
		case len(rejected[tr.Rule]) > 0:
			add("", Fail, strings.Join(rejected[tr.Rule], "; "))
		default:
			add("", Pass, "")
		}
	}
	return out, nil
}

// policyName is a key's name (the part after its namespace).
func policyName(key string) string { return key[strings.LastIndex(key, "/")+1:] }

func apiVersion(g engine.GroupVersionKind) string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}
