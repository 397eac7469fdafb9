package kyverno

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/policy"

	"github.com/modwright/modwright/internal/lang"
)

// Pod Security exclusions by restrictedField and values. Kyverno decides
// them from the field errors of its fork of k8s.io/pod-security-admission:
// an error at the restricted field (indices as [*]) whose forbidden values
// all match one of the values is removed, and a check passes once none of
// its errors is left. The upstream library gives no field errors, so
// modwright decides the same by outcome: each error an exclusion removes
// is mended in a copy of the pod (the field set to a value the check
// allows, or a forbidden value taken out), and the check passes the copy
// or it does not. A field's forbidden values are those Kyverno's fork
// reports: the value itself, "true" for a boolean, the number of a port or
// user, the forbidden capabilities (the check itself tells which).

// pssOK reports whether an error's forbidden values all match the
// exclusion's values (an error without one always does, as Kyverno).
type pssOK func(bad ...string) bool

// pssContainerField mends one restricted field of a container.
type pssContainerField func(ps *pssV, id policy.CheckID, c *corev1.Container, ok pssOK)

// pssPodField mends one restricted field of the pod.
type pssPodField func(id policy.CheckID, pod *corev1.Pod, ok pssOK)

// pssContainerTypes are the container lists a restricted field may name
// ("spec.containers[*]." and the rest of its path).
var pssContainerTypes = []string{"containers", "initContainers", "ephemeralContainers"}

// pssContainerFields are the restricted fields of a container, by the
// path after "spec.<containers>[*].".
var pssContainerFields = map[string]pssContainerField{
	"securityContext.privileged": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.Privileged != nil && *s.Privileged && ok("true") {
			s.Privileged = nil
		}
	},
	"ports[*].hostPort": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		for i := range c.Ports {
			if hp := c.Ports[i].HostPort; hp != 0 && ok(strconv.Itoa(int(hp))) {
				c.Ports[i].HostPort = 0
			}
		}
	},
	"securityContext.procMount": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.ProcMount != nil && ok(string(*s.ProcMount)) {
			s.ProcMount = nil
		}
	},
	"securityContext.capabilities.add": func(ps *pssV, id policy.CheckID, c *corev1.Container, ok pssOK) {
		s := c.SecurityContext
		if s == nil || s.Capabilities == nil {
			return
		}
		var bad []string
		forbidden := map[corev1.Capability]bool{}
		for _, a := range s.Capabilities.Add {
			f, asked := forbidden[a]
			if !asked {
				f = ps.forbiddenCapability(id, a) // once per distinct capability
				forbidden[a] = f
			}
			if f {
				bad = append(bad, string(a))
			}
		}
		if len(bad) > 0 && ok(bad...) {
			s.Capabilities.Add = slices.DeleteFunc(s.Capabilities.Add, func(a corev1.Capability) bool { return forbidden[a] })
		}
	},
	"securityContext.capabilities.drop": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		s := c.SecurityContext
		var drop []string
		if s != nil && s.Capabilities != nil {
			for _, d := range s.Capabilities.Drop {
				if d == "ALL" {
					return
				}
				drop = append(drop, string(d))
			}
		}
		if ok(drop...) {
			sc := securityContext(c)
			if sc.Capabilities == nil {
				sc.Capabilities = &corev1.Capabilities{}
			}
			sc.Capabilities.Drop = append(sc.Capabilities.Drop, "ALL") // the added ones stay
		}
	},
	"securityContext.windowsOptions.hostProcess": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.WindowsOptions != nil && s.WindowsOptions.HostProcess != nil && *s.WindowsOptions.HostProcess && ok("true") {
			s.WindowsOptions.HostProcess = nil
		}
	},
	"securityContext.seLinuxOptions.type": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.Type != "" && ok(s.SELinuxOptions.Type) {
			s.SELinuxOptions.Type = ""
		}
	},
	"securityContext.seLinuxOptions.user": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.User != "" && ok(s.SELinuxOptions.User) {
			s.SELinuxOptions.User = ""
		}
	},
	"securityContext.seLinuxOptions.role": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.Role != "" && ok(s.SELinuxOptions.Role) {
			s.SELinuxOptions.Role = ""
		}
	},
	"securityContext.appArmorProfile.type": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.AppArmorProfile != nil && ok(string(s.AppArmorProfile.Type)) {
			s.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		}
	},
	"securityContext.allowPrivilegeEscalation": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		s := c.SecurityContext
		var fix bool
		switch {
		case s == nil:
			fix = ok()
		case s.AllowPrivilegeEscalation == nil:
			fix = ok("nil")
		case *s.AllowPrivilegeEscalation:
			fix = ok("true")
		}
		if fix {
			securityContext(c).AllowPrivilegeEscalation = new(false)
		}
	},
	"securityContext.runAsNonRoot": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		s := c.SecurityContext
		switch {
		case s == nil || s.RunAsNonRoot == nil:
			if ok() {
				securityContext(c).RunAsNonRoot = new(true)
			}
		case !*s.RunAsNonRoot && ok("false"):
			s.RunAsNonRoot = new(true)
		}
	},
	"securityContext.runAsUser": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		if s := c.SecurityContext; s != nil && s.RunAsUser != nil && *s.RunAsUser == 0 && ok("0") {
			s.RunAsUser = nil
		}
	},
	"securityContext.seccompProfile.type": func(_ *pssV, _ policy.CheckID, c *corev1.Container, ok pssOK) {
		s := c.SecurityContext
		bad := []string{}
		if s != nil && s.SeccompProfile != nil {
			bad = append(bad, string(s.SeccompProfile.Type))
		}
		if ok(bad...) {
			securityContext(c).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}
	},
}

