package suite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/modwright/modwright/internal/source"
)

// GatorFileName is the name of Gatekeeper's suite files (`gator verify`),
// which `test` runs as gator does.
const GatorFileName = "suite.yaml"

// GatorAPIVersion and GatorKind identify a Gatekeeper suite.
const (
	GatorAPIVersion = "test.gatekeeper.sh/v1alpha1"
	GatorKind       = "Suite"
)

// GatorSuite is a test.gatekeeper.sh/v1alpha1 Suite: Gatekeeper's test
// suite, each test a template and a constraint with cases.
type GatorSuite struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Tests      []GatorTest     `json:"tests,omitempty"`
	Skip       bool            `json:"skip,omitempty"`

	Path string `json:"-"`
	Dir  string `json:"-"`
}

// GatorTest is a template, a constraint and the cases run against them.
type GatorTest struct {
	Name       string      `json:"name,omitempty"`
	Template   string      `json:"template"`
	Constraint string      `json:"constraint"`
	Cases      []GatorCase `json:"cases,omitempty"`
	Skip       bool        `json:"skip,omitempty"`
	// Invalid: the template or the constraint must fail to load.
	Invalid bool `json:"invalid,omitempty"`
}

// GatorCase is an object (with the inventory it is reviewed against) and
// the violations expected.
type GatorCase struct {
	Name       string           `json:"name,omitempty"`
	Object     string           `json:"object"`
	Inventory  []string         `json:"inventory,omitempty"`
	Assertions []GatorAssertion `json:"assertions,omitempty"`
	Skip       bool             `json:"skip,omitempty"`
}

// GatorAssertion is a count of violations, of those whose message
// Message (a regular expression, unanchored) matches when it is given.
type GatorAssertion struct {
	// Violations is "yes" (at least one), "no" (none) or a count; nil:
	// "yes".
	Violations *json.RawMessage `json:"violations,omitempty"`
	Message    *string          `json:"message,omitempty"`

	re *regexp.Regexp
}

// MessageRegexp is Message compiled (by LoadGator); nil without one.
func (a *GatorAssertion) MessageRegexp() *regexp.Regexp { return a.re }

// Check says whether n violations satisfy the assertion (nil: they do),
// after Count validated it.
func (a *GatorAssertion) Check(n int) error {
	want, exact, err := a.Count()
	if err != nil {
		return err
	}
	switch {
	case exact && n != want:
		return fmt.Errorf("got %s, want %d", violations(n), want)
	case !exact && want == 0 && n != 0:
		return fmt.Errorf("got %s, want none", violations(n))
	case !exact && want == 1 && n == 0:
		return fmt.Errorf("got no violations, want at least one")
	}
	return nil
}

func violations(n int) string {
	if n == 1 {
		return "1 violation"
	}
	return fmt.Sprintf("%d violations", n)
}

// Count is the assertion's expectation: an exact count, or (exact false)
// at least one (want 1, "yes") or none (want 0, "no").
func (a *GatorAssertion) Count() (want int, exact bool, err error) {
	if a.Violations == nil {
		return 1, false, nil
	}
	raw := strings.TrimSpace(string(*a.Violations))
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		s = raw
	}
	// yes and no read as YAML 1.1 booleans here; gator reads YAML 1.2,
	// where they are the strings.
	switch s {
	case "yes", "true":
		return 1, false, nil
	case "no", "false":
		return 0, false, nil
	}
	var n int
	if err := json.Unmarshal([]byte(raw), &n); err != nil || n < 0 {
		return 0, false, fmt.Errorf("violations must be yes, no or a count, not %s", raw)
	}
	return n, true, nil
}

// LoadGator reads and validates a Gatekeeper suite.
func LoadGator(path string) (*GatorSuite, error) {
	data, err := source.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var s GatorSuite
	if err := strictYAML(data, &s); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	s.Path, s.Dir = path, filepath.Dir(path)
	if s.APIVersion != GatorAPIVersion || s.Kind != GatorKind {
		return nil, fmt.Errorf("%w: %s: want apiVersion %s and kind %s", ErrInvalid, path, GatorAPIVersion, GatorKind)
	}
	for i := range s.Tests {
		t := &s.Tests[i]
		f := fmt.Sprintf("tests[%d]", i)
		if t.Template == "" || t.Constraint == "" && !t.Invalid {
			return nil, fmt.Errorf("%w: %s: %s: template and constraint are required", ErrInvalid, path, f)
		}
		for j := range t.Cases {
			c := &t.Cases[j]
			cf := fmt.Sprintf("%s.cases[%d]", f, j)
			if c.Object == "" {
				return nil, fmt.Errorf("%w: %s: %s.object is required", ErrInvalid, path, cf)
			}
			if len(c.Assertions) == 0 && !c.Skip {
				return nil, fmt.Errorf("%w: %s: %s.assertions: a case asserts at least once", ErrInvalid, path, cf)
			}
			for k := range c.Assertions {
				a := &c.Assertions[k]
				if _, _, err := a.Count(); err != nil {
					return nil, fmt.Errorf("%w: %s: %s.assertions[%d]: %v", ErrInvalid, path, cf, k, err)
				}
				if a.Message != nil {
					if a.re, err = regexp.Compile(*a.Message); err != nil {
						return nil, fmt.Errorf("%w: %s: %s.assertions[%d].message: %v", ErrInvalid, path, cf, k, err)
					}
				}
			}
		}
	}
	return &s, nil
}

// Resolve is p relative to the suite's directory.
func (s *GatorSuite) Resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}
