package suite

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	sigsjson "sigs.k8s.io/json"
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
	// The inputs of kinds and features not run yet: read, and a suite
	// using them is refused with the reason.
	TargetResources      []string        `json:"targetResources,omitempty"`
	ClusterResources     []string        `json:"clusterResources,omitempty"`
	APICallResponses     json.RawMessage `json:"apiCallResponses,omitempty"`
	GlobalContextEntries json.RawMessage `json:"globalContextEntries,omitempty"`
	Context              string          `json:"context,omitempty"`
	ParamResources       []string        `json:"paramResources,omitempty"`
	JSONPayload          string          `json:"jsonPayload,omitempty"`
	JSONPayloads         []string        `json:"jsonPayloads,omitempty"`
	HTTPPayloads         []string        `json:"httpPayloads,omitempty"`
	EnvoyPayloads        []string        `json:"envoyPayloads,omitempty"`

	Path string `json:"-"`
	Dir  string `json:"-"`
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

func strictYAML(data []byte, out any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, out)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
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