// pssPodFields are the restricted fields of the pod (volumes aside:
// pssVolumeField).
var pssPodFields = map[string]pssPodField{
	"spec.hostNetwork": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if pod.Spec.HostNetwork && ok("true") {
			pod.Spec.HostNetwork = false
		}
	},
	"spec.hostPID": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if pod.Spec.HostPID && ok("true") {
			pod.Spec.HostPID = false
		}
	},
	"spec.hostIPC": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if pod.Spec.HostIPC && ok("true") {
			pod.Spec.HostIPC = false
		}
	},
	"spec.securityContext.sysctls[*].name": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil {
			s.Sysctls = slices.DeleteFunc(s.Sysctls, func(sc corev1.Sysctl) bool { return ok(sc.Name) })
		}
	},
	"spec.securityContext.runAsNonRoot": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.RunAsNonRoot != nil && !*s.RunAsNonRoot && ok("false") {
			s.RunAsNonRoot = nil // the containers' own errors stay theirs
		}
	},
	"spec.securityContext.runAsUser": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.RunAsUser != nil && *s.RunAsUser == 0 && ok("0") {
			s.RunAsUser = nil
		}
	},
	"spec.securityContext.seccompProfile.type": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.SeccompProfile != nil && ok(string(s.SeccompProfile.Type)) {
			// Excluded, the pod's profile is the one its containers without
			// theirs run: the check reports it alone, not them.
			s.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}
	},
	"spec.securityContext.seLinuxOptions.type": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.Type != "" && ok(s.SELinuxOptions.Type) {
			s.SELinuxOptions.Type = ""
		}
	},
	"spec.securityContext.seLinuxOptions.user": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.User != "" && ok(s.SELinuxOptions.User) {
			s.SELinuxOptions.User = ""
		}
	},
	"spec.securityContext.seLinuxOptions.role": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.SELinuxOptions != nil && s.SELinuxOptions.Role != "" && ok(s.SELinuxOptions.Role) {
			s.SELinuxOptions.Role = ""
		}
	},
	"spec.securityContext.windowsOptions.hostProcess": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.WindowsOptions != nil && s.WindowsOptions.HostProcess != nil && *s.WindowsOptions.HostProcess && ok("true") {
			s.WindowsOptions.HostProcess = nil
		}
	},
	"spec.securityContext.appArmorProfile.type": func(_ policy.CheckID, pod *corev1.Pod, ok pssOK) {
		if s := pod.Spec.SecurityContext; s != nil && s.AppArmorProfile != nil && ok(string(s.AppArmorProfile.Type)) {
			s.AppArmorProfile = nil
		}
	},
}

// pssVolumePrefix starts the restricted fields of volumes
// ("spec.volumes[*].hostPath", "spec.volumes[*].nfs", ...).
const pssVolumePrefix = "spec.volumes[*]."

