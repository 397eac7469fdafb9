package kyverno_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/rules"
)

// pod is a pod that passes the restricted level, broken by what each
// part adds: the pod's seccomp type and its other securityContext
// members, the app container's securityContext members and its other
// fields, the sidecar's securityContext members.
func pod(podSeccomp, podSC, appSC, app, sidecarSC string) string {
	return `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {
  securityContext: {runAsNonRoot: true, seccompProfile: {type: ` + podSeccomp + `}` + podSC + `},
  containers: [
  {name: app, image: "ghcr.io/acme/app:1", securityContext: {allowPrivilegeEscalation: false` + appSC + `}` + app + `},
  {name: sidecar, image: "ghcr.io/acme/sidecar:1", securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}` + sidecarSC + `}}]}}`
}

const dropAll = ", capabilities: {drop: [ALL]}"

// TestPodSecurityRestrictedField: an exclusion by restrictedField removes
// only the errors at that field whose forbidden values all match its
// values, in the containers of its images (container-level) or in the pod
// (pod-level), as Kyverno decides from its field errors.
func TestPodSecurityRestrictedField(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pss}
spec:
  rules:
  - name: caps
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: restricted
        exclude:
        - controlName: Capabilities
          images: ["ghcr.io/acme/app*"]
          restrictedField: spec.containers[*].securityContext.capabilities.add
          values: [NET_ADMIN, "NET_RAW"]
  - name: sysctls
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: baseline
        exclude:
        - {controlName: Sysctls, restrictedField: "spec.securityContext.sysctls[*].name", values: ["net.core.*"]}
  - name: host-ports
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: baseline
        exclude:
        - {controlName: Host Ports, images: ["*"], restrictedField: "spec.containers[*].ports[*].hostPort", values: ["80", "44?"]}
  - name: seccomp
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: restricted
        exclude:
        - {controlName: Seccomp, restrictedField: spec.securityContext.seccompProfile.type, values: [Unconfined]}
  - name: whole-seccomp
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {podSecurity: {level: restricted, exclude: [{controlName: Seccomp}]}}
  - name: whole-nonroot
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {podSecurity: {level: restricted, exclude: [{controlName: Running as Non-root}]}}
  # The pod's field alone: the containers that inherit it are reported
  # too, as Kyverno's checks report them.
  - name: nonroot-field
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: restricted
        exclude: [{controlName: Running as Non-root, restrictedField: spec.securityContext.runAsNonRoot, values: ["false"]}]
