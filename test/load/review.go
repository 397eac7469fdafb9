// Package load is the load-testing harness of modwright: AdmissionReview
// bodies built as kube-apiserver sends them, ModRule sets of a chosen size
// and selectivity, an HTTP/2 load generator (fixed rate or flat out), and
// the /proc and /metrics readers that report what the server paid.
package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// UIDLen is the length of the request uids the generator writes (a UUID in
// its canonical text form). Review bodies keep a slot of this width.
const UIDLen = 36

// placeholderUID fills the uid slot of a template.
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// Review is a pre-built AdmissionReview admission.k8s.io/v1 request body for
// the CREATE of one object, as kube-apiserver sends it to a mutating
// webhook. Only the request uid changes from one request to the next: Body
// copies the template and writes the uid into its slot. A Review is
// immutable and safe for concurrent use.
type Review struct {
	// Kind, Name and Namespace describe the object under admission
	// (Namespace is empty for cluster-scoped objects).
	Kind, Name, Namespace string
	tmpl                  []byte
	uidAt                 int
}

// GroupVersionResource names an API resource.
type GroupVersionResource struct {
	Group, Version, Resource string
	// Namespaced is false for cluster-scoped resources.
	Namespaced bool
}

// knownResource maps the kinds the harness knows to their resource.
// Other kinds are resolved from their apiVersion, with the plural guessed.
func knownResource(kind string) (resource string, namespaced, ok bool) {
	switch kind {
	case "Deployment":
		return "deployments", true, true
	case "Pod":
		return "pods", true, true
	case "Service":
		return "services", true, true
	case "ConfigMap":
		return "configmaps", true, true
	case "Secret":
		return "secrets", true, true
	case "StatefulSet":
		return "statefulsets", true, true
	case "DaemonSet":
		return "daemonsets", true, true
	case "ReplicaSet":
		return "replicasets", true, true
	case "Job":
		return "jobs", true, true
	case "CronJob":
		return "cronjobs", true, true
	case "Ingress":
		return "ingresses", true, true
	case "ServiceAccount":
		return "serviceaccounts", true, true
	case "PersistentVolumeClaim":
		return "persistentvolumeclaims", true, true
	case "Namespace":
		return "namespaces", false, true
	case "Node":
		return "nodes", false, true
	case "PersistentVolume":
		return "persistentvolumes", false, true
	case "ClusterRole":
		return "clusterroles", false, true
	case "ClusterRoleBinding":
		return "clusterrolebindings", false, true
	case "StorageClass":
		return "storageclasses", false, true
	case "CustomResourceDefinition":
		return "customresourcedefinitions", false, true
	}
	return "", true, false
}

// ResourceOf returns the resource of an object of kind with apiVersion.
func ResourceOf(apiVersion, kind string) GroupVersionResource {
	group, version := "", apiVersion
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		group, version = apiVersion[:i], apiVersion[i+1:]
	}
	res, namespaced, ok := knownResource(kind)
	if !ok {
		res = strings.ToLower(kind)
		switch {
		case strings.HasSuffix(res, "s"):
			res += "es"
		case strings.HasSuffix(res, "y"):
			res = res[:len(res)-1] + "ies"
		default:
			res += "s"
		}
	}
	return GroupVersionResource{Group: group, Version: version, Resource: res, Namespaced: namespaced}
}

// The AdmissionRequest fields, in the order kube-apiserver writes them
// (k8s.io/api/admission/v1).
type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type gvr struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

type userInfo struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups"`
}

type createOptions struct {
	Kind         string `json:"kind"`
	APIVersion   string `json:"apiVersion"`
	FieldManager string `json:"fieldManager"`
}

type admissionRequest struct {
	UID             string          `json:"uid"`
	Kind            gvk             `json:"kind"`
	Resource        gvr             `json:"resource"`
	RequestKind     gvk             `json:"requestKind"`
	RequestResource gvr             `json:"requestResource"`
	Name            string          `json:"name,omitempty"`
	Namespace       string          `json:"namespace,omitempty"`
	Operation       string          `json:"operation"`
	UserInfo        userInfo        `json:"userInfo"`
	Object          json.RawMessage `json:"object"`
	OldObject       json.RawMessage `json:"oldObject"`
	DryRun          bool            `json:"dryRun"`
	Options         createOptions   `json:"options"`
}

type admissionReview struct {
	Kind       string           `json:"kind"`
	APIVersion string           `json:"apiVersion"`
	Request    admissionRequest `json:"request"`
}

