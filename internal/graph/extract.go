package graph

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// Edge is one relationship between two objects, with attributes (none
// for the built-in edges; a rule pack's module may give some).
type Edge struct {
	Type       string     `json:"type"`
	From       Ref        `json:"from"`
	To         Ref        `json:"to"`
	Attributes Attributes `json:"attributes,omitempty"`
}

// Attributes are an edge's string attributes, held in one canonical
// string (sorted keys, JSON) so that edges stay comparable values; "" is
// none. Build them with NewAttributes, read them with Map.
type Attributes string

// NewAttributes holds m (none when empty).
func NewAttributes(m map[string]string) Attributes {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // map keys are sorted
	return Attributes(b)
}

// Map is the attributes as a map (nil when none).
func (a Attributes) Map() map[string]string {
	if a == "" {
		return nil
	}
	var m map[string]string
	_ = json.Unmarshal([]byte(a), &m)
	return m
}

// MarshalJSON writes the attributes as a JSON object.
func (a Attributes) MarshalJSON() ([]byte, error) {
	if a == "" {
		return []byte("{}"), nil
	}
	return []byte(a), nil
}

// UnmarshalJSON reads a JSON object of strings.
func (a *Attributes) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*a = NewAttributes(m)
	return nil
}

// Ref names an object; Namespace is "" for cluster-scoped ones.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// The built-in edge types (docs/graph.md).
const (
	Owns               = "OWNS"
	UsesConfigMap      = "USES_CONFIGMAP"
	UsesSecret         = "USES_SECRET"
	MountsVolume       = "MOUNTS_VOLUME"
	UsesServiceAccount = "USES_SERVICEACCOUNT"
	RoutesTo           = "ROUTES_TO"
	AttachedTo         = "ATTACHED_TO"
)

// Compare orders edges by type, then from, then to, then attributes.
func Compare(a, b Edge) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type),
		cmp.Compare(a.From.Kind, b.From.Kind), cmp.Compare(a.From.Namespace, b.From.Namespace), cmp.Compare(a.From.Name, b.From.Name),
		cmp.Compare(a.To.Kind, b.To.Kind), cmp.Compare(a.To.Namespace, b.To.Namespace), cmp.Compare(a.To.Name, b.To.Name),
		cmp.Compare(a.Attributes, b.Attributes))
}

// podSpecOf is where a kind keeps its pod spec: a Pod's spec, a
// workload's pod template, a CronJob's job template's.
func podSpecOf(obj map[string]any) map[string]any {
	kind, _ := obj["kind"].(string)
	var path []string
	switch kind {
	case "Pod":
		path = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		path = []string{"spec", "template", "spec"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		return nil
	}
	m, _ := dig(obj, path...).(map[string]any)
	return m
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := dig(v, path...).(string)
	return s
}

func list(v any, path ...string) []any {
	l, _ := dig(v, path...).([]any)
	return l
}

// Extract is the built-in edges of one object (docs/graph.md), sorted
// and without duplicates. obj is a JSON tree; it is not modified.
func Extract(obj map[string]any) []Edge {
	kind := str(obj, "kind")
	ns := str(obj, "metadata", "namespace")
	self := Ref{Kind: kind, Namespace: ns, Name: str(obj, "metadata", "name")}
	if kind == "" || self.Name == "" {
		return nil
	}
	var out []Edge
	add := func(typ string, from, to Ref) {
		if to.Name != "" && to.Kind != "" {
			out = append(out, Edge{Type: typ, From: from, To: to})
		}
	}
	local := func(kind, name string) Ref { return Ref{Kind: kind, Namespace: ns, Name: name} }
	for _, o := range list(obj, "metadata", "ownerReferences") {
		add(Owns, Ref{Kind: str(o, "kind"), Namespace: ownerNamespace(str(o, "kind"), ns), Name: str(o, "name")}, self)
	}
	if spec := podSpecOf(obj); spec != nil {
		for _, v := range list(spec, "volumes") {
			add(UsesConfigMap, self, local("ConfigMap", str(v, "configMap", "name")))
			add(UsesSecret, self, local("Secret", str(v, "secret", "secretName")))
			add(MountsVolume, self, local("PersistentVolumeClaim", str(v, "persistentVolumeClaim", "claimName")))
			for _, src := range list(v, "projected", "sources") {
				add(UsesConfigMap, self, local("ConfigMap", str(src, "configMap", "name")))
				add(UsesSecret, self, local("Secret", str(src, "secret", "name")))
			}
		}
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			for _, c := range list(spec, field) {
				for _, e := range list(c, "env") {
					add(UsesConfigMap, self, local("ConfigMap", str(e, "valueFrom", "configMapKeyRef", "name")))
					add(UsesSecret, self, local("Secret", str(e, "valueFrom", "secretKeyRef", "name")))
				}
				for _, e := range list(c, "envFrom") {
					add(UsesConfigMap, self, local("ConfigMap", str(e, "configMapRef", "name")))
					add(UsesSecret, self, local("Secret", str(e, "secretRef", "name")))
				}
			}
		}
		for _, s := range list(spec, "imagePullSecrets") {
			add(UsesSecret, self, local("Secret", str(s, "name")))
		}
		sa := str(spec, "serviceAccountName")
		if sa == "" {
			sa = str(spec, "serviceAccount") // the deprecated field
		}
		add(UsesServiceAccount, self, local("ServiceAccount", sa))
	}
	switch kind {
	case "Ingress":
		add(RoutesTo, self, local("Service", str(obj, "spec", "defaultBackend", "service", "name")))
		for _, r := range list(obj, "spec", "rules") {
			for _, p := range list(r, "http", "paths") {
				add(RoutesTo, self, local("Service", str(p, "backend", "service", "name")))
			}
		}
	case "PersistentVolumeClaim":
		add(AttachedTo, self, Ref{Kind: "PersistentVolume", Name: str(obj, "spec", "volumeName")})
	}
	slices.SortFunc(out, Compare)
	return slices.Compact(out)
}

// ownerNamespace is where an owner lives: with the object, unless its kind
// is cluster-scoped (a Node owns mirror Pods, a Namespace nothing here).
func ownerNamespace(kind, ns string) string {
	switch kind {
	case "Node", "Namespace", "PersistentVolume", "ClusterRole", "CustomResourceDefinition", "StorageClass":
		return ""
	}
	if strings.HasPrefix(kind, "Cluster") {
		return ""
	}
	return ns
}
