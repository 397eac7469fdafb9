package gatekeeper

import (
	"slices"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// What the operator needs of constraints beyond compiling them: what
// Gatekeeper's Config and SyncSets sync into data.inventory and which
// namespaces the Config exempts, and the entries of a constraint's
// status.violations.

var (
	_ kinds.Syncing          = (*Kind)(nil)
	_ kinds.ViolationsListed = (*Kind)(nil)
)

// StatusViolation is an entry of a constraint's status.violations as
// Gatekeeper's audit writes it: the message, the enforcement action (and
// a scoped constraint's audit actions), the object's group, version,
// kind, namespace and name.
func (k *Kind) StatusViolation(r engine.Rule, v kinds.Violation) map[string]any {
	group, version, ok := strings.Cut(v.APIVersion, "/")
	if !ok {
		group, version = "", v.APIVersion
	}
	out := map[string]any{"message": v.Message, "group": group, "version": version, "kind": v.Kind, "name": v.Name}
	if v.Namespace != "" {
		out["namespace"] = v.Namespace
	}
	if c, ok := r.(*Constraint); ok {
		out["enforcementAction"] = c.actions.action
		if c.actions.action == gkv1.EnforcementScoped {
			acts := make([]any, len(c.actions.audit))
			for i, a := range c.actions.audit {
				acts[i] = a
			}
			out["enforcementActions"] = acts
		}
	}
	return out
}

// SyncConfigs are Gatekeeper's Config (config.gatekeeper.sh/v1alpha1,
// named config, as Gatekeeper reads it) and SyncSets
// (syncset.gatekeeper.sh/v1alpha1).
func (k *Kind) SyncConfigs() []kinds.SyncConfig {
	return []kinds.SyncConfig{
		{Group: "config.gatekeeper.sh", Version: "v1alpha1", Kind: "Config", Name: "config"},
		{Group: "syncset.gatekeeper.sh", Version: "v1alpha1", Kind: "SyncSet"},
	}
}

// Synced reads a Config's spec.sync.syncOnly and the namespaces its
// spec.match exempts from each process (a glob of excludedNamespaces for
// the processes listed, * for all), or a SyncSet's spec.gvks.
func (k *Kind) Synced(obj map[string]any) ([]kinds.SyncedKind, func(process, namespace string) bool) {
	spec, _ := obj["spec"].(map[string]any)
	var list []any
	switch obj["kind"] {
	case "Config":
		sync, _ := spec["sync"].(map[string]any)
		list, _ = sync["syncOnly"].([]any)
	case "SyncSet":
		list, _ = spec["gvks"].([]any)
	}
	var out []kinds.SyncedKind
	for _, e := range list {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		v, _ := m["version"].(string)
		kd, _ := m["kind"].(string)
		if v == "" || kd == "" {
			continue
		}
		out = append(out, kinds.SyncedKind{Group: g, Version: v, Kind: kd})
	}
	type exemption struct{ processes, namespaces []string }
	var exs []exemption
	if obj["kind"] == "Config" {
		matches, _ := spec["match"].([]any)
		for _, e := range matches {
			m, _ := e.(map[string]any)
			if ex := (exemption{stringList(m["processes"]), stringList(m["excludedNamespaces"])}); len(ex.processes) > 0 && len(ex.namespaces) > 0 {
				exs = append(exs, ex)
			}
		}
	}
	if len(exs) == 0 {
		return out, nil
	}
	return out, func(process, ns string) bool {
		for _, ex := range exs {
			if (slices.Contains(ex.processes, process) || slices.Contains(ex.processes, "*")) &&
				slices.ContainsFunc(ex.namespaces, func(g string) bool { return glob(g, ns) }) {
				return true
			}
		}
		return false
	}
}

// stringList is a list of strings, the others left out.
func stringList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
