package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/source"
)

// KyvernoFileName is the name of Kyverno's CLI test files, which `test`
// runs as `kyverno test` does.
const KyvernoFileName = "kyverno-test.yaml"

// KyvernoTest is a cli.kyverno.io/v1alpha1 Test: Kyverno's CLI test suite.
type KyvernoTest struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// Name is the deprecated top-level name (refused, as Kyverno does).
	Name       string          `json:"name,omitempty"`
	Policies   []string        `json:"policies,omitempty"`
	Resources  []string        `json:"resources,omitempty"`
	Variables  string          `json:"variables,omitempty"`
	Values     *KyvernoValues  `json:"values,omitempty"`
	UserInfo   string          `json:"userinfo,omitempty"`
	Exceptions []string        `json:"exceptions,omitempty"`
	Results    []KyvernoResult `json:"results,omitempty"`
	// APICallResponses answer the policies' apiCall context entries
	// (urlPath: API calls; url: service calls).
	APICallResponses []KyvernoAPICallResponse `json:"apiCallResponses,omitempty"`
	// The inputs of kinds and features not run yet: read, and a suite
	// using them is refused with the reason.
	TargetResources  []string `json:"targetResources,omitempty"`
	ClusterResources []string `json:"clusterResources,omitempty"`
	// GlobalContextEntries stand for GlobalContextEntries of the cluster
	// (globalReference context entries, CEL's globalContext.Get).
	GlobalContextEntries []KyvernoGlobalContextEntry `json:"globalContextEntries,omitempty"`
	Context              string                      `json:"context,omitempty"`
	ParamResources       []string                    `json:"paramResources,omitempty"`
	// JSONPayloads are JSON (or YAML) documents that are not Kubernetes
	// objects, for ValidatingPolicies of evaluation.mode JSON; a row names
	// one by its path as written (cleaned). JSONPayload is the deprecated
	// single form (LoadKyverno moves it into JSONPayloads, as Kyverno).
	JSONPayload  string   `json:"jsonPayload,omitempty"`
	JSONPayloads []string `json:"jsonPayloads,omitempty"`
	// HTTP and Envoy check requests are for Kyverno's authorization
	// policies, which modwright does not serve: refused.
	HTTPPayloads  []string `json:"httpPayloads,omitempty"`
	EnvoyPayloads []string `json:"envoyPayloads,omitempty"`

	Path string `json:"-"`
	Dir  string `json:"-"`
}

