package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKyvernoPolicies runs Kyverno's ClusterPolicies, unchanged, on the real
// API server with the operator's --kyverno: the CRDs the chart installs, the
// Ready status, an Enforce pattern with anchors rejecting with Kyverno's
// message, an Audit deny admitting with a warning, a mutate rule patching
// (an added label, a conditional container field), and autogen covering a
// Deployment.
func TestKyvernoPolicies(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	// What the chart grants with kyverno.enabled (the bundle is rendered
	// with its defaults).
	grant(t, c, "modwright-kyverno", kyvernoRules...)
	a := cl.startOperator(t, "a", "--kyverno", "--kyverno-exception-namespace", "kyv-exceptions")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("kyv")})
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("kyv-exceptions")})

	enforce := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team-label
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [kyv]
    validate:
      message: "the label team is required"
      pattern:
        metadata:
          labels:
            =(team): "?*"
            team: "?*"
`)
	// Written in Kyverno's deprecated v2beta1: served too, and read
	// through v1.
	audit := kinitirasPolicy(t, `
apiVersion: kyverno.io/v2beta1
kind: ClusterPolicy
metadata:
  name: no-latest
spec:
  validationFailureAction: Audit
  rules:
  - name: no-latest
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [kyv]
    validate:
      message: "{{ request.object.metadata.name }} uses a latest image"
      deny:
        conditions:
          any:
          - key: "{{ request.object.spec.containers[].image }}"
            operator: AnyIn
            value: ["*:latest"]