// NewReview builds the CREATE review of the object obj (JSON). namespace,
// when not empty, moves a namespaced object into that namespace (the
// request's namespace and the object's metadata.namespace); it is ignored
// for cluster-scoped objects. A namespaced object that names no namespace
// and gets none is put in "default", as kubectl does.
func NewReview(obj []byte, namespace string) (*Review, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, obj); err != nil {
		return nil, fmt.Errorf("load: object: %w", err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(compact.Bytes(), &head); err != nil {
		return nil, fmt.Errorf("load: object: %w", err)
	}
	if head.Kind == "" || head.APIVersion == "" {
		return nil, errors.New("load: object: kind and apiVersion are required")
	}
	res := ResourceOf(head.APIVersion, head.Kind)
	object := compact.Bytes()
	ns := head.Metadata.Namespace
	if res.Namespaced {
		if namespace != "" {
			ns = namespace
		}
		if ns == "" {
			ns = "default"
		}
		if ns != head.Metadata.Namespace {
			var err error
			if object, err = setNamespace(object, ns); err != nil {
				return nil, fmt.Errorf("load: object: %w", err)
			}
		}
	} else {
		ns = ""
	}

	kind := gvk{Group: res.Group, Version: res.Version, Kind: head.Kind}
	resource := gvr{Group: res.Group, Version: res.Version, Resource: res.Resource}
	rv := admissionReview{
		Kind:       "AdmissionReview",
		APIVersion: "admission.k8s.io/v1",
		Request: admissionRequest{
			UID:             placeholderUID,
			Kind:            kind,
			Resource:        resource,
			RequestKind:     kind,
			RequestResource: resource,
			Name:            head.Metadata.Name,
			Namespace:       ns,
			Operation:       "CREATE",
			UserInfo:        userInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}},
			Object:          object,
			OldObject:       json.RawMessage("null"),
			Options:         createOptions{Kind: "CreateOptions", APIVersion: "meta.k8s.io/v1", FieldManager: "kubectl-client-side-apply"},
		},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rv); err != nil {
		return nil, fmt.Errorf("load: encoding the review: %w", err)
	}
	tmpl := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	slot := []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"` + placeholderUID + `"`)
	if !bytes.HasPrefix(tmpl, slot) {
		return nil, errors.New("load: internal error: the uid slot is not where expected")
	}
	return &Review{
		Kind:      head.Kind,
		Name:      head.Metadata.Name,
		Namespace: ns,
		tmpl:      tmpl,
		uidAt:     len(slot) - UIDLen - 1,
	}, nil
}

// Body returns a new request body carrying uid. A uid of UIDLen bytes is
// written in place; others (tests) are spliced in, JSON-quoted.
func (r *Review) Body(uid string) []byte {
	return r.AppendBody(make([]byte, 0, len(r.tmpl)+len(uid)), uid)
}

// AppendBody appends the request body carrying uid to dst.
func (r *Review) AppendBody(dst []byte, uid string) []byte {
	if len(uid) == UIDLen && plainASCII(uid) {
		n := len(dst)
		dst = append(dst, r.tmpl...)
		copy(dst[n+r.uidAt:], uid)
		return dst
	}
	q, _ := json.Marshal(uid) // strings always encode
	dst = append(dst, r.tmpl[:r.uidAt-1]...)
	dst = append(dst, q...)
	return append(dst, r.tmpl[r.uidAt+UIDLen+1:]...)
}

// Len is the length of a body with a UIDLen-byte uid.
func (r *Review) Len() int { return len(r.tmpl) }

// plainASCII reports whether s needs no escaping in a JSON string.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// setNamespace sets metadata.namespace in a compact JSON object, keeping the
// order of the keys (as an API server would have written them).
func setNamespace(obj []byte, ns string) ([]byte, error) {
	top, err := decodeOrdered(obj)
	if err != nil {
		return nil, err
	}
	metaRaw, ok := top.get("metadata")
	if !ok {
		metaRaw = json.RawMessage("{}")
	}
	meta, err := decodeOrdered(metaRaw)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	q, _ := json.Marshal(ns)
	meta.set("namespace", q)
	top.set("metadata", meta.encode())
	return top.encode(), nil
}

// ordered is one JSON object level with its keys in document order.
type ordered struct {
	keys []string
	vals []json.RawMessage
}

func decodeOrdered(b []byte) (*ordered, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := &ordered{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.keys = append(o.keys, k)
		o.vals = append(o.vals, v)
	}
	return o, nil
}

func (o *ordered) get(k string) (json.RawMessage, bool) {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

func (o *ordered) set(k string, v json.RawMessage) {
	for i, key := range o.keys {
		if key == k {
			o.vals[i] = v
			return
		}
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

func (o *ordered) encode() []byte {
	b := []byte{'{'}
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ',')
		}
		q, _ := json.Marshal(k)
		b = append(b, q...)
		b = append(b, ':')
		b = append(b, o.vals[i]...)
	}
	return append(b, '}')
}