// pssVolumeField mends the volumes of one source (its JSON name): each
// is made an emptyDir. The Host Path check reports a hostPath's path as
// its forbidden value; the Volume Types check reports none.
func pssVolumeField(source string, id policy.CheckID, pod *corev1.Pod, ok pssOK) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !hasVolumeSource(&v.VolumeSource, source) {
			continue
		}
		var bad []string
		if id == "hostPathVolumes" && v.HostPath != nil {
			bad = append(bad, v.HostPath.Path)
		}
		if ok(bad...) {
			v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
	}
}

// hasVolumeSource reports whether vs sets the source of that JSON name.
func hasVolumeSource(vs *corev1.VolumeSource, source string) bool {
	rv := reflect.ValueOf(vs).Elem()
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if name == source {
			return !rv.Field(i).IsNil()
		}
	}
	return false
}

// knownPSSField reports whether a restrictedField is one the Pod Security
// checks report errors at (another exempts nothing, as in Kyverno).
func knownPSSField(path string) bool {
	if typ, rest, ok := splitContainerField(path); ok {
		_, known := pssContainerFields[rest]
		return known && typ != ""
	}
	if source, ok := strings.CutPrefix(path, pssVolumePrefix); ok {
		return hasVolumeSourceName(source)
	}
	_, known := pssPodFields[path]
	return known
}

func hasVolumeSourceName(source string) bool {
	t := reflect.TypeFor[corev1.VolumeSource]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == source {
			return true
		}
	}
	return false
}

// splitContainerField splits a container-level restricted field
// ("spec.initContainers[*].securityContext.privileged") into its
// container list and the rest of its path.
func splitContainerField(path string) (typ, rest string, ok bool) {
	for _, t := range pssContainerTypes {
		if rest, ok := strings.CutPrefix(path, "spec."+t+"[*]."); ok {
			return t, rest, true
		}
	}
	return "", "", false
}

// securityContext is c's security context, made when it has none.
func securityContext(c *corev1.Container) *corev1.SecurityContext {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

// forbiddenCapability reports whether check id forbids adding capability
// a (asked of the check itself, on a container that adds only a and
// drops every other).
func (ps *pssV) forbiddenCapability(id policy.CheckID, a corev1.Capability) bool {
	probe := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe",
		SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{a}, Drop: []corev1.Capability{"ALL"}}}}}}}
	return len(ps.evaluate(probe, []policy.CheckID{id})) > 0
}

// mendField mends, in pod (a copy), the errors of check id an exclusion
// by restrictedField removes: its images' containers' field (a
// container-level field), or the pod's (a pod-level field, excluded
// without images).
func (ps *pssV) mendField(pod *corev1.Pod, id policy.CheckID, e pssExclude) {
	ok := func(bad ...string) bool {
		for _, b := range bad {
			if b != "" && !slices.ContainsFunc(e.values, func(p string) bool { return lang.MatchWildcard(p, b) }) {
				return false
			}
		}
		return true
	}
	if typ, rest, isContainer := splitContainerField(e.field); isContainer {
		fn := pssContainerFields[rest]
		if fn == nil || len(e.images) == 0 {
			return
		}
		mend := func(c *corev1.Container) {
			if slices.ContainsFunc(e.images, func(p string) bool { return lang.MatchWildcard(p, c.Image) }) {
				fn(ps, id, c, ok)
			}
		}
		switch typ {
		case "containers":
			for i := range pod.Spec.Containers {
				mend(&pod.Spec.Containers[i])
			}
		case "initContainers":
			for i := range pod.Spec.InitContainers {
				mend(&pod.Spec.InitContainers[i])
			}
		default:
			for i := range pod.Spec.EphemeralContainers {
				c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
				mend(&c)
				pod.Spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
			}
		}
		return
	}
	if len(e.images) > 0 {
		return // an exclusion of containers sees no pod-level field
	}
	if source, isVolume := strings.CutPrefix(e.field, pssVolumePrefix); isVolume {
		pssVolumeField(source, id, pod, ok)
		return
	}
	if fn := pssPodFields[e.field]; fn != nil {
		fn(id, pod, ok)
	}
}
