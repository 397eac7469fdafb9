package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/translate"
	"github.com/modwright/modwright/internal/webhook"
)

// ConditionNative is the rule status condition that says where a rule runs
// with --compile-native: True in the API server (compiled into an
// admission policy), False in the webhook (with the reason).
const ConditionNative = "NativeAdmission"

// ReasonFaster is the NativeAdmission reason of a rule that translates but
// runs in the webhook, faster there (translate.PlaceFastest).
const ReasonFaster = "WebhookFaster"

// The kinds of what the compiler installs.
var policyKinds = []schema.GroupVersionKind{
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingAdmissionPolicyBinding"},
}

// PolicyInstaller runs, with --compile-native, the rules that translate
// exactly (internal/translate) in the API server: the leader installs their
// admission policies (and removes the ones no rule needs any more) and
// writes each rule's NativeAdmission condition; every replica takes a rule
// out of its webhook only once the API server holds its translation as it
// is, so that no rule is ever served by neither.
type PolicyInstaller struct {
	Client client.Client
	// Rules are the kinds compiled (translate.Kinds, and the others
	// translate.CompileAll compiles that the operator serves).
	Rules []schema.GroupVersionKind
	// ExceptionNamespaces are the namespaces whose exceptions
	// (translate.ExceptionKinds) the webhook honours: a rule one of them
	// names stays in the webhook, as the API server's admission policies
	// know no exceptions.
	ExceptionNamespaces []string
	Options             translate.Options
	// Placement: which of the rules that translate run in the API server
	// (translate.Place; the zero value keeps in the webhook those faster
	// there).
	Placement translate.Placement
	Filter    *webhook.ExcludeFilter
	// Elected is closed once this replica leads (mgr.Elected()).
	Elected <-chan struct{}
	// Served is what the dragnet serves (the filter, or a kind filter
	// over it); with Config and Webhook set, the leader narrows that
	// webhook to the namespaces of the rules left to it (a match
	// condition), so that the other requests never leave the API server.
	Served   webhook.Snapshots
	Config   string // the MutatingWebhookConfiguration
	Webhook  string // the dragnet's webhook in it
	Log      logr.Logger
	Interval time.Duration // between two passes; 0 means 2 s

	// The last compilation and what it was of (each rule's kind, key,
	// uid and generation): a pass whose rules did not change reuses it
	// rather than compiling them all again.
	mu       sync.Mutex
	lastOf   string
	lastComp translate.Result
}

var (
	_ manager.Runnable               = (*PolicyInstaller)(nil)
	_ manager.LeaderElectionRunnable = (*PolicyInstaller)(nil)
)

// NeedLeaderElection is false: every replica filters its webhook; only
// the leader writes.
func (n *PolicyInstaller) NeedLeaderElection() bool { return false }

