package kyverno

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/rules"
)

// pssV is a compiled validate.podSecurity: Kubernetes' Pod Security
// Standards (k8s.io/pod-security-admission's checks, the library the API
// server's admission uses) at a level and version, with exemptions.
type pssV struct {
	level   psaapi.LevelVersion
	rawVer  string
	exclude []pssExclude
	checks  []pssCheck // the level's checks, each in its version, chosen at load
	// unknown are the exclusions' restrictedFields no check reports an
	// error at (lint warns: they exempt nothing), by their field.
	unknown map[string]string
}

// pssCheck is one check in the version a policy's level selects.
type pssCheck struct {
	id  policy.CheckID
	run policy.CheckPodFn
}

// pssExclude exempts a control: its pod-level fields (no images), or the
// containers whose image matches one of images; with field (a
// restrictedField), only the errors at that field whose forbidden values
// all match one of values (pssfields.go).
type pssExclude struct {
	control string
	checks  []policy.CheckID
	images  []string
	field   string
	values  []string
}

// pssContainerControls and pssPodControls are the controls Kyverno
// excludes only for images, and only for the pod.
var (
	pssContainerControls = []string{"Capabilities", "Privileged Containers", "Host Ports", "/proc Mount Type", "Privilege Escalation"}
	pssPodControls       = []string{"Host Namespaces", "HostPath Volumes", "Sysctls", "Volume Types"}
)

// pssExcludes compiles exclusions (a podSecurity rule's exclude, a
// PolicyException's podSecurity), checked as Kyverno checks them; unknown
// collects the restrictedFields no check reports (by field).
func (c *compiler) pssExcludes(field string, es []kyvernov1.PodSecurityStandard, unknown map[string]string) []pssExclude {
	var out []pssExclude
	for i, e := range es {
		f := fmt.Sprintf("%s[%d]", field, i)
		ids, ok := pssControls[e.ControlName]
		switch {
		case !ok:
			c.errf(f+".controlName", "unknown control %q", e.ControlName)
			continue
		case slices.Contains(pssContainerControls, e.ControlName) && len(e.Images) == 0:
			c.errf(f+".controlName", "exclude.images must be specified for the container level control %q", e.ControlName)
		case slices.Contains(pssPodControls, e.ControlName) && len(e.Images) > 0:
			c.errf(f+".controlName", "exclude.images must not be specified for the pod level control %q", e.ControlName)
		case e.RestrictedField != "" && len(e.Values) == 0:
			c.errf(f+".values", "values is required")
		case e.RestrictedField == "" && len(e.Values) > 0:
			c.errf(f+".restrictedField", "restrictedField is required")
		case e.RestrictedField != "" && !knownPSSField(e.RestrictedField) && unknown != nil:
			unknown[f+".restrictedField"] = e.RestrictedField
		}
		out = append(out, pssExclude{control: e.ControlName, checks: ids, images: e.Images, field: e.RestrictedField, values: e.Values})
	}
	return out
}

// pssControls are the checks of each control a policy names (Kyverno's
// names of the Pod Security Standards' controls).
var pssControls = map[string][]policy.CheckID{
	"Capabilities":             {"capabilities_baseline", "capabilities_restricted"},
	"Seccomp":                  {"seccompProfile_baseline", "seccompProfile_restricted"},
	"Privileged Containers":    {"privileged"},
	"Host Ports":               {"hostPorts"},
	"/proc Mount Type":         {"procMount", "procMount_restricted"},
	"HostProcess":              {"windowsHostProcess"},
	"SELinux":                  {"seLinuxOptions"},
	"Host Namespaces":          {"hostNamespaces"},
	"HostPath Volumes":         {"hostPathVolumes"},
	"Sysctls":                  {"sysctls"},
	"AppArmor":                 {"appArmorProfile"},
	"Privilege Escalation":     {"allowPrivilegeEscalation"},
	"Running as Non-root":      {"runAsNonRoot"},
	"Running as Non-root user": {"runAsUser"},
	"Volume Types":             {"restrictedVolumes"},
}

