// Package suite reads modwright test suites: files named modwright-test.yaml
// that name rules, resources and context objects, and the outcome expected
// for each resource. It only parses and validates; `modwright test` runs
// the suites through the engine.
package suite

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// FileName is the name suite files must have to be found in directories.
const FileName = "modwright-test.yaml"

// APIVersion and Kind identify a suite document.
const (
	APIVersion = "modwright.io/v1alpha1"
	Kind       = "TestSuite"
)

// ErrInvalid marks a suite that cannot be run.
var ErrInvalid = errors.New("invalid test suite")

// Expectations a case can have.
const (
	ExpectAdmitted  = "admitted"  // allowed; the result is compared when given
	ExpectUnchanged = "unchanged" // allowed, and no rule changed the object
	ExpectPatched   = "patched"   // allowed, and the rules changed it; the result is compared when given
	ExpectRejected  = "rejected"  // denied; the denial text is checked when message/messageRegex are given
)

var expectations = []string{ExpectAdmitted, ExpectUnchanged, ExpectPatched, ExpectRejected}

// Suite is one suite file.
type Suite struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name labels the suite's cases in the output (default: the file's path).
	Name string `json:"name,omitempty"`
	// Rules are rule files or directories, relative to the suite file.
	Rules []string `json:"rules"`
	// Resources are manifest files or directories whose objects cases refer
	// to by Kind/name.
	Resources []string `json:"resources,omitempty"`
	// Context are Namespace and Node objects served as syntheticRefs.
	Context []string `json:"context,omitempty"`
	// CRDs are CustomResourceDefinition files or directories: objects of
	// their kinds are decoded and validated as the kube-apiserver does,
	// before and after the rules (an invalid one is a rejection whose text
	// begins "invalid: " or "invalid after the rules: ").
	CRDs []string `json:"crds,omitempty"`
	// Authorizer holds the authorization decisions the rules' checks get
	// (CEL's authorizer): the first entry that matches a question answers
	// it, and a question no entry matches is denied. Without it, a check
	// fails, as offline.
	Authorizer Decisions `json:"authorizer,omitempty"`
	// Operation is the default admission operation (default CREATE).
	Operation string `json:"operation,omitempty"`
	// Namespace is assumed for namespaced objects that carry none (default
	// "default").
	Namespace string `json:"namespace,omitempty"`
	// ClusterRulesNamespace holds the cluster-wide rules (default kubemod-system).
	ClusterRulesNamespace string `json:"clusterRulesNamespace,omitempty"`
	Cases                 []Case `json:"cases"`

	// Path is the suite file's path, Dir its directory (set by Load).
	Path string `json:"-"`
	Dir  string `json:"-"`
}

// Case is one object and the outcome expected for it.
type Case struct {
	// Name describes the case (default: the resource reference).
	Name string `json:"name,omitempty"`
	// Resource refers to an object of the suite's resources: "Kind/name"
	// or "Kind/namespace/name".
	Resource string `json:"resource,omitempty"`
	// Object is the object itself, instead of Resource (decoded by Load
	// into Obj, numbers kept exact).
	Object json.RawMessage `json:"object,omitempty"`
	// Old is a file holding the old object of an UPDATE (relative to the
	// suite file: its only object, or the one with the object's
	// apiVersion, kind, namespace and name); OldObject is the old object
	// itself. Only with UPDATE; without either an UPDATE carries no old
	// object.
	Old       string          `json:"old,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	// Operation and Namespace override the suite's.
	Operation string `json:"operation,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Expect is admitted, unchanged, patched or rejected.
	Expect string `json:"expect"`
	// Result is a file holding the expected object (relative to the suite
	// file); ResultObject is the expected object itself. Compared as JSON
	// values. Only with admitted or patched.
	Result       string          `json:"result,omitempty"`
	ResultObject json.RawMessage `json:"resultObject,omitempty"`
	// Message must occur in the denial text; MessageRegex must match it.
	// Only with rejected.
	Message      string `json:"message,omitempty"`
	MessageRegex string `json:"messageRegex,omitempty"`
	// Errors are texts each of which must occur in one of the rule errors
	// (a rule that failed to apply). Any rule error not expected here fails
	// the case.
	Errors []string `json:"errors,omitempty"`
	// Warnings are texts each of which must occur in one of the admission
	// warnings (a Policy's Warn action); warnings not listed here do not
	// fail the case.
	Warnings []string `json:"warnings,omitempty"`

	// Set by Load: Obj, OldObj and ResultObj decoded, MessageRegex
	// compiled.
	Obj, OldObj, ResultObj map[string]any `json:"-"`
	Regex                  *regexp.Regexp `json:"-"`
}