// Start runs a pass every Interval until ctx ends.
func (n *PolicyInstaller) Start(ctx context.Context) error {
	every := n.Interval
	if every <= 0 {
		every = 2 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := n.Sync(ctx); err != nil && ctx.Err() == nil {
			n.Log.Error(err, "compiling rules to admission policies")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (n *PolicyInstaller) leader() bool {
	select {
	case <-n.Elected:
		return true
	default:
		return false
	}
}

// Sync compiles the current rules, installs their policies (leader) and
// updates the webhook's exclusions.
func (n *PolicyInstaller) Sync(ctx context.Context) error {
	all := n.Filter.Source.Current()
	if all == nil {
		return nil // no rule loaded yet: where each runs is decided with the others
	}
	items, objects, of, err := n.list(ctx)
	if err != nil {
		return err
	}
	excepted, err := n.exceptions(ctx, &of)
	if err != nil {
		return err
	}
	res := n.compile(of, func() translate.Result {
		var rules []translate.Rule
		var skipped []translate.Skip
		for _, it := range items {
			obj := it.u.DeepCopy().Object
			delete(obj, "status")
			r := translate.Rule{Kind: it.kind, Object: obj}
			r.Origin = it.kind + " " + r.Key()
			if ex := excepted[webhook.ExcludeKey(it.kind, r.Key())]; ex != "" {
				skipped = append(skipped, translate.Skip{Rule: r, Reason: "the " + ex +
					" names it, and the API server's admission policies know no exceptions"})
				continue
			}
			rules = append(rules, r)
		}
		res := translate.CompileAll(rules, n.Options)
		res.Skipped = append(skipped, res.Skipped...)
		return res
	})
	// Placed at every pass: the rules of the kinds not compiled change
	// without the compilation's.
	res = translate.Place(res, n.Placement, Scopes(all))
	leader := n.leader()
	desired := map[string]bool{}
	excluded := map[string]bool{}
	where := map[string]string{} // rule -> where it runs, for the status
	for _, t := range res.Translated {
		installed := true
		var names []string
		for _, o := range t.Objects {
			u := &unstructured.Unstructured{Object: o}
			desired[u.GetKind()+"/"+u.GetName()] = true
			if !strings.HasSuffix(u.GetKind(), "Binding") {
				names = append(names, u.GetKind()+" "+u.GetName())
			}
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(u.GroupVersionKind())
			holding := n.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, cur) == nil && holds(cur.Object["spec"], o["spec"]) && holds(cur.Object["metadata"], o["metadata"])
			if !holding && leader {
				// Installed now; served by the webhook until the next pass
				// sees it held.
				if err := n.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("modwright-compile"), client.ForceOwnership); err != nil {
					return fmt.Errorf("installing %s %s: %w", u.GetKind(), u.GetName(), err)
				}
			}
			installed = installed && holding
		}
		for _, r := range t.Rules {
			k := webhook.ExcludeKey(r.Kind, r.Key())
			if installed {
				excluded[k] = true
			}
			where[k] = "runs in the API server: " + strings.Join(names, ", ")
		}
	}
	n.Filter.SetExcluded(excluded)
	if !leader {
		return nil
	}
	if err := n.narrow(ctx); err != nil {
		return err
	}
	// What no rule needs any more.
	for _, gvk := range policyKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := n.Client.List(ctx, l, client.MatchingLabels{translate.ManagedLabel: "true"}); err != nil {
			return fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			if !desired[u.GetKind()+"/"+u.GetName()] {
				if err := n.Client.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("removing %s %s: %w", u.GetKind(), u.GetName(), err)
				}
			}
		}
	}
	// Each rule's condition.
	reasons, kept := map[string]string{}, map[string]bool{}
	for _, s := range res.Skipped {
		reasons[webhook.ExcludeKey(s.Rule.Kind, s.Rule.Key())] = s.Reason
		kept[webhook.ExcludeKey(s.Rule.Kind, s.Rule.Key())] = s.Kept
	}
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := metav1.Condition{Type: ConditionNative, Status: metav1.ConditionFalse, Reason: "Webhook", Message: "runs in the webhook: " + reasons[k]}
		if kept[k] {
			c.Reason = ReasonFaster
		}
		if w, ok := where[k]; ok {
			c = metav1.Condition{Type: ConditionNative, Status: metav1.ConditionTrue, Reason: "AdmissionPolicy", Message: w}
			if !excluded[k] {
				c.Status, c.Reason, c.Message = metav1.ConditionFalse, "Installing", "runs in the webhook until the API server holds its policy: "+strings.TrimPrefix(w, "runs in the API server: ")
			}
		}
		if err := n.setCondition(ctx, objects[k], c); err != nil {
			return err
		}
	}
	return nil
}

// item is a rule of one of the kinds compiled.
type item struct {
	kind string
	u    *unstructured.Unstructured
}

// list lists the rules of the kinds compiled: each, by exclusion key, and
// what each is (of: kind, key, uid and generation).
func (n *PolicyInstaller) list(ctx context.Context) ([]item, map[string]*unstructured.Unstructured, []string, error) {
	var items []item
	objects := map[string]*unstructured.Unstructured{}
	var of []string
	for _, gvk := range n.Rules {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := n.Client.List(ctx, l); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, nil, nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			u := &l.Items[i]
			key := translate.Rule{Kind: gvk.Kind, Object: u.Object}.Key()
			items = append(items, item{gvk.Kind, u})
			objects[webhook.ExcludeKey(gvk.Kind, key)] = u
			of = append(of, fmt.Sprintf("%s %s %s %d", gvk.Kind, key, u.GetUID(), u.GetGeneration()))
		}
	}
	return items, objects, of, nil
}

// compile is the rules' compilation, reused while of (what each rule is,
// and each exception: its status aside, one changes only with its
// generation) is the last pass's; compile is called only when they change.
func (n *PolicyInstaller) compile(of []string, compile func() translate.Result) translate.Result {
	slices.Sort(of)
	key := strings.Join(of, "\n")
	n.mu.Lock()
	defer n.mu.Unlock()
	if key != n.lastOf || key == "" {
		n.lastComp, n.lastOf = compile(), key
	}
	return n.lastComp
}

// exceptions are the rules the exceptions of ExceptionNamespaces name
// (translate.ExceptionRefs), by exclusion key: the exception's kind and
// namespace/name; each exception is added to of.
func (n *PolicyInstaller) exceptions(ctx context.Context, of *[]string) (map[string]string, error) {
	out := map[string]string{}
	for _, gvk := range translate.ExceptionKinds(n.Rules) {
		for _, ns := range n.ExceptionNamespaces {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := n.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
				if meta.IsNoMatchError(err) {
					break
				}
				return nil, fmt.Errorf("listing %s in %s: %w", gvk.Kind, ns, err)
			}
			for i := range l.Items {
				u := &l.Items[i]
				name := gvk.Kind + " " + ns + "/" + u.GetName()
				*of = append(*of, fmt.Sprintf("%s %s %d", name, u.GetUID(), u.GetGeneration()))
				for _, r := range translate.ExceptionRefs(gvk, u.Object) {
					if k := webhook.ExcludeKey(r.Kind, r.Key); out[k] == "" {
						out[k] = name
					}
				}
			}
		}
	}
	return out, nil
}

