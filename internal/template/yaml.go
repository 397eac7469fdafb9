package template

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/value"
)

// ParseValue turns rendered value text into a JSON tree exactly as kubectl
// (sigs.k8s.io/yaml) parses YAML: '8080' is a number, '"8080"' a string,
// 'false' a boolean, an empty text null. Numbers become json.Number.
//
// Short plain words and integers, the common case on the admission path, are
// recognised without running the YAML parser; FuzzParseValue checks that this
// shortcut always agrees with sigs.k8s.io/yaml.
//
// A value nested deeper than MaxValueDepth, or a text with more than
// MaxValueItems separators, brackets and lines, is refused with an error
// carrying ErrLimit. The parse itself is bounded: the text is at most
// MaxOutput bytes when rendered, its items are counted first, and the YAML
// parser refuses more than 10,000 levels and excessive aliasing.
func ParseValue(text string) (any, error) {
	if v, ok := fastScalar(text); ok {
		return v, nil
	}
	// Parsing takes about a microsecond per list item or map entry: bound
	// their number before parsing, counting every separator, bracket and
	// line (quoted text included, so the count is never below the items).
	if n := strings.Count(text, ",") + strings.Count(text, "\n") + strings.Count(text, "[") + strings.Count(text, "{"); n > MaxValueItems {
		return nil, fmt.Errorf("invalid value: %w", exceeded(fmt.Sprintf("%d separators, brackets and lines", n), "MaxValueItems", MaxValueItems))
	}
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		if flowDepth(text) > MaxValueDepth {
			return nil, fmt.Errorf("invalid value: %w", exceeded("nesting", "MaxValueDepth", MaxValueDepth))
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	v, err := value.Decode(j)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if tooDeep(v, MaxValueDepth) {
		return nil, fmt.Errorf("invalid value: %w", exceeded("nesting", "MaxValueDepth", MaxValueDepth))
	}
	return v, nil
}

// tooDeep reports whether v nests lists and maps more than max levels.
func tooDeep(v any, max int) bool {
	switch t := v.(type) {
	case map[string]any:
		if max == 0 {
			return true
		}
		for _, e := range t {
			if tooDeep(e, max-1) {
				return true
			}
		}
	case []any:
		if max == 0 {
			return true
		}
		for _, e := range t {
			if tooDeep(e, max-1) {
				return true
			}
		}
	}
	return false
}

// flowDepth is the deepest nesting of YAML flow brackets in text outside
// quotes: it tells a value refused for its depth from other invalid YAML.
func flowDepth(text string) int {
	depth, deepest := 0, 0
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			if depth++; depth > deepest {
				deepest = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// fastScalar recognises texts whose YAML meaning is obvious: a decimal
// integer without sign or leading zero, or a plain word of letters, digits and
// a few safe punctuation marks that YAML 1.1 cannot read as anything but a
// string.
func fastScalar(s string) (any, bool) {
	if s == "" || len(s) > 64 {
		return nil, false
	}
	if isPlainInt(s) {
		return json.Number(s), true
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return nil, false
	}
	letters := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9', c == '_', c == '/', c == '.':
			letters = false
		case c == '-':
			letters = false
		default:
			return nil, false
		}
	}
	// Words that YAML 1.1 resolves to booleans, null or special floats
	// consist of letters only; leave every letters-only word of that length
	// to the real parser.
	if letters && len(s) <= 5 {
		return nil, false
	}
	if letters && isYAMLKeyword(s) {
		return nil, false
	}
	return s, true
}

func isPlainInt(s string) bool {
	if len(s) > 18 {
		return false
	}
	if s == "0" {
		return true
	}
	if s[0] < '1' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isYAMLKeyword(s string) bool {
	switch s {
	case "false", "False", "FALSE", "true", "True", "TRUE", "null", "Null", "NULL":
		return true
	}
	return false
}