func (c *compiler) podSecurity(field string, ps *kyvernov1.PodSecurity) (*pssV, string) {
	out := &pssV{rawVer: ps.Version}
	lvl, err := psaapi.ParseLevel(ps.Level)
	if err != nil {
		c.errf(field+".level", "%v", err)
		return nil, ""
	}
	out.level.Level = lvl
	switch ps.Version {
	case "", "latest":
		out.level.Version = psaapi.LatestVersion()
	default:
		v, err := psaapi.ParseVersion(ps.Version)
		if err != nil {
			c.errf(field+".version", "%v", err)
			return nil, ""
		}
		out.level.Version = v
	}
	out.unknown = map[string]string{}
	out.exclude = c.pssExcludes(field+".exclude", ps.Exclude, out.unknown)
	out.selectChecks()
	return out, ""
}

// podOf is the pod an object runs: a Pod's, a pod controller's template,
// a CronJob's job template (with the job template's metadata, as Kyverno).
func podOf(kind string, obj any) (*corev1.Pod, error) {
	m, _ := obj.(map[string]any)
	get := func(v any, path ...string) any {
		for _, k := range path {
			mm, _ := v.(map[string]any)
			v = mm[k]
		}
		return v
	}
	var spec, meta any
	switch kind {
	case "Pod":
		spec, meta = get(m, "spec"), get(m, "metadata")
	case "DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController":
		spec, meta = get(m, "spec", "template", "spec"), get(m, "spec", "template", "metadata")
	case "CronJob":
		spec, meta = get(m, "spec", "jobTemplate", "spec", "template", "spec"), get(m, "spec", "jobTemplate", "metadata")
	default:
		return nil, fmt.Errorf("could not find correct resource type: %s runs no pod", kind)
	}
	pod := &corev1.Pod{}
	for _, part := range []struct {
		v   any
		out any
	}{{spec, &pod.Spec}, {meta, &pod.ObjectMeta}} {
		if part.v == nil {
			continue
		}
		data, err := json.Marshal(part.v)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, part.out); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// pssFailure is a check the pod fails.
type pssFailure struct {
	id  policy.CheckID
	res policy.CheckResult
}

// evaluate runs the level's checks (baseline: its own; any other level:
// every check, as Kyverno), each in the newest version the level's
// version allows.
func (ps *pssV) evaluate(pod *corev1.Pod, only []policy.CheckID) []pssFailure {
	var out []pssFailure
	for _, c := range ps.checks {
		if only != nil && !slices.Contains(only, c.id) {
			continue
		}
		if res := c.run(&pod.ObjectMeta, &pod.Spec); !res.Allowed {
			out = append(out, pssFailure{c.id, res})
		}
	}
	return out
}

// selectChecks are the level's checks (baseline: its own; any other level:
// every check, as Kyverno), each in the newest version the level's version
// allows; a check newer than that version is left out, as the API server's
// Pod Security admission leaves it out (Kyverno runs its first version).
func (ps *pssV) selectChecks() {
	for _, check := range policy.DefaultChecks() {
		if ps.level.Level == psaapi.LevelBaseline && check.Level != psaapi.LevelBaseline {
			continue
		}
		if ps.level.Version.Older(check.Versions[0].MinimumVersion) {
			continue // newer than the policy's version, as the API server's evaluator
		}
		sel := check.Versions[0]
		for _, next := range check.Versions[1:] {
			if !ps.level.Version.Older(next.MinimumVersion) && sel.MinimumVersion.Older(next.MinimumVersion) {
				sel = next
			}
		}
		ps.checks = append(ps.checks, pssCheck{check.ID, sel.CheckPod})
	}
}

// exempt reports whether a failing check is exempted by the exclusions
// (the rule's, then those of the PolicyExceptions that match): it passes
// once the errors each exclusion by restrictedField removes are mended,
// the containers an exclusion of the whole control names are left out
// and, with a pod-level exclusion of the whole control, once the pod's own
// security context is.
func (ps *pssV) exempt(f pssFailure, pod *corev1.Pod, more []pssExclude) bool {
	podLevel := false
	var images []string
	var fields []pssExclude
	for _, list := range [2][]pssExclude{ps.exclude, more} {
		for _, e := range list {
			switch {
			case !slices.Contains(e.checks, f.id):
			case e.field != "":
				fields = append(fields, e)
			case len(e.images) == 0:
				podLevel = true
			default:
				images = append(images, e.images...)
			}
		}
	}
	if !podLevel && len(images) == 0 && len(fields) == 0 {
		return false
	}
	r := pod.DeepCopy()
	for _, e := range fields {
		ps.mendField(r, f.id, e)
	}
	keep := func(c corev1.Container) bool {
		return !slices.ContainsFunc(images, func(p string) bool { return lang.MatchWildcard(p, c.Image) })
	}
	r.Spec.Containers = slices.DeleteFunc(r.Spec.Containers, func(c corev1.Container) bool { return !keep(c) })
	r.Spec.InitContainers = slices.DeleteFunc(r.Spec.InitContainers, func(c corev1.Container) bool { return !keep(c) })
	r.Spec.EphemeralContainers = slices.DeleteFunc(r.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool {
		return !keep(corev1.Container{Image: c.Image})
	})
	if podLevel {
		if len(r.Spec.Containers)+len(r.Spec.InitContainers)+len(r.Spec.EphemeralContainers) == 0 {
			return true
		}
		// The pod's own settings go; those its containers inherit, excluded,
		// are allowed to them too (a container's own setting stays its own).
		sc := r.Spec.SecurityContext
		r.Spec.SecurityContext = nil
		if sc != nil && (sc.SeccompProfile != nil || sc.RunAsNonRoot != nil) {
			r.Spec.SecurityContext = &corev1.PodSecurityContext{}
			if sc.SeccompProfile != nil {
				r.Spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			}
			if sc.RunAsNonRoot != nil {
				r.Spec.SecurityContext.RunAsNonRoot = new(true)
			}
		}
		r.Spec.HostNetwork, r.Spec.HostPID, r.Spec.HostIPC = false, false, false
		r.Spec.Volumes = nil
		r.ObjectMeta.Annotations = nil
	}
	return len(ps.evaluate(r, []policy.CheckID{f.id})) == 0
}

// validatePSS is Kyverno's validate.podSecurity; exs are the matching
// PolicyExceptions, each with podSecurity controls: their controls are
// exclusions too, and a pod they exempt skips the rule (as Kyverno).
func (p *Policy) validatePSS(h *engine.Handle, r *rule, s *scope, exs []*Exception) (RuleResult, bool) {
	if h.Request().Operation == rules.Delete {
		return RuleResult{}, false
	}
	kind, _ := s.obj.(map[string]any)["kind"].(string)
	pod, err := podOf(kind, s.obj)
	if err != nil {
		return errorResult(r, "Error while getting new resource", err), true
	}
	ps := r.v.pss
	var failed []pssFailure
	for _, f := range ps.evaluate(pod, nil) {
		if !ps.exempt(f, pod, nil) {
			failed = append(failed, f)
		}
	}
	if len(failed) == 0 {
		return RuleResult{Rule: r.name, Status: Pass, Message: fmt.Sprintf("Validation rule '%s' passed.", r.name)}, true
	}
	if len(exs) > 0 {
		var more []pssExclude
		keys := make([]string, len(exs))
		for i, ex := range exs {
			more, keys[i] = append(more, ex.pss...), ex.key
		}
		if !slices.ContainsFunc(failed, func(f pssFailure) bool { return !ps.exempt(f, pod, more) }) {
			// Kyverno's message of this path has a space the others lack.
			return RuleResult{Rule: r.name, Status: Skip, Message: "rule is skipped due to policy exceptions " + strings.Join(keys, ", ")}, true
		}
	}
	var b strings.Builder
	for _, f := range failed {
		fmt.Fprintf(&b, "(Forbidden reason: %s, field error list: [%s])", f.res.ForbiddenReason, f.res.ForbiddenDetail)
	}
	return RuleResult{Rule: r.name, Status: Fail, Message: fmt.Sprintf("Validation rule '%s' failed. It violates PodSecurity \"%s:%s\": %s",
		r.name, ps.level.Level, ps.rawVer, b.String())}, true
}