// Ref splits a resource reference into kind, namespace and name.
func (c *Case) Ref() (kind, ns, name string) {
	parts := strings.Split(c.Resource, "/")
	switch len(parts) {
	case 2:
		return parts[0], "", parts[1]
	case 3:
		return parts[0], parts[1], parts[2]
	}
	return "", "", ""
}

// Title is the case's name, or its resource reference.
func (c *Case) Title(i int) string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Resource != "":
		return c.Resource
	}
	kind, _ := c.Obj["kind"].(string)
	md, _ := c.Obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if kind != "" && name != "" {
		return kind + "/" + name
	}
	return fmt.Sprintf("cases[%d]", i)
}

// Find returns the suite files at the given paths: files as given, and
// every file named FileName under directories, in lexical order.
func Find(paths []string) ([]string, error) {
	out, err := FindFiles(paths, func(path string) bool { return filepath.Base(path) == FileName })
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return out, nil
}

// FindFiles returns the files at the given paths: files as given, whatever
// their names, and the files under directories (searched recursively,
// symbolic links not followed) whose path match accepts, in lexical order
// for each directory. A path that does not exist, or a directory that
// cannot be read, is an error.
func FindFiles(paths []string, match func(path string) bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && match(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// Load reads and validates one suite file. Every problem is reported,
// each naming the file and the field.
func Load(path string) (*Suite, error) {
	data, err := source.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return Parse(path, data)
}

// describeTop names what a file held instead of a mapping.
func describeTop(v any) string {
	switch v.(type) {
	case nil:
		return "an empty document"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a single %s (%s)", value.TypeName(v), truncate(fmt.Sprint(v), 40))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Parse decodes and validates a suite; path names it in errors and
// resolves its relative paths.
func Parse(path string, data []byte) (*Suite, error) {
	var s Suite
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	strict, err := sigsjson.UnmarshalStrict(j, &s)
	if err != nil {
		if v, derr := value.Decode(j); derr == nil {
			if _, ok := v.(map[string]any); !ok {
				return nil, fmt.Errorf("%w: %s: a test suite is a YAML mapping (apiVersion: %s, kind: %s, rules, cases), not %s", ErrInvalid, path, APIVersion, Kind, describeTop(v))
			}
			if m := value.FindMismatch(v, reflect.TypeFor[Suite]()); m != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, path, m)
			}
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrInvalid, path, strings.Join(msgs, "; "))
	}
	s.Path, s.Dir = path, filepath.Dir(path)
	var errs []string
	bad := func(field, format string, args ...any) {
		errs = append(errs, "\n  "+field+": "+fmt.Sprintf(format, args...))
	}
	if s.APIVersion != APIVersion {
		bad("apiVersion", "must be %s, not %q", APIVersion, s.APIVersion)
	}
	if s.Kind != Kind {
		bad("kind", "must be %s, not %q", Kind, s.Kind)
	}
	if len(s.Rules) == 0 {
		bad("rules", "required: the rule files or directories to test")
	}
	if s.Operation == "" {
		s.Operation = "CREATE"
	}
	if !validOp(s.Operation) {
		bad("operation", "must be CREATE, UPDATE, DELETE or CONNECT, not %q", s.Operation)
	}
	if s.Namespace == "" {
		s.Namespace = "default"
	}
	if len(s.Cases) == 0 {
		bad("cases", "required: at least one case")
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		f := fmt.Sprintf("cases[%d]", i)
		switch {
		case c.Resource == "" && c.Object == nil:
			bad(f, "needs resource (Kind/name) or object")
		case c.Resource != "" && c.Object != nil:
			bad(f, "has both resource and object; give one")
		case c.Resource != "":
			if kind, _, name := c.Ref(); kind == "" || name == "" {
				bad(f+".resource", "must be Kind/name or Kind/namespace/name, not %q", c.Resource)
			} else if len(s.Resources) == 0 {
				bad(f+".resource", "refers to %q but the suite has no resources", c.Resource)
			}
		}
		c.Obj = decodeObject(f+".object", c.Object, bad)
		c.ResultObj = decodeObject(f+".resultObject", c.ResultObject, bad)
		c.OldObj = decodeObject(f+".oldObject", c.OldObject, bad)
		checkOld(c, f, s.Operation, bad)
		if c.Obj != nil {
			if k, _ := c.Obj["kind"].(string); k == "" {
				bad(f+".object.kind", "required")
			}
		}
		if c.Operation != "" && !validOp(c.Operation) {
			bad(f+".operation", "must be CREATE, UPDATE, DELETE or CONNECT, not %q", c.Operation)
		}
		if !slices.Contains(expectations, c.Expect) {
			bad(f+".expect", "must be one of %s, not %q", strings.Join(expectations, ", "), c.Expect)
		}
		hasResult := c.Result != "" || c.ResultObject != nil
		if c.Result != "" && c.ResultObject != nil {
			bad(f, "has both result and resultObject; give one")
		}
		if hasResult && c.Expect != ExpectAdmitted && c.Expect != ExpectPatched {
			bad(f+".result", "only admitted and patched cases have a result (expect is %q)", c.Expect)
		}
		if (c.Message != "" || c.MessageRegex != "") && c.Expect != ExpectRejected {
			bad(f+".message", "only rejected cases have a message (expect is %q)", c.Expect)
		}
		if c.MessageRegex != "" {
			re, err := regexp.Compile(c.MessageRegex)
			if err != nil {
				bad(f+".messageRegex", "%v", err)
			}
			c.Regex = re
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w %s:%s", ErrInvalid, path, strings.Join(errs, ""))
	}
	return &s, nil
}

// decodeObject decodes an inline object as manifests are decoded (numbers
// keep their text); nil when absent.
func decodeObject(field string, raw json.RawMessage, bad func(field, format string, args ...any)) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	v, err := value.Decode(raw)
	if err != nil {
		bad(field, "%v", err)
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		bad(field, "must be an object, not a JSON %s", value.TypeName(v))
		return nil
	}
	return m
}

// checkOld allows an old object (old or oldObject) only on UPDATE.
func checkOld(c *Case, f, suiteOp string, bad func(field, format string, args ...any)) {
	if c.Old == "" && c.OldObject == nil {
		return
	}
	if c.Old != "" && c.OldObject != nil {
		bad(f, "has both old and oldObject; give one")
	}
	op := suiteOp
	if c.Operation != "" {
		op = c.Operation
	}
	switch strings.ToUpper(op) {
	case "CREATE":
		bad(f+".old", "is the old object of an UPDATE, and the operation is CREATE: give operation: UPDATE")
	case "DELETE":
		bad(f+".old", "is refused with DELETE: the object being deleted is the old object, given as resource or object")
	}
}

func validOp(op string) bool {
	switch strings.ToUpper(op) {
	case "CREATE", "UPDATE", "DELETE", "CONNECT":
		return true
	}
	return false
}

// Resolve makes a path of the suite relative to the working directory.
func (s *Suite) Resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}

// ResolveAll resolves several paths.
func (s *Suite) ResolveAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = s.Resolve(p)
	}
	return out
}