`)
	for _, tc := range []struct {
		name, rule, obj, want string
	}{
		{"compliant", "caps", pod("RuntimeDefault", "", dropAll, "", ""), "pass"},
		{"an excluded capability of an excluded image", "caps", pod("RuntimeDefault", "", ", capabilities: {drop: [ALL], add: [NET_ADMIN]}", "", ""), "pass"},
		// NET_BIND_SERVICE is allowed: it is no forbidden value, so it
		// need not match the values.
		{"an allowed capability beside it", "caps", pod("RuntimeDefault", "", ", capabilities: {drop: [ALL], add: [NET_BIND_SERVICE, NET_RAW]}", "", ""), "pass"},
		{"one forbidden value not excluded", "caps", pod("RuntimeDefault", "", ", capabilities: {drop: [ALL], add: [NET_ADMIN, SYS_ADMIN]}", "", ""), "fail"},
		{"another image", "caps", pod("RuntimeDefault", "", dropAll, "", ", capabilities: {drop: [ALL], add: [NET_ADMIN]}"), "fail"},
		// The exclusion names add; the missing drop stays an error.
		{"another field of the control", "caps", pod("RuntimeDefault", "", ", capabilities: {add: [NET_ADMIN]}", "", ""), "fail"},
		{"excluded sysctls", "sysctls", pod("RuntimeDefault", ", sysctls: [{name: net.core.somaxconn, value: '1024'}, {name: kernel.shm_rmid_forced, value: '0'}]", dropAll, "", ""), "pass"},
		{"a sysctl not excluded", "sysctls", pod("RuntimeDefault", ", sysctls: [{name: net.core.somaxconn, value: '1024'}, {name: kernel.msgmax, value: '1'}]", dropAll, "", ""), "fail"},
		{"excluded host ports", "host-ports", pod("RuntimeDefault", "", dropAll, ", ports: [{containerPort: 80, hostPort: 80}, {containerPort: 443, hostPort: 443}]", ""), "pass"},
		{"a host port not excluded", "host-ports", pod("RuntimeDefault", "", dropAll, ", ports: [{containerPort: 80, hostPort: 80}, {containerPort: 8080, hostPort: 8080}]", ""), "fail"},
		// The pod-level field is excluded; the containers' own errors stay
		// theirs (none here: they set their own profile).
		{"pod-level seccomp excluded", "seccomp",
			pod("Unconfined", "", dropAll+", seccompProfile: {type: RuntimeDefault}", "", ", seccompProfile: {type: RuntimeDefault}"), "pass"},
		// Without their own profile the containers run the pod's: the
		// check reports the pod's alone (as Kyverno's), excluded here.
		{"containers without a profile", "seccomp", pod("Unconfined", "", dropAll, "", ""), "pass"},
		{"container-level seccomp not excluded", "seccomp", pod("RuntimeDefault", "", dropAll+", seccompProfile: {type: Unconfined}", "", ""), "fail"},
		// Excluded at the pod level, the pod's own settings are allowed to
		// the containers that inherit them; a container's own stays its own.
		{"the pod's seccomp excluded with the control", "whole-seccomp", pod("Unconfined", "", dropAll, "", ""), "pass"},
		{"a container's seccomp, the control excluded at the pod", "whole-seccomp", pod("RuntimeDefault", "", dropAll+", seccompProfile: {type: Unconfined}", "", ""), "fail"},
		{"the pod's runAsNonRoot excluded with the control", "whole-nonroot", strings.Replace(pod("RuntimeDefault", "", dropAll, "", ""), "runAsNonRoot: true", "runAsNonRoot: false", 1), "pass"},
		{"the pod's runAsNonRoot excluded by field", "nonroot-field", strings.Replace(pod("RuntimeDefault", "", dropAll, "", ""), "runAsNonRoot: true", "runAsNonRoot: false", 1), "fail"},
		{"the pod's and its containers' runAsNonRoot excluded by field", "nonroot-field",
			strings.Replace(pod("RuntimeDefault", "", dropAll+", runAsNonRoot: true", "", ", runAsNonRoot: true"), "runAsNonRoot: true,", "runAsNonRoot: false,", 1), "pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, d := results(t, snap, rules.Create, tc.obj)
			if !slices.Contains(got, tc.rule+"="+tc.want) {
				t.Errorf("%s: %v, want %s", tc.rule, got, tc.want)
				for _, tr := range d.Trace {
					for _, r := range kyverno.ResultsOf(tr.Detail) {
						t.Log(r.Rule, r.Message)
					}
				}
			}
		})
	}
}

// TestPodSecurityExceptions: a PolicyException with podSecurity controls
// does not skip a podSecurity rule outright: its controls are exclusions
// too, and the rule is skipped only when they exempt every failing check
// (as Kyverno); one without podSecurity skips the rule.
func TestPodSecurityExceptions(t *testing.T) {
	docs := manifests(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: net-admin, namespace: kyverno}
spec:
  exceptions: [{policyName: pss, ruleNames: [restricted]}]
  match: {any: [{resources: {kinds: [Pod], names: ["net-*"]}}]}
  podSecurity:
  - controlName: Capabilities
    images: ["ghcr.io/acme/app*"]
    restrictedField: spec.containers[*].securityContext.capabilities.add
    values: [NET_ADMIN]
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: legacy, namespace: kyverno}
spec:
  exceptions: [{policyName: pss, ruleNames: [restricted]}]
  match: {any: [{resources: {kinds: [Pod], names: ["legacy-*"]}}]}
`)
	var exs []*kyverno.Exception
	for i := range docs {
		ex, err := kyverno.CompileException(&docs[i])
		if err != nil {
			t.Fatal(err)
		}
		exs = append(exs, ex)
	}
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pss}
spec:
  rules:
  - name: restricted
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity: {level: restricted}
`, kyverno.WithExceptions(exs...))
	netAdmin := pod("RuntimeDefault", "", ", capabilities: {drop: [ALL], add: [NET_ADMIN]}", "", "")
	for _, tc := range []struct{ name, obj, want string }{
		{"the exception's control exempts", strings.Replace(netAdmin, "name: p}", "name: net-a}", 1), "restricted=skip: rule is skipped due to policy exceptions kyverno/net-admin"},
		{"another check still fails", strings.Replace(strings.Replace(netAdmin, "name: p}", "name: net-a}", 1), "[NET_ADMIN]", "[NET_ADMIN, SYS_ADMIN]", 1), "restricted=fail"},
		{"no exception", netAdmin, "restricted=fail"},
		{"an exception without podSecurity", strings.Replace(netAdmin, "name: p}", "name: legacy-a}", 1), "restricted=skip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := results(t, snap, rules.Create, tc.obj)
			var got []string
			for _, tr := range d.Trace {
				for _, r := range kyverno.ResultsOf(tr.Detail) {
					got = append(got, r.Rule+"="+string(r.Status)+": "+r.Message)
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPodSecurityExcludeErrors: exclusions are checked when the policy
// (or the PolicyException) loads, as Kyverno checks them; a
// restrictedField no check reports is a lint warning (it exempts nothing).
func TestPodSecurityExcludeErrors(t *testing.T) {
	for _, tc := range []struct{ exclude, want string }{
		{`{controlName: Capabilities}`, "exclude[0].controlName: exclude.images must be specified for the container level control"},
		{`{controlName: Sysctls, images: ["*"]}`, "exclude[0].controlName: exclude.images must not be specified for the pod level control"},
		{`{controlName: Seccomp, restrictedField: spec.securityContext.seccompProfile.type}`, "exclude[0].values: values is required"},
		{`{controlName: Seccomp, values: [Unconfined]}`, "exclude[0].restrictedField: restrictedField is required"},
		{`{controlName: Bogus}`, `unknown control "Bogus"`},
	} {
		_, err := compileErr(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: broken}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {podSecurity: {level: baseline, exclude: [`+tc.exclude+`]}}`)
		if err == nil || !strings.Contains(err.Error(), "spec.rules[0].validate.podSecurity."+tc.want) && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %s", tc.exclude, err, tc.want)
		}
	}
	docs := manifests(t, `
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: x, namespace: kyverno}
spec:
  exceptions: [{policyName: pss, ruleNames: [r]}]
  match: {any: [{resources: {kinds: [Pod]}}]}
  podSecurity: [{controlName: Privileged Containers}]
`)
	if _, err := kyverno.CompileException(&docs[0]); err == nil || !strings.Contains(err.Error(), "spec.podSecurity[0].controlName: exclude.images must be specified") {
		t.Errorf("an exception's podSecurity: %v", err)
	}

	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: typo}