`)
	mutate := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: defaults
spec:
  rules:
  - name: owner-label
    match:
      any:
      - resources:
          kinds: [Pod]
          namespaces: [kyv]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(owner): platform
        spec:
          containers:
          - (image): "*:1.27"
            imagePullPolicy: Always
`)
	create(t, c, enforce)
	create(t, c, audit)
	create(t, c, mutate)
	for _, p := range []client.Object{enforce, audit, mutate} {
		if cond := readyCondition(t, c, p); cond.Status != metav1.ConditionTrue {
			t.Fatalf("%s: Ready %s: %s", p.GetName(), cond.Status, cond.Message)
		}
	}
	pod := func(name, image string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kyv", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}
	}

	t.Run("Enforce rejects with Kyverno's message", func(t *testing.T) {
		eventually(t, 20*time.Second, func() error {
			err := c.Create(ctx, pod("unlabelled", "nginx:1.27", nil), client.DryRunAll)
			if err == nil {
				return fmt.Errorf("admitted")
			}
			if !strings.Contains(err.Error(), "validation error: the label team is required. rule team-label failed at path /metadata/labels/") {
				t.Fatalf("denial: %v", err)
			}
			return nil
		})
		if err := c.Create(ctx, pod("labelled", "nginx:1.27", map[string]string{"team": "a"}), client.DryRunAll); err != nil {
			t.Errorf("a labelled Pod: %v", err)
		}
	})

	t.Run("Audit admits with a warning", func(t *testing.T) {
		w := &warnings{}
		cfg := rest.CopyConfig(cl.cfg)
		cfg.WarningHandlerWithContext = w
		wc, err := client.New(cfg, client.Options{Scheme: newScheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := wc.Create(ctx, pod("latest", "nginx:latest", map[string]string{"team": "a"}), client.DryRunAll); err != nil {
			t.Fatalf("an Audit failure refused the create: %v", err)
		}
		got := strings.Join(w.take(), "\n")
		if !strings.Contains(got, "policy no-latest, rule no-latest (Audit): latest uses a latest image") {
			t.Errorf("warnings %q", got)
		}
	})

	t.Run("a mutate rule patches at admission, before the validate rules", func(t *testing.T) {
		// The API server defaults imagePullPolicy to IfNotPresent for a
		// tagged image: Always is the rule's.
		p := pod("mutated", "nginx:1.27", map[string]string{"team": "a"})
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if p.Labels["owner"] != "platform" || p.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
			t.Errorf("labels %v, imagePullPolicy %q: want the owner label added and Always", p.Labels, p.Spec.Containers[0].ImagePullPolicy)
		}
		p = pod("owned", "nginx:1.26", map[string]string{"team": "a", "owner": "web"})
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if p.Labels["owner"] != "web" || p.Spec.Containers[0].ImagePullPolicy == corev1.PullAlways {
			t.Errorf("labels %v, imagePullPolicy %q: want them as they were", p.Labels, p.Spec.Containers[0].ImagePullPolicy)
		}
	})

	t.Run("autogen covers a Deployment", func(t *testing.T) {
		d := deployment("kyv", "web", "nginx:1.27", false)
		err := c.Create(ctx, d, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "rule autogen-team-label failed at path /spec/template/metadata/labels/") {
			t.Errorf("a Deployment whose pods lack the label: %v", err)
		}
		d = deployment("kyv", "web", "nginx:1.27", false)
		d.Spec.Template.Labels["team"] = "a"
		if err := c.Create(ctx, d, client.DryRunAll); err != nil {
			t.Errorf("a Deployment whose pods have the label: %v", err)
		}
	})

	t.Run("validate.cel reads its params from the cluster", func(t *testing.T) {
		// What kyverno.paramRules would grant.
		grant(t, c, "modwright-kyverno-params", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "replica-limit", Namespace: "kyv"}, Data: map[string]string{"max": "2"}})
		limits := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: replica-limits
spec:
  validationFailureAction: Enforce
  rules:
  - name: within-limit
    match: {any: [{resources: {kinds: [Deployment], namespaces: [kyv, kyv-exceptions]}}]}
    validate:
      cel:
        paramKind: {apiVersion: v1, kind: ConfigMap}
        paramRef: {name: replica-limit, parameterNotFoundAction: Deny}
        expressions:
        - expression: "object.spec.replicas <= int(params.data.max)"
          messageExpression: "'at most ' + params.data.max + ' replicas'"
`)
		create(t, c, limits)
		if cond := readyCondition(t, c, limits); cond.Status != metav1.ConditionTrue {
			t.Fatalf("Ready %s: %s", cond.Status, cond.Message)
		}
		replicas := func(ns string, n int32) *appsv1.Deployment {
			d := deployment(ns, "limited", "nginx:1.27", false)
			d.Spec.Template.Labels["team"] = "a"
			d.Spec.Replicas = &n
			return d
		}
		eventually(t, 20*time.Second, func() error {
			err := c.Create(ctx, replicas("kyv", 3), client.DryRunAll)
			if err == nil {
				return fmt.Errorf("3 replicas admitted")
			}
			if !strings.Contains(err.Error(), "at most 2 replicas") {
				t.Fatalf("denial: %v", err)
			}
			return nil
		})
		if err := c.Create(ctx, replicas("kyv", 2), client.DryRunAll); err != nil {
			t.Errorf("2 replicas: %v", err)
		}
		// No param in that namespace: the rule's error, which denies.
		if err := c.Create(ctx, replicas("kyv-exceptions", 1), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "error in parameterized resource") || !strings.Contains(err.Error(), "not found") {
			t.Errorf("without a param: %v", err)
		}
	})

	t.Run("a PolicyException of a trusted namespace lets a named Pod through", func(t *testing.T) {
		exception := func(ns, names string) client.Object {
			return kinitirasPolicy(t, `
apiVersion: kyverno.io/v2beta1
kind: PolicyException
metadata:
  name: legacy
  namespace: `+ns+`
spec:
  exceptions:
  - policyName: require-team
    ruleNames: [team-label, "autogen-*"]
  match:
    any:
    - resources:
        kinds: [Pod]
        names: ["`+names+`"]
`)
		}
		create(t, c, exception("kyv-exceptions", "legacy-*"))
		create(t, c, exception("kyv", "other-*")) // not a trusted namespace
		eventually(t, 20*time.Second, func() error {
			return c.Create(ctx, pod("legacy-billing", "nginx:1.27", nil), client.DryRunAll)
		})
		if err := c.Create(ctx, pod("other-billing", "nginx:1.27", nil), client.DryRunAll); err == nil {
			t.Error("an exception outside the trusted namespaces let a Pod through")
		}
	})

	t.Run("a broken policy is kept with its error", func(t *testing.T) {
		bad := kinitirasPolicy(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: broken
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      deny:
        conditions:
          any: [{key: "{{ request.object.metadata.name[ }}", operator: Equals, value: x}]
`)
		create(t, c, bad)
		cond := readyCondition(t, c, bad)
		if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "spec.rules[0].validate.deny.conditions") || !strings.Contains(cond.Message, "SyntaxError") {
			t.Errorf("Ready %s: %s", cond.Status, cond.Message)
		}
	})
}