// setCondition writes a rule's NativeAdmission condition when it changed.
func (n *PolicyInstaller) setCondition(ctx context.Context, u *unstructured.Unstructured, c metav1.Condition) error {
	c.ObservedGeneration = u.GetGeneration()
	c.Message = rules.Truncate(c.Message, rules.MaxConditionMessage)
	st := readStatus(u)
	if old := meta.FindStatusCondition(st.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
		return nil
	}
	orig := u.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, c)
	if err := writeStatus(u, st); err != nil {
		return err
	}
	if err := n.Client.Status().Patch(ctx, u, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing the status of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// holds reports whether cur, a stored spec (defaulted by the API server),
// has every field of want as want has it.
func holds(cur, want any) bool {
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out any
		if utiljson.Unmarshal(b, &out) != nil {
			return nil
		}
		return out
	}
	return subset(norm(cur), norm(want))
}

func subset(cur, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		c, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if !subset(c[k], wv) {
				return false
			}
		}
		return true
	case []any:
		c, ok := cur.([]any)
		if !ok || len(c) != len(w) {
			return false
		}
		for i := range w {
			if !subset(c[i], w[i]) {
				return false
			}
		}
		return true
	}
	return equality.Semantic.DeepEqual(cur, want)
}

// NarrowCondition is the name of the match condition the leader keeps on
// the dragnet's webhook with --compile-native.
const NarrowCondition = "modwright-rules-left"

// narrow keeps the dragnet webhook's NarrowCondition: false when no rule
// is left to the webhook, the namespaces of those left when every one is
// pinned to a namespace (a Namespace counting as cluster-scoped, as the
// dragnet takes it), absent when one applies anywhere.
func (n *PolicyInstaller) narrow(ctx context.Context) error {
	if n.Served == nil || n.Config == "" || n.Webhook == "" {
		return nil
	}
	snap := n.Served.Current()
	if snap == nil {
		return nil
	}
	expr := narrowExpression(snap)
	var c admissionv1.MutatingWebhookConfiguration
	if err := n.Client.Get(ctx, client.ObjectKey{Name: n.Config}, &c); err != nil {
		return client.IgnoreNotFound(err)
	}
	orig := c.DeepCopy()
	changed := false
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		if w.Name != n.Webhook {
			continue
		}
		at := slices.IndexFunc(w.MatchConditions, func(m admissionv1.MatchCondition) bool { return m.Name == NarrowCondition })
		switch {
		case expr == "" && at >= 0:
			w.MatchConditions = slices.Delete(w.MatchConditions, at, at+1)
			changed = true
		case expr != "" && at < 0:
			w.MatchConditions = append(w.MatchConditions, admissionv1.MatchCondition{Name: NarrowCondition, Expression: expr})
			changed = true
		case expr != "" && w.MatchConditions[at].Expression != expr:
			w.MatchConditions[at].Expression = expr
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := n.Client.Patch(ctx, &c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("narrowing the webhook %s: %w", n.Webhook, err)
	}
	n.Log.Info("narrowed the dragnet webhook to the rules left to it", "condition", expr)
	return nil
}

// narrowExpression is the match condition for the rules of snap ("": none,
// some rule applies anywhere).
func narrowExpression(snap *engine.Snapshot) string {
	namespaces := map[string]bool{}
	for _, r := range Scopes(snap) {
		if r.Scope.Anywhere {
			return ""
		}
		namespaces[r.Scope.Namespace] = true
	}
	if len(namespaces) == 0 {
		return "false"
	}
	list := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		list = append(list, strconv.Quote(ns))
	}
	slices.Sort(list)
	return "(request.kind.group == '' && request.kind.kind == 'Namespace' ? '' : (has(request.namespace) ? request.namespace : '')) in [" + strings.Join(list, ", ") + "]"
}

// Scopes are the rules of snap with their scopes as the dragnet's
// narrowing takes them (translate.Place's input).
func Scopes(snap *engine.Snapshot) []translate.ScopedRule {
	all := snap.Rules()
	out := make([]translate.ScopedRule, 0, len(all))
	for _, r := range all {
		info := r.Info()
		ix := info.Index
		out = append(out, translate.ScopedRule{Ref: translate.RuleRef{Kind: info.Kind, Key: info.Key},
			Scope: translate.Scope{Namespace: ix.Namespace, Anywhere: ix.AnyNamespace || ix.Filtered}})
	}
	return out
}