spec:
  rules:
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: baseline
        exclude:
        - {controlName: Capabilities, images: ["*"], restrictedField: "spec.containers[0].securityContext.capabilities.add", values: [NET_ADMIN]}
        - {controlName: Capabilities, images: ["*"], restrictedField: "spec.containers[*].securityContext.capabilities.add", values: [NET_ADMIN]}
        - {controlName: HostPath Volumes, restrictedField: "spec.volumes[*].hostPath", values: ["/var/log"]}
`)
	var findings []string
	for _, r := range snap.Rules() {
		if l, ok := r.(kinds.Linter); ok {
			for _, f := range l.Lint(context.Background(), "typo.yaml", nil) {
				findings = append(findings, f.Code+" "+f.Field+": "+f.Message)
			}
		}
	}
	want := []string{`W402 spec.rules[0].validate.podSecurity.exclude[0].restrictedField: no Pod Security check reports an error at "spec.containers[0].securityContext.capabilities.add": the exclusion exempts nothing`}
	if d := cmp.Diff(want, findings); d != "" {
		t.Errorf("lint (-want +got):\n%s", d)
	}
}

// TestPodSecurityVersions: a check newer than the policy's version does
// not run (the probes' and lifecycle hooks' host, from 1.34), as the API
// server's Pod Security admission; the restricted /proc mount check of
// 1.35 belongs to the /proc Mount Type control.
func TestPodSecurityVersions(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pss}
spec:
  rules:
  - name: v1-33
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {podSecurity: {level: baseline, version: v1.33}}
  - name: latest
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {podSecurity: {level: baseline, version: latest}}
  - name: restricted-proc-excluded
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      podSecurity:
        level: restricted
        exclude: [{controlName: /proc Mount Type, images: ["ghcr.io/acme/*"]}]
`)
	probe := `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: app, image: "ghcr.io/acme/app:1",
  readinessProbe: {httpGet: {host: 10.0.0.1, port: 80, path: /}}}]}}`
	got, _ := results(t, snap, rules.Create, probe)
	if !slices.Contains(got, "v1-33=pass") || !slices.Contains(got, "latest=fail") {
		t.Errorf("a probe's host: %v, want v1-33=pass, latest=fail", got)
	}
	proc := pod("RuntimeDefault", "", dropAll+", procMount: Unmasked", "", "")
	if got, _ := results(t, snap, rules.Create, proc); !slices.Contains(got, "restricted-proc-excluded=pass") {
		t.Errorf("an excluded Unmasked /proc mount: %v", got)
	}
}