// kyvernoRules are what the chart grants with kyverno.enabled.
var kyvernoRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"clusterpolicies", "policies"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"clusterpolicies/status", "policies/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"policyexceptions"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"globalcontextentries"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"globalcontextentries/status"}, Verbs: []string{"get", "update", "patch"}}}

// grant gives the operator's service account rules through a ClusterRole
// and its binding, both named name (what the chart grants with values the
// bundle, rendered with the defaults, leaves out).
func grant(t *testing.T, c client.Client, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metaName(name), Rules: rules})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metaName(name),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: operatorUser}}})
}

// kyvernoCELRules are what the chart grants with kyverno.celPolicies.
var kyvernoCELRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"policies.kyverno.io"}, Resources: []string{"validatingpolicies", "namespacedvalidatingpolicies", "mutatingpolicies", "namespacedmutatingpolicies", "generatingpolicies", "namespacedgeneratingpolicies"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"policies.kyverno.io"}, Resources: []string{"validatingpolicies/status", "namespacedvalidatingpolicies/status", "mutatingpolicies/status", "namespacedmutatingpolicies/status", "generatingpolicies/status", "namespacedgeneratingpolicies/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"globalcontextentries"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"kyverno.io"}, Resources: []string{"globalcontextentries/status"}, Verbs: []string{"get", "update", "patch"}}}

// TestKyvernoCELPolicies runs Kyverno's CEL policies, unchanged, on the
// real API server with the operator's --kyverno-cel: the chart's CRDs,
// the Ready status, a ValidatingPolicy denying with its message (and its
// autogen covering a Deployment), a MutatingPolicy patching.
func TestKyvernoCELPolicies(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	grant(t, c, "modwright-kyverno-cel", append(kyvernoCELRules,
		rbacv1.PolicyRule{APIGroups: []string{"policies.kyverno.io"}, Resources: []string{"policyexceptions"}, Verbs: []string{"get", "list", "watch"}})...)
	a := cl.startOperator(t, "a", "--kyverno-cel", "--kyverno-exception-namespace=kcel-exceptions")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	create(t, c, &corev1.Namespace{ObjectMeta: metaName("kcel")})
	vpol := kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: require-team
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pods]}
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: kcel}
  validations:
  - expression: "object.metadata.?labels.team.orValue('') != ''"
    message: the label team is required