// KyvernoAPICallResponse is a recorded answer to an apiCall: to url (a
// service call) or urlPath (an API call), with method (GET, POST, or
// "": any), whatever the request's body.
type KyvernoAPICallResponse struct {
	URL      string `json:"url,omitempty"`
	URLPath  string `json:"urlPath,omitempty"`
	Method   string `json:"method,omitempty"`
	Response struct {
		StatusCode int             `json:"statusCode,omitempty"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
}

// Validate checks an entry as Kyverno does: one of url (absolute http or
// https) and urlPath (absolute), method GET, POST or empty, a JSON object
// body, a status in 100-599.
func (e *KyvernoAPICallResponse) Validate() error {
	switch {
	case e.URL == "" && e.URLPath == "":
		return errors.New("either url or urlPath is required")
	case e.URL != "" && e.URLPath != "":
		return errors.New("url and urlPath are mutually exclusive")
	}
	if e.URL != "" {
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return fmt.Errorf("url %q must be an absolute http or https URL", e.URL)
		}
	}
	if e.URLPath != "" && !strings.HasPrefix(e.URLPath, "/") {
		return fmt.Errorf("urlPath %q must be an absolute path starting with '/'", e.URLPath)
	}
	if m := strings.ToUpper(e.Method); m != "" && m != "GET" && m != "POST" {
		return fmt.Errorf("method %q must be GET or POST", e.Method)
	}
	var body any
	if err := json.Unmarshal(e.Response.Body, &body); err != nil {
		return fmt.Errorf("response.body must be valid JSON: %v", err)
	}
	if _, ok := body.(map[string]any); !ok {
		return errors.New("response.body is required and must be a JSON object")
	}
	if sc := e.Response.StatusCode; sc != 0 && (sc < 100 || sc > 599) {
		return fmt.Errorf("response.statusCode %d must be between 100 and 599", sc)
	}
	return nil
}

// KyvernoGlobalContextEntry stands for a GlobalContextEntry of the cluster
// (kyverno test's globalContextEntries): its value is data (a JSON
// object), or the list of objects resources (inline) or resourceFiles (YAML
// files under the suite's folder) give; fieldPath (JMESPath) then picks a
// part of it, and projections, when given, make it an object of their
// names, each its path's result.
type KyvernoGlobalContextEntry struct {
	Name          string                           `json:"name"`
	Data          json.RawMessage                  `json:"data,omitempty"`
	Resources     []json.RawMessage                `json:"resources,omitempty"`
	ResourceFiles []string                         `json:"resourceFiles,omitempty"`
	FieldPath     string                           `json:"fieldPath,omitempty"`
	Projections   []KyvernoGlobalContextProjection `json:"projections,omitempty"`
}

// KyvernoGlobalContextProjection is a name policies read and the JMESPath
// that gives its value.
type KyvernoGlobalContextProjection struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// ValidateGlobalContextEntries checks the entries as Kyverno does: a
// unique name each, named projections with a path, exactly one of data (a
// JSON object), resources (objects) and resourceFiles (relative paths
// inside the suite's folder). The errors name the entry, not the field.
func ValidateGlobalContextEntries(entries []KyvernoGlobalContextEntry) error {
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		name := strings.TrimSpace(e.Name)
		if name == "" {
			return fmt.Errorf("[%d]: name is required", i)
		}
		if seen[name] {
			return fmt.Errorf("duplicate name %q", name)
		}
		seen[name] = true
		for _, p := range e.Projections {
			if strings.TrimSpace(p.Name) == "" {
				return fmt.Errorf("entry %q: projection name is required", name)
			}
			if strings.TrimSpace(p.Path) == "" {
				return fmt.Errorf("entry %q projection %q: path is required", name, p.Name)
			}
		}
		data := strings.TrimSpace(string(e.Data))
		hasData := data != "" && data != "null"
		sources := 0
		for _, has := range []bool{hasData, e.Resources != nil, e.ResourceFiles != nil} {
			if has {
				sources++
			}
		}
		switch {
		case sources > 1:
			return fmt.Errorf("entry %q: data, resources, and resourceFiles are mutually exclusive", name)
		case sources == 0:
			return fmt.Errorf("entry %q: one of data, resources, or resourceFiles is required", name)
		}
		if hasData {
			var v any
			if err := json.Unmarshal(e.Data, &v); err != nil {
				return fmt.Errorf("entry %q: data must be valid JSON: %v", name, err)
			}
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf("entry %q: data must be a JSON object", name)
			}
		}
		for j, r := range e.Resources {
			var v any
			if err := json.Unmarshal(r, &v); err != nil {
				return fmt.Errorf("entry %q resources[%d]: must be valid JSON: %v", name, j, err)
			}
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf("entry %q resources[%d]: must be a JSON object (Kubernetes resource manifest)", name, j)
			}
		}
		for j, f := range e.ResourceFiles {
			f = strings.TrimSpace(f)
			switch clean := filepath.ToSlash(filepath.Clean(f)); {
			case f == "":
				return fmt.Errorf("entry %q resourceFiles[%d]: file path must not be empty", name, j)
			case filepath.IsAbs(f) || strings.HasPrefix(filepath.ToSlash(f), "/"):
				return fmt.Errorf("entry %q resourceFiles[%d]: file path must not be absolute", name, j)
			case clean == ".." || strings.HasPrefix(clean, "../"):
				return fmt.Errorf("entry %q resourceFiles[%d]: file path must not escape the test directory", name, j)
			}
		}
	}
	return nil
}

// KyvernoResult is one expected result row.
type KyvernoResult struct {
	Policy                 string          `json:"policy"`
	Rule                   string          `json:"rule,omitempty"`
	Result                 string          `json:"result"`
	Kind                   string          `json:"kind,omitempty"`
	Resources              []string        `json:"resources,omitempty"`
	ResourceSpecs          json.RawMessage `json:"resourceSpecs,omitempty"`
	Operation              string          `json:"operation,omitempty"`
	PatchedResources       string          `json:"patchedResources,omitempty"`
	GeneratedResource      string          `json:"generatedResource,omitempty"`
	GeneratedResources     []string        `json:"generatedResources,omitempty"`
	CloneSourceResource    string          `json:"cloneSourceResource,omitempty"`
	FailOnMissingResources bool            `json:"failOnMissingResources,omitempty"`
	// Kyverno's flags naming the kind of the policy (never used to match
	// a row, as in Kyverno).
	IsValidatingAdmissionPolicy bool `json:"isValidatingAdmissionPolicy,omitempty"`
	IsMutatingAdmissionPolicy   bool `json:"isMutatingAdmissionPolicy,omitempty"`
	IsValidatingPolicy          bool `json:"isValidatingPolicy,omitempty"`
	IsMutatingPolicy            bool `json:"isMutatingPolicy,omitempty"`
	IsGeneratingPolicy          bool `json:"isGeneratingPolicy,omitempty"`
	IsDeletingPolicy            bool `json:"isDeletingPolicy,omitempty"`
	IsImageValidatingPolicy     bool `json:"isImageValidatingPolicy,omitempty"`
}

// KyvernoValues is a values file (cli.kyverno.io/v1alpha1 Values) or a
// Test's inline values.
type KyvernoValues struct {
	APIVersion        string                   `json:"apiVersion,omitempty"`
	Kind              string                   `json:"kind,omitempty"`
	Metadata          json.RawMessage          `json:"metadata,omitempty"`
	GlobalValues      map[string]any           `json:"globalValues,omitempty"`
	Policies          []KyvernoPolicyValues    `json:"policies,omitempty"`
	NamespaceSelector []KyvernoNamespaceLabels `json:"namespaceSelector,omitempty"`
	Namespaces        []map[string]any         `json:"namespaces,omitempty"`
	Subresources      json.RawMessage          `json:"subresources,omitempty"`
}

// KyvernoPolicyValues are the values of one policy.
type KyvernoPolicyValues struct {
	Name      string `json:"name"`
	Resources []struct {
		Name   string         `json:"name"`
		Values map[string]any `json:"values,omitempty"`
	} `json:"resources,omitempty"`
	Rules []struct {
		Name          string           `json:"name"`
		Values        map[string]any   `json:"values,omitempty"`
		ForeachValues map[string][]any `json:"foreachValues,omitempty"`
	} `json:"rules,omitempty"`
}

// KyvernoNamespaceLabels gives a namespace's labels.
type KyvernoNamespaceLabels struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// LoadKyverno reads one kyverno-test.yaml (its first document; Kyverno
// reads each document as a test, modwright refuses a file with more) and
// its values file.
func LoadKyverno(path string) (*KyvernoTest, error) {
	data, err := source.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var t KyvernoTest
	if err := strictYAML(data, &t); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	t.Path, t.Dir = path, filepath.Dir(path)
	if t.JSONPayload != "" {
		if len(t.JSONPayloads) == 0 {
			t.JSONPayloads = []string{t.JSONPayload}
		}
		t.JSONPayload = ""
	}
	var payloads []string
	for _, p := range t.JSONPayloads {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(payloads, pathpkg.Clean(p)) {
			payloads = append(payloads, pathpkg.Clean(p))
		}
	}
	t.JSONPayloads = payloads
	if t.APIVersion == "" || t.Kind == "" {
		return nil, fmt.Errorf("%w: %s: apiVersion and kind are required (cli.kyverno.io/v1alpha1 Test)", ErrInvalid, path)
	}
	if t.Name != "" {
		return nil, fmt.Errorf("%w: %s: name: deprecated; write metadata.name", ErrInvalid, path)
	}
	if len(t.Policies) == 0 {
		return nil, fmt.Errorf("%w: %s: policies: at least one policy file is required", ErrInvalid, path)
	}
	if t.Values == nil && t.Variables != "" {
		vp := filepath.Join(t.Dir, t.Variables)
		vdata, err := source.ReadFile(vp)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: variables: %w", ErrInvalid, path, err)
		}
		var v KyvernoValues
		if err := strictYAML(vdata, &v); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, vp, err)
		}
		t.Values = &v
	}
	return &t, nil
}

// strictYAML decodes a Kyverno CLI file as Kyverno's CLI does
// (sigs.k8s.io/yaml's UnmarshalStrict): an unknown field is an error, a
// field's name matches whatever its case (isMUtatingPolicy is
// isMutatingPolicy, as Go's encoding/json matches it).
func strictYAML(data []byte, out any) error {
	return yaml.UnmarshalStrict(data, out)
}

// Resolve is a path of the test relative to its directory.
func (t *KyvernoTest) Resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(t.Dir, p)
}

// ResolveAll resolves paths.
func (t *KyvernoTest) ResolveAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = t.Resolve(p)
	}
	return out
}
