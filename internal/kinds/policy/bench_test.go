package policy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// The benchmarks below evaluate the load test's Deployment
// (testdata/bench/objects/deployment.json: 3.3 KB, namespace bench, with a
// last-applied-configuration annotation), decoded beforehand, through
// engine.Evaluate without a trace, as the webhook does.

const benchNS = "bench"

// benchObject is the load test's Deployment; compliant adds what the
// Pod Security Standards' restricted level asks of its pod template (a
// securityContext on the pod and on each container), so that all 16
// checks pass.
func benchObject(b testing.TB, compliant bool) map[string]any {
	b.Helper()
	return testtool.BenchDeployment(b, compliant)
}

// benchLoad compiles a YAML stream of Policies, ClusterPolicies and
// ModRules into a snapshot.
func benchLoad(b testing.TB, yaml string) *engine.Snapshot {
	b.Helper()
	docs, err := source.ParseManifest("bench.yaml", []byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	reg := kinds.NewRegistry(policy.NewPolicyKind(), policy.NewClusterPolicyKind(), modrule.NewKind(""),
		kinitiras.NewClusterOverridePolicyKind(), kinitiras.NewOverridePolicyKind(), kinitiras.NewClusterValidatePolicyKind())
	res := source.LoadRules(docs, reg)
	if len(res.Errors) > 0 || len(res.Skipped) > 0 {
		b.Fatalf("load: errors %v, skipped %v", res.Errors, res.Skipped)
	}
	return engine.NewSnapshot(res.Rules)
}

// benchEval measures Evaluate of obj against snap; the first decision is
// checked (no rule errors, then check).
func benchEval(b *testing.B, snap *engine.Snapshot, obj map[string]any, check func(*engine.Decision) error) {
	b.Helper()
	eng := engine.New(engine.Options{NoTrace: true})
	req := engine.Request{Operation: rules.Create, Namespace: benchNS, Name: "nginx-deployment",
		Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}
	ctx := context.Background()
	checked := false
	b.ReportAllocs()
	for b.Loop() {
		d, err := eng.Evaluate(ctx, snap, req)
		if err != nil {
			b.Fatal(err)
		}
		if checked {
			continue
		}
		checked = true
		if len(d.Errors) > 0 {
			b.Fatalf("rule errors: %v", d.Errors)
		}
		if check != nil {
			if err := check(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// pssCheck is one Pod Security Standards control, as a CEL validation over
// a pod template: variables.spec is the pod spec, variables.containers its
// containers of every sort.
type pssCheck struct {
	name, cel, message string
}

// pssChecks are 16 controls of the Pod Security Standards (the baseline
// level, then the restricted one), after Kyverno's ValidatingPolicy set:
// the 3.3 KB Deployment passes the baseline ones and fails 3 restricted
// ones (privilege escalation, runAsNonRoot, a seccomp profile).
func pssChecks() []pssCheck {
	const (
		c = "variables.containers"
		// sc guards a container's securityContext field f.
		sc  = "has(c.securityContext) && has(c.securityContext."
		psc = "has(variables.spec.securityContext) && has(variables.spec.securityContext."
	)
	return []pssCheck{
		{"disallow-capabilities", c + `.all(c, !(` + sc + `capabilities) && has(c.securityContext.capabilities.add)) || c.securityContext.capabilities.add.all(x, x in ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']))`,
			"adding capabilities beyond the baseline set is disallowed"},
		{"disallow-host-namespaces", `!variables.spec.?hostNetwork.orValue(false) && !variables.spec.?hostPID.orValue(false) && !variables.spec.?hostIPC.orValue(false)`,
			"sharing the host namespaces is disallowed"},
		{"disallow-host-path", `!has(variables.spec.volumes) || variables.spec.volumes.all(v, !has(v.hostPath))`,
			"hostPath volumes are forbidden"},
		{"disallow-host-ports", c + `.all(c, !has(c.ports) || c.ports.all(p, p.?hostPort.orValue(0) == 0))`,
			"host ports are disallowed"},
		{"disallow-host-process", `!variables.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false) && ` + c + `.all(c, !c.?securityContext.?windowsOptions.?hostProcess.orValue(false))`,
			"HostProcess containers are disallowed"},
		{"disallow-privileged-containers", c + `.all(c, !c.?securityContext.?privileged.orValue(false))`,
			"privileged mode is disallowed"},
		{"disallow-proc-mount", c + `.all(c, c.?securityContext.?procMount.orValue('Default') == 'Default')`,
			"changing the proc mount from the default is not allowed"},
		{"disallow-selinux", `!(` + psc + `seLinuxOptions) && (has(variables.spec.securityContext.seLinuxOptions.user) || has(variables.spec.securityContext.seLinuxOptions.role))) && ` +
			c + `.all(c, !(` + sc + `seLinuxOptions)) || (c.securityContext.seLinuxOptions.?type.orValue('') in ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'] && !has(c.securityContext.seLinuxOptions.user) && !has(c.securityContext.seLinuxOptions.role)))`,
			"setting the SELinux user or role is forbidden, and the type must be allowed"},
		{"restrict-apparmor-profiles", `variables.spec.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost'] && ` +
			c + `.all(c, c.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost']) && ` +
			`(!has(object.spec.template.metadata.annotations) || object.spec.template.metadata.annotations.all(k, !k.startsWith('container.apparmor.security.beta.kubernetes.io/') || object.spec.template.metadata.annotations[k] == 'runtime/default' || object.spec.template.metadata.annotations[k].startsWith('localhost/')))`,
			"the AppArmor profile must be RuntimeDefault or Localhost"},
		{"restrict-seccomp", `variables.spec.?securityContext.?seccompProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost'] && ` + c + `.all(c, c.?securityContext.?seccompProfile.?type.orValue('RuntimeDefault') in ['RuntimeDefault', 'Localhost'])`,
			"the seccomp profile must not be Unconfined"},
		{"restrict-sysctls", `!(` + psc + `sysctls)) || variables.spec.securityContext.sysctls.all(s, s.name in ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes'])`,
			"only the safe sysctls may be set"},
		{"restrict-volume-types", `!has(variables.spec.volumes) || variables.spec.volumes.all(v, has(v.configMap) || has(v.csi) || has(v.downwardAPI) || has(v.emptyDir) || has(v.ephemeral) || has(v.persistentVolumeClaim) || has(v.projected) || has(v.secret))`,
			"only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected and secret volumes are allowed"},
		{"disallow-privilege-escalation", c + `.all(c, c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false)`,
			"allowPrivilegeEscalation must be false"},
		{"require-run-as-nonroot", c + `.all(c, c.?securityContext.?runAsNonRoot.orValue(variables.spec.?securityContext.?runAsNonRoot.orValue(false)))`,
			"runAsNonRoot must be true"},
		{"require-run-as-non-root-user", `variables.spec.?securityContext.?runAsUser.orValue(1) != 0 && ` + c + `.all(c, c.?securityContext.?runAsUser.orValue(1) != 0)`,
			"runAsUser must not be 0"},
		{"restrict-seccomp-strict", c + `.all(c, c.?securityContext.?seccompProfile.?type.orValue(variables.spec.?securityContext.?seccompProfile.?type.orValue('')) in ['RuntimeDefault', 'Localhost'])`,
			"a seccomp profile (RuntimeDefault or Localhost) must be set"},
	}
}

// pssVariables are the variables every PSS policy declares.
const pssVariables = `  variables:
  - name: spec
    cel: "object.spec.template.spec"
  - name: containers
    cel: "variables.spec.containers + (has(variables.spec.initContainers) ? variables.spec.initContainers : []) + (has(variables.spec.ephemeralContainers) ? variables.spec.ephemeralContainers : [])"
`

func writePolicyHeader(b *strings.Builder, name string) {
	fmt.Fprintf(b, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", name, benchNS)
	b.WriteString("  match:\n    resources:\n    - apiGroups: [apps]\n      kinds: [Deployment]\n")
}

func writeValidation(b *strings.Builder, c pssCheck) {
	fmt.Fprintf(b, "  - cel: %q\n    message: %q\n", c.cel, c.message)
}

// pssPolicies is the 16 checks as 16 Policies of one validation each, or
// as one Policy with 16.
func pssPolicies(one bool) string {
	var b strings.Builder
	if one {
		writePolicyHeader(&b, "pod-security")
		b.WriteString(pssVariables + "  validations:\n")
		for _, c := range pssChecks() {
			writeValidation(&b, c)
		}
		return b.String()
	}
	for _, c := range pssChecks() {
		writePolicyHeader(&b, c.name)
		b.WriteString(pssVariables + "  validations:\n")
		writeValidation(&b, c)
	}
	return b.String()
}

func rejections(want int) func(*engine.Decision) error {
	return func(d *engine.Decision) error {
		if len(d.Rejections) != want {
			return fmt.Errorf("%d rejections, want %d: %v", len(d.Rejections), want, d.Rejections)
		}
		return nil
	}
}

func patched(d *engine.Decision) error {
	if len(d.Patch) == 0 {
		return fmt.Errorf("the policies did not patch the object")
	}
	return nil
}

// BenchmarkPSS measures 16 CEL validations (the Pod Security Standards,
// after Kyverno's 16-policy ValidatingPolicy set) on the Deployment: as
// 16 Policies and as one Policy with 16 validations; on the Deployment as
// it is (3 restricted checks fail: 3 denials) and with a compliant
// securityContext (all pass).
func BenchmarkPSS(b *testing.B) {
	for _, bc := range []struct {
		name       string
		one        bool
		compliant  bool
		rejections int
	}{
		{"policies=16/compliant", false, true, 0},
		{"policies=1/compliant", true, true, 0},
		{"policies=16/denied", false, false, 3},
		{"policies=1/denied", true, false, 3},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchEval(b, benchLoad(b, pssPolicies(bc.one)), benchObject(b, bc.compliant), rejections(bc.rejections))
		})
	}
	// What the engine and one policy cost around the expressions: one
	// validation of a constant.
	b.Run("policies=1/validations=1/true", func(b *testing.B) {
		var y strings.Builder
		writePolicyHeader(&y, "constant")
		y.WriteString("  validations:\n  - cel: \"true\"\n")
		benchEval(b, benchLoad(b, y.String()), benchObject(b, true), rejections(0))
	})
}

// benchMutations are 10 mutations, JSON patches and apply configurations
// mixed.
var benchMutations = []string{
	`jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/checked', value: object.metadata.name + '-ok'}]"`,
	`applyConfiguration: "Object{metadata: Object.metadata{labels: {'team': 'bench'}}}"`,
	`jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('bench.modwright.io/checked'), value: 'true'}]"`,
	`applyConfiguration: "Object{spec: Object.spec{template: Object.spec.template{metadata: Object.spec.template.metadata{labels: {'tier': 'web'}}}}}"`,
	`jsonPatch: "[JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'nginx'}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}]"`,
	`applyConfiguration: "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: 'exporter', imagePullPolicy: 'IfNotPresent'}]}}}}"`,
	`jsonPatch: "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/0/env/-', value: {'name': 'BENCH', 'value': string(object.spec.replicas)}}]"`,
	`applyConfiguration: "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{securityContext: Object.spec.template.spec.securityContext{runAsNonRoot: true}}}}}"`,
	`jsonPatch: "object.spec.replicas < 3 ? [JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}] : []"`,
	`applyConfiguration: "Object{metadata: Object.metadata{annotations: {'bench.modwright.io/owner': object.metadata.name}}}"`,
}

// labelMutations are n JSON patches adding a label each.
func labelMutations(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("jsonPatch: \"[JSONPatch{op: 'add', path: '/metadata/labels/label-%d', value: 'x'}]\"", i)
	}
	return out
}

// every returns every other element of list, from the first.
func every(list []string, first int) []string {
	var out []string
	for i := first; i < len(list); i += 2 {
		out = append(out, list[i])
	}
	return out
}

// BenchmarkMutations measures 10 mutations on the Deployment: one Policy
// with 10, 10 Policies of one each, and the 5 JSON patches and the 5 apply
// configurations alone.
func BenchmarkMutations(b *testing.B) {
	for _, bc := range []struct {
		name string
		one  bool
		muts []string
	}{
		{"policies=1/mutations=10", true, benchMutations},
		{"policies=10/mutations=10", false, benchMutations},
		// Each kind alone: the even ones are JSON patches, the odd ones
		// apply configurations.
		{"policies=1/jsonPatch=5", true, every(benchMutations, 0)},
		{"policies=1/applyConfiguration=5", true, every(benchMutations, 1)},
		// 10 Policies that each add a label, the commonest mutation.
		{"policies=10/labels=10", false, labelMutations(10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var y strings.Builder
			for i, m := range bc.muts {
				if bc.one && i > 0 {
					fmt.Fprintf(&y, "  - %s\n", m)
					continue
				}
				writePolicyHeader(&y, fmt.Sprintf("mutate-%02d", i))
				fmt.Fprintf(&y, "  mutations:\n  - %s\n", m)
			}
			benchEval(b, benchLoad(b, y.String()), benchObject(b, false), patched)
		})
	}
}

// otherKinds are kinds outside the benchmark that rules are pinned to.
var otherKinds = []string{"StatefulSet", "DaemonSet", "Pod", "Service", "ConfigMap", "Job", "CronJob", "Secret"}

// matchingPolicy does what the ModRule benchmark rule does, in a Policy:
// 4 criteria (the kind statically; the app label, an image regex and the
// replicas as match conditions) and 2 operations (replace the nginx
// container's first port, checking that the first container is nginx,
// and add a label with a computed value).
func matchingPolicy(b *strings.Builder, i int, kind string) {
	fmt.Fprintf(b, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: policy-%04d\n  namespace: %s\nspec:\n", i, benchNS)
	fmt.Fprintf(b, "  match:\n    resources:\n    - kinds: [%s]\n", kind)
	b.WriteString(`  matchConditions:
  - name: app
    cel: "object.metadata.?labels.?app.orValue('') == 'nginx'"
  - name: image
    cel: "object.spec.template.spec.containers.exists(c, c.image.matches('^nginx:1\\\\.14\\\\..*'))"
  - name: replicas
    cel: "object.spec.replicas in [1, 2, 3]"
  mutations:
`)
	fmt.Fprintf(b, "  - jsonPatch: \"[JSONPatch{op: 'test', path: '/spec/template/spec/containers/0/name', value: 'nginx'}, JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/ports/0/containerPort', value: 8080}, JSONPatch{op: 'add', path: '/metadata/labels/policy-%04d', value: object.metadata.name + '-%d'}]\"\n", i, i)
}

// quietPolicy is a Policy that cannot apply to the Deployment in bench: it
// is pinned to another kind, or (elsewhere) lives in another namespace.
func quietPolicy(b *strings.Builder, i int, elsewhere bool) {
	ns, kind := benchNS, otherKinds[i%len(otherKinds)]
	if elsewhere {
		ns, kind = "elsewhere", "Deployment"
	}
	fmt.Fprintf(b, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: policy-%04d\n  namespace: %s\nspec:\n", i, ns)
	fmt.Fprintf(b, "  match:\n    resources:\n    - kinds: [%s]\n", kind)
	b.WriteString("  validations:\n  - cel: \"object.metadata.?labels.?team.orValue('') != 'nobody'\"\n")
}

// policySet is total Policies of which matching apply to the Deployment;
// of the others, half are pinned to other kinds (the index discards
// them), half apply to any kind and are stopped by a match condition.
func policySet(total, matching int) string {
	var b strings.Builder
	for i := 0; i < total; i++ {
		switch {
		case i < matching:
			matchingPolicy(&b, i, "Deployment")
		case i%2 == 0:
			quietPolicy(&b, i, false) // pinned to another kind
		default:
			fmt.Fprintf(&b, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: policy-%04d\n  namespace: %s\nspec:\n", i, benchNS)
			b.WriteString("  matchConditions:\n  - name: team\n    cel: \"object.metadata.?labels.?team.orValue('') == 'nobody'\"\n")
			fmt.Fprintf(&b, "  mutations:\n  - jsonPatch: \"[JSONPatch{op: 'add', path: '/metadata/labels/policy-%04d', value: 'x'}]\"\n", i)
		}
	}
	return b.String()
}

// modRuleSet is the ModRule benchmark's rule set in YAML: total rules of
// which matching match the Deployment (4 criteria, 2 operations), the
// others pinned to other kinds.
func modRuleSet(total, matching int) string {
	var b strings.Builder
	for i := 0; i < total; i++ {
		kind := "Deployment"
		if i >= matching {
			kind = otherKinds[i%len(otherKinds)]
		}
		fmt.Fprintf(&b, "---\napiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata:\n  name: rule-%04d\n  namespace: %s\nspec:\n  type: Patch\n", i, benchNS)
		fmt.Fprintf(&b, "  match:\n  - select: '$.kind'\n    matchValue: %s\n  - select: '$.metadata.labels.app'\n    matchValue: nginx\n", kind)
		b.WriteString("  - select: '$.spec.template.spec.containers[*].image'\n    matchRegex: 'nginx:1\\.14\\..*'\n  - select: '$.spec.replicas'\n    matchValues: ['1', '2', '3']\n")
		b.WriteString("  patch:\n  - op: replace\n    select: '$.spec.template.spec.containers[? @.name == \"nginx\"]'\n    path: /spec/template/spec/containers/#0/ports/0/containerPort\n    value: '8080'\n")
		fmt.Fprintf(&b, "  - op: add\n    path: /metadata/labels/rule-%04d\n    value: '{{ .Target.metadata.name }}-%d'\n", i, i)
	}
	return b.String()
}

// quietSet is total Policies none of which can apply to the Deployment in
// bench.
func quietSet(total int) string {
	var b strings.Builder
	for i := 0; i < total; i++ {
		quietPolicy(&b, i, i%2 == 1)
	}
	return b.String()
}

// BenchmarkLoad compares Policies with ModRules doing the same work on the
// Deployment, and measures what Policies that cannot apply cost against an
// empty snapshot (the engine's floor).
func BenchmarkLoad(b *testing.B) {
	for _, bc := range []struct {
		name  string
		yaml  string
		check func(*engine.Decision) error
	}{
		{"empty", "", nil},
		{"policies=100/none-apply", quietSet(100), nil},
		{"modrules=10/matching=10", modRuleSet(10, 10), patched},
		{"modrules=100/matching=10", modRuleSet(100, 10), patched},
		{"policies=10/matching=10", policySet(10, 10), patched},
		{"policies=100/matching=10", policySet(100, 10), patched},
		// The Deployment without its last-applied configuration (as a
		// controller or server-side apply writes objects): a Policy's
		// patch is then applied to the document directly.
		{"modrules=10/matching=10/no-last-applied", modRuleSet(10, 10), patched},
		{"policies=10/matching=10/no-last-applied", policySet(10, 10), patched},
	} {
		b.Run(bc.name, func(b *testing.B) {
			obj := benchObject(b, false)
			if strings.HasSuffix(bc.name, "/no-last-applied") {
				obj = withoutLastApplied(obj)
			}
			benchEval(b, benchLoad(b, bc.yaml), obj, bc.check)
		})
	}
}

// withoutLastApplied is a copy of obj without its annotations (the
// last-applied configuration among them).
func withoutLastApplied(obj map[string]any) map[string]any {
	c := value.DeepCopy(obj).(map[string]any)
	delete(c["metadata"].(map[string]any), "annotations")
	return c
}

// substitutionRefs are ten {{ }} references into the Deployment, as a
// Kyverno rule's message or patch would hold them.
var substitutionRefs = []string{
	"request.object.metadata.name",
	"request.object.metadata.namespace",
	"request.object.metadata.labels.app",
	"request.object.spec.replicas",
	"request.object.spec.template.spec.containers[0].image",
	"request.object.spec.template.spec.containers[1].name",
	"request.object.spec.template.metadata.annotations.\"prometheus.io/port\"",
	"request.operation",
	"request.userInfo.username",
	"request.object.spec.selector.matchLabels.app",
}

// BenchmarkSubstitution measures a Policy whose validation fails with a
// Warn action (its message is rendered on every request): none has a
// plain message, refs10 ten {{ }} references, refs10-configmap the same
// with one ConfigMap context entry read through the object reader (two of
// the references read it). The difference from none is the substitution's
// cost. cel is the same check in CEL with a plain message: what a Policy
// without Kyverno's context costs.
func BenchmarkSubstitution(b *testing.B) {
	obj := benchObject(b, false)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": benchNS},
		"data":     map[string]any{"team": "blue", "maxReplicas": "4"}}
	policyWith := func(context, message string) string {
		check := "jmespath: \"request.object.spec.replicas > `5`\""
		if context == "cel" {
			check, context = "cel: \"object.spec.replicas > 5\"", ""
		}
		return "apiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata: {name: subst, namespace: " + benchNS + "}\nspec:\n" +
			"  validationActions: [Warn]\n" + context +
			"  validations:\n  - " + check + "\n    message: '" + message + "'\n"
	}
	var refs []string
	for _, r := range substitutionRefs {
		refs = append(refs, "{{ "+r+" }}")
	}
	refs10 := strings.Join(refs, " ")
	refsCM := strings.Join(append(refs[:8:8], "{{ settings.data.team }}", "{{ settings.data.maxReplicas }}"), " ")
	for _, bc := range []struct {
		name, context, message, want string
	}{
		{name: "cel", context: "cel", message: "too many replicas", want: "too many replicas"},
		{name: "none", message: "too many replicas", want: "too many replicas"},
		{name: "refs10", message: refs10, want: "nginx-deployment bench nginx 2 nginx:1.14.2 exporter 9113 CREATE  nginx"},
		{name: "refs10-configmap", context: "  context:\n  - {name: settings, configMap: {name: settings}}\n", message: refsCM,
			want: "nginx-deployment bench nginx 2 nginx:1.14.2 exporter 9113 CREATE blue 4"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			snap := benchLoad(b, policyWith(bc.context, bc.message))
			eng := engine.New(engine.Options{NoTrace: true, Objects: staticObjects{cm}})
			req := engine.Request{Operation: rules.Create, Namespace: benchNS, Name: "nginx-deployment",
				Kind: engine.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Object: obj}
			ctx := context.Background()
			d, err := eng.Evaluate(ctx, snap, req)
			if err != nil || len(d.Errors) > 0 || len(d.Warnings) != 1 || d.Warnings[0].Message != bc.want {
				b.Fatalf("decision: %v %+v", err, d)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := eng.Evaluate(ctx, snap, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKinitiras measures kinitiras' policies, unchanged, on the
// Deployment, against kinitiras' own engine (k-cloud-labs/pkg v0.4.5, the
// issue's figures): a cue override adding an annotation (883 µs), an
// annotations template (1.07 ms), a plaintext override (187 µs) and a
// condition validate (490-550 µs).
func BenchmarkKinitiras(b *testing.B) {
	obj := benchObject(b, false)
	cop := "apiVersion: policy.kcloudlabs.io/v1alpha1\nkind: ClusterOverridePolicy\nmetadata: {name: bench}\nspec:\n  resourceSelectors:\n  - {apiVersion: apps/v1, kind: Deployment}\n  overrideRules:\n  - targetOperations: [CREATE]\n    overriders:\n"
	for _, bc := range []struct{ name, yaml string }{
		{"cue-override", cop + `      cue: |
        object: _ @tag(object)
        patches: [{op: "add", path: "/metadata/annotations/cue", value: "cue"}]
`},
		{"template-annotations", cop + `      template:
        type: annotations
        operation: add
        path: added-by
        value: {string: template}
`},
		{"plaintext", cop + `      plaintext:
      - {op: add, path: /metadata/annotations/added-by, value: plaintext}
`},
		{"condition-validate", `apiVersion: policy.kcloudlabs.io/v1alpha1
kind: ClusterValidatePolicy
metadata: {name: bench}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  validateRules:
  - targetOperations: [CREATE]
    template:
      type: condition
      condition:
        cond: Gt
        message: too many replicas
        dataRef: {from: current, path: /spec/replicas}
        value: {integer: 10}
`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchEval(b, benchLoad(b, bc.yaml), obj, func(d *engine.Decision) error {
				if strings.HasPrefix(bc.name, "condition") {
					if !d.Allowed() {
						return fmt.Errorf("denied: %s", d.DenialText())
					}
					return nil
				}
				if !d.Changed() {
					return fmt.Errorf("no patch")
				}
				return nil
			})
		})
	}
}

// staticObjects is an ObjectReader over fixed objects, by kind and name.
type staticObjects []map[string]any

func (o staticObjects) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	for _, obj := range o {
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == ref.Kind && md["name"] == ref.Name && md["namespace"] == ref.Namespace {
			return obj, nil
		}
	}
	return nil, nil
}

// BenchmarkCUE measures a Policy with one CUE program on the Deployment:
// an override adding an annotation (kinitiras' cue overrider: 883 µs in
// kinitiras' engine) and a validation reading the object (its condition
// validate: 490-550 µs).
func BenchmarkCUE(b *testing.B) {
	obj := benchObject(b, false)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ws := cuelang.NewWorkers(cuelang.WorkerOptions{Command: func() *exec.Cmd { return exec.Command(exe, workerArg) }})
	defer ws.Close()
	for _, bc := range []struct{ name, spec string }{
		{"override-annotation", `  mutations:
  - cue: |
      object: _ @tag(object)
      patches: [{op: "add", path: "/metadata/annotations/cue", value: "cue"}]
`},
		{"validate", `  validations:
  - cue: |
      object: _ @tag(object)
      validate: {
        if object.spec.replicas > 10 {
          valid: false
          reason: "too many replicas"
        }
      }
`},
		{"validate-256KiB-text", `  validations:
  - cue: |
      // ` + strings.Repeat("x", 256<<10) + `
      object: _ @tag(object)
      validate: {if object.spec.replicas > 10 {valid: false, reason: "too many replicas"}}
`},
	} {
		// In this process (the CLI's one-shot commands) and in workers
		// (serve).
		for _, where := range []struct {
			name string
			l    cuelang.Language
		}{{"in-process", cuelang.Language{}}, {"workers", cuelang.Language{Workers: ws}}} {
			b.Run(bc.name+"/"+where.name, func(b *testing.B) {
				src := "apiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata: {name: cue, namespace: " + benchNS + "}\nspec:\n" + bc.spec
				docs, err := source.ParseManifest("bench.yaml", []byte(src))
				if err != nil {
					b.Fatal(err)
				}
				res := source.LoadRules(docs, kinds.NewRegistry(policy.NewPolicyKind(policy.WithCUE(where.l))))
				if len(res.Errors) > 0 {
					b.Fatal(res.Errors)
				}
				benchEval(b, engine.NewSnapshot(res.Rules), obj, nil)
			})
		}
	}
}

// workerArg makes this test binary a CUE worker (TestMain).
const workerArg = "cue-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		if err := cuelang.ServeWorker(os.Stdin, os.Stdout, os.Exit); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkCompileHeap compiles 200 Policies (one kind adapter, as a
// snapshot build does) and reports the heap they keep per Policy
// (retained-B/policy, after a GC, the snapshot alive) beside the time
// and allocations of compiling them: quiet ones (one validation, the same
// in every Policy), distinct ones (one validation, its own in each), the
// benchmark's mix (the same match conditions, a JSON patch of its own in
// each) and ones with an applyConfiguration mutation (the same in each).
func BenchmarkCompileHeap(b *testing.B) {
	const n = 200
	applyConfig := func() string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: policy-%04d\n  namespace: %s\nspec:\n", i, benchNS)
			sb.WriteString("  mutations:\n  - applyConfiguration: \"Object{metadata: Object.metadata{labels: {'team': 'a'}}}\"\n")
		}
		return sb.String()
	}
	distinct := func() string { // quiet, each with its own expression
		var sb strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, "---\napiVersion: modwright.io/v1alpha1\nkind: ModwrightPolicy\nmetadata:\n  name: policy-%04d\n  namespace: %s\nspec:\n", i, benchNS)
			fmt.Fprintf(&sb, "  validations:\n  - cel: \"object.metadata.?labels.?team.orValue('') != 'nobody-%d'\"\n", i)
		}
		return sb.String()
	}
	variables := func() string { // the Pod Security checks, each a Policy with two variables
		var sb strings.Builder
		checks := pssChecks()
		for i := 0; i < n; i++ {
			writePolicyHeader(&sb, fmt.Sprintf("policy-%04d", i))
			sb.WriteString(pssVariables + "  validations:\n")
			writeValidation(&sb, checks[i%len(checks)])
		}
		return sb.String()
	}
	for _, bc := range []struct{ name, yaml string }{
		{"quiet", quietSet(n)},
		{"distinct", distinct()},
		{"variables", variables()},
		{"mix", policySet(n, 10)},
		{"applyConfiguration", applyConfig()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			docs, err := source.ParseManifest("bench.yaml", []byte(bc.yaml))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var retained float64
			for i := 0; i < b.N; i++ {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				reg := kinds.NewRegistry(policy.NewPolicyKind())
				res := source.LoadRules(docs, reg)
				if len(res.Errors) > 0 || len(res.Rules) != n {
					b.Fatalf("load: %d rules, errors %v", len(res.Rules), res.Errors)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				retained += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
				runtime.KeepAlive(res.Rules)
			}
			b.ReportMetric(retained/float64(b.N), "retained-B/policy")
		})
	}
}