`)
	mpol := kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: NamespacedMutatingPolicy
metadata:
  name: run-as-non-root
  namespace: kcel
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{spec: Object.spec{securityContext: Object.spec.securityContext{runAsNonRoot: true}}}"
`)
	create(t, c, vpol)
	create(t, c, mpol)
	for _, p := range []client.Object{vpol, mpol} {
		if cond := readyCondition(t, c, p); cond.Status != metav1.ConditionTrue {
			t.Fatalf("%s: Ready %s: %s", p.GetName(), cond.Status, cond.Message)
		}
	}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kcel", Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
	}
	t.Run("a ValidatingPolicy denies with its message", func(t *testing.T) {
		eventually(t, 20*time.Second, func() error {
			err := c.Create(ctx, pod("unlabelled", nil), client.DryRunAll)
			if err == nil {
				return fmt.Errorf("admitted")
			}
			if !strings.Contains(err.Error(), "the label team is required") {
				t.Fatalf("denial: %v", err)
			}
			return nil
		})
		d := deployment("kcel", "web", "nginx:1.27", false)
		if err := c.Create(ctx, d, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "the label team is required") {
			t.Errorf("autogen: a Deployment whose pods lack the label: %v", err)
		}
	})
	t.Run("a MutatingPolicy patches, then the ValidatingPolicy checks", func(t *testing.T) {
		p := pod("labelled", map[string]string{"team": "a"})
		if err := c.Create(ctx, p, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		if sc := p.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("securityContext %+v: want runAsNonRoot set by the MutatingPolicy", sc)
		}
	})
	t.Run("a PolicyException of a trusted namespace exempts", func(t *testing.T) {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName("kcel-exceptions")})
		create(t, c, kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: break-glass
  namespace: kcel-exceptions
spec:
  policyRefs: [{name: require-team, kind: ValidatingPolicy}]
  matchConditions:
  - {name: break-glass, expression: "object.metadata.name.startsWith('break-glass-')"}
`))
		eventually(t, 20*time.Second, func() error {
			return c.Create(ctx, pod("break-glass-1", nil), client.DryRunAll)
		})
		if err := c.Create(ctx, pod("other", nil), client.DryRunAll); err == nil || !strings.Contains(err.Error(), "the label team is required") {
			t.Errorf("a pod the exception does not match: %v", err)
		}
	})
	t.Run("Kyverno's resource library reads the API server, a namespaced policy as its namespace's rule reader", func(t *testing.T) {
		// The operator reads ConfigMaps for the cluster-scoped policy, as
		// an apiCall's reads need it granted.
		grant(t, c, "modwright-read-configmaps", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
		teams := configMap("kcel", "teams", nil)
		teams.Data = map[string]string{"allowed": "a,b"}
		create(t, c, teams)
		limits := configMap("kcel", "limits", nil)
		limits.Data = map[string]string{"maxContainers": "1"}
		create(t, c, limits)
		create(t, c, kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: known-team
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: kcel}
  variables:
  - name: allowed
    expression: "resource.Get('v1', 'configmaps', 'kcel', 'teams').data.allowed.split(',')"
  validations:
  - expression: "object.metadata.?labels.team.orValue('') in variables.allowed"
    messageExpression: "'team ' + object.metadata.?labels.team.orValue('') + ' is not one of ' + variables.allowed.join(', ')"
`))
		create(t, c, kinitirasPolicy(t, `
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata:
  name: container-limit
  namespace: kcel
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "size(object.spec.containers) <= int(resource.Get('v1', 'configmaps', 'limits').data.maxContainers)"
    message: too many containers
`))
		// Before the namespace's rule reader may read the ConfigMap, the
		// namespaced policy's read is refused: an error, and the policy
		// fails closed.
		eventually(t, 20*time.Second, func() error {
			err := c.Create(ctx, pod("c-team", map[string]string{"team": "c"}), client.DryRunAll)
			if err == nil || !strings.Contains(err.Error(), "team c is not one of a, b") {
				return fmt.Errorf("team c: %v", err)
			}
			if !strings.Contains(err.Error(), "reads as system:serviceaccount:kcel:modwright-rules, which may not get configmaps in kcel") {
				return fmt.Errorf("the namespaced policy's read before the grant: %v", err)
			}
			return nil
		})
		create(t, c, &rbacv1.Role{ObjectMeta: metaNS("kcel", "rules-read-limits"), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"limits"}, Verbs: []string{"get"}}}})
		create(t, c, &rbacv1.RoleBinding{ObjectMeta: metaNS("kcel", "rules-read-limits"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rules-read-limits"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "modwright-rules", Namespace: "kcel"}}})
		eventually(t, 30*time.Second, func() error { // the denial is cached for 10 s
			if err := c.Create(ctx, pod("a-team", map[string]string{"team": "a"}), client.DryRunAll); err != nil {
				return fmt.Errorf("team a, one container: %v", err)
			}
			p := pod("two", map[string]string{"team": "b"})
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "nginx:1.27"})
			if err := c.Create(ctx, p, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "too many containers") {
				return fmt.Errorf("two containers: %v", err)
			}
			return nil
		})
	})
}
