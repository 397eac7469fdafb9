package source

import (
	"encoding/json"
	"strings"
)

// decodeBlockYAML decodes a document written in the plain block subset of
// YAML that manifests are nearly always written in, without going through
// sigs.k8s.io/yaml (YAML to a generic tree, to JSON text, to our tree: most
// of the time it took to load thousands of rules). ok is false for
// anything outside the subset, which decodeChunk then gives to
// sigs.k8s.io/yaml; inside it, the tree is the one value.Decode makes of
// sigs.k8s.io/yaml's JSON (TestBlockYAML over every manifest of the
// repository and the peers' suites, FuzzBlockYAML).
//
// The subset: a document that is a block mapping, of printable ASCII text
// (no tabs, no carriage returns); block mappings whose keys are plain
// words (letters, digits, '_', '.', '/', '-', starting with a letter, '_'
// or '/'; not one of YAML 1.1's booleans or null), each once; block
// sequences (the dash at its parent key's indentation or deeper, a mapping
// started on the dash's line); values that are single-quoted scalars,
// double-quoted ones (with the escapes of one ASCII character), literal
// block scalars (| and |-, not starting with a blank line), plain scalars
// on one line that are words (starting with a letter, '/', '$', '_', '^'
// or '('; not YAML 1.1's y/n/yes/no/on/off), true, false, null, ~ or
// decimal integers of up to 18 digits, and flow sequences and mappings of
// such values on one line (nested up to maxFlowDepth); full-line
// comments, and comments after a value. Anchors, aliases, tags,
// directives, document markers, folded and indented block scalars,
// multi-line plain, quoted and flow scalars, other escapes and other
// numbers are not in it.
func decodeBlockYAML(text []byte) (v any, ok bool) {
	for _, c := range text {
		if c >= 0x7f || c < 0x20 && c != '\n' {
			return nil, false
		}
	}
	p := blockParser{lines: strings.Split(string(text), "\n")}
	ind, c, ok := p.peek()
	if !ok || isDash(c) {
		return nil, false
	}
	m, ok := p.mapping(ind, "", 0)
	if !ok {
		return nil, false
	}
	if _, _, more := p.peek(); more {
		return nil, false
	}
	return m, true
}

type blockParser struct {
	lines []string
	i     int // the next line
}

// peek returns the next line with content (not blank, not a comment): its
// indentation and its content; ok is false at the end. A document marker
// or a directive ends the subset: reported as content nothing accepts.
func (p *blockParser) peek() (indent int, content string, ok bool) {
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		c := strings.TrimLeft(l, " ")
		if c == "" || c[0] == '#' {
			continue
		}
		return len(l) - len(c), c, true
	}
	return 0, "", false
}

func isDash(c string) bool { return c == "-" || strings.HasPrefix(c, "- ") }

// maxBlockDepth bounds the nesting of block collections the subset takes.
const maxBlockDepth = 256

// node parses the block that starts on the next content line, at indent,
// nested depth deep.
func (p *blockParser) node(indent, depth int) (any, bool) {
	if depth > maxBlockDepth {
		return nil, false
	}
	_, c, _ := p.peek()
	if isDash(c) {
		return p.sequence(indent, depth)
	}
	return p.mapping(indent, "", depth)
}

// mapping parses a block mapping at indent, depth deep; first, when not
// empty, is its first entry's text (a mapping started on a sequence's
// dash line).
func (p *blockParser) mapping(indent int, first string, depth int) (map[string]any, bool) {
	m := map[string]any{}
	for {
		c := first
		if c != "" {
			first = ""
		} else {
			ind, next, ok := p.peek()
			if !ok || ind < indent || ind == indent && isDash(next) {
				return m, true
			}
			if ind > indent {
				return nil, false
			}
			c = next
			p.i++
		}
		key, rest, ok := splitKey(c)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		v, ok := p.value(rest, indent, true, depth)
		if !ok {
			return nil, false
		}
		m[key] = v
	}
}

// sequence parses a block sequence whose dashes are at indent, depth deep.
func (p *blockParser) sequence(indent, depth int) ([]any, bool) {
	var s []any
	for {
		ind, c, ok := p.peek()
		if !ok || ind < indent || ind == indent && !isDash(c) {
			return s, true
		}
		if ind > indent {
			return nil, false
		}
		p.i++
		rest := strings.TrimLeft(c[1:], " ")
		var v any
		if keyLen(rest) > 0 {
			// A mapping started on the dash's line, at its first key's
			// column.
			v, ok = p.mapping(indent+len(c)-len(rest), rest, depth+1)
		} else {
			v, ok = p.value(rest, indent, false, depth)
		}
		if !ok {
			return nil, false
		}
		s = append(s, v)
	}
}

// value parses what follows a key (inMapping) or a dash at indent, depth
// deep: rest of the line, or the block on the next lines.
func (p *blockParser) value(rest string, indent int, inMapping bool, depth int) (any, bool) {
	if rest == "" || rest[0] == '#' {
		ind, c, ok := p.peek()
		switch {
		case ok && ind > indent:
			return p.node(ind, depth+1)
		case ok && ind == indent && inMapping && isDash(c):
			return p.sequence(ind, depth+1)
		}
		return nil, true
	}
	if rest[0] == '|' {
		return p.literal(rest, indent)
	}
	return scalar(rest)
}

// literal parses a literal block scalar (| or |-) whose parent is at
// indent.
func (p *blockParser) literal(header string, indent int) (any, bool) {
	strip := false
	h := header[1:]
	if strings.HasPrefix(h, "-") {
		strip, h = true, h[1:]
	}
	if t := strings.TrimLeft(h, " "); t != "" && (t[0] != '#' || len(t) == len(h)) {
		return nil, false // another indicator, or a comment not after a space
	}
	var b strings.Builder
	content, blanks := -1, 0
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		c := strings.TrimLeft(l, " ")
		ind := len(l) - len(c)
		if c == "" {
			if content >= 0 && ind > content {
				return nil, false // spaces beyond the indentation: not in the subset
			}
			blanks++
			continue
		}
		if content < 0 {
			if ind <= indent || blanks > 0 {
				return nil, false // empty, or leading blank lines: not in the subset
			}
			content = ind
		}
		if ind < content {
			break
		}
		for ; blanks > 0; blanks-- {
			b.WriteByte('\n')
		}
		b.WriteString(l[content:])
		if p.i < len(p.lines)-1 { // the text's last line has no line break
			b.WriteByte('\n')
		}
	}
	if content < 0 {
		return nil, false
	}
	s := b.String()
	if strip {
		s = strings.TrimSuffix(s, "\n")
	}
	return s, true
}

// splitKey splits "key: rest" (or "key:") into a plain key and the rest,
// its leading spaces trimmed.
func splitKey(c string) (key, rest string, ok bool) {
	i := keyLen(c)
	if i == 0 {
		return "", "", false
	}
	// A copy: the document's text is not kept alive by what a rule keeps.
	return strings.Clone(c[:i]), strings.TrimLeft(c[i+1:], " "), true
}

// maxKey is the longest key the subset takes (YAML refuses a simple key
// of over 1024 characters).
const maxKey = 1000

// keyLen is the length of the plain key c starts with ("key: rest" or
// "key:"), or 0.
func keyLen(c string) int {
	i := 0
	for i < len(c) && isKeyByte(c[i]) {
		i++
	}
	// YAML bounds a simple key at 1024 characters.
	if i == 0 || i > maxKey || i == len(c) || c[i] != ':' || i+1 < len(c) && c[i+1] != ' ' {
		return 0
	}
	if f := c[0]; !(isLetter(f) || f == '_' || f == '/') || yaml11Word(c[:i]) {
		return 0
	}
	return i
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isKeyByte(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'
}

// yaml11Word reports whether a plain word is one YAML 1.1 (and so
// sigs.k8s.io/yaml) reads as a boolean or null.
func yaml11Word(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~":
		return true
	}
	return false
}

// scalar parses a scalar written on one line (rest of it, not empty), or
// a flow collection of scalars.
func scalar(rest string) (any, bool) {
	switch rest[0] {
	case '\'', '"':
		v, n, ok := quoted(rest)
		return v, ok && endOfValue(rest[n:])
	case '[', '{':
		return flow(rest)
	}
	plain := rest
	if i := strings.Index(plain, " #"); i >= 0 {
		plain = plain[:i]
	}
	plain = strings.TrimRight(plain, " ")
	if strings.Contains(plain, ": ") || strings.HasSuffix(plain, ":") {
		return nil, false
	}
	return resolvePlain(plain)
}

// quoted parses the single- or double-quoted scalar s starts with: its
// value and length. Of a double-quoted one's escapes, those of one ASCII
// character (\\ \" \' \0 \a \b \t \n \v \f \r \e and an escaped space)
// are in the subset.
func quoted(s string) (string, int, bool) {
	if s[0] == '"' {
		i := strings.IndexAny(s[1:], "\"\\")
		if i < 0 {
			return "", 0, false
		}
		if s[1+i] == '"' {
			return strings.Clone(s[1 : 1+i]), i + 2, true
		}
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; c {
			case '"':
				return b.String(), i + 1, true
			case '\\':
				if i++; i == len(s) {
					return "", 0, false
				}
				e, ok := yamlEscapes[s[i]]
				if !ok {
					return "", 0, false
				}
				b.WriteByte(e)
			default:
				b.WriteByte(c)
			}
		}
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

// yamlEscapes are the double-quoted escapes of the subset, by the
// character after the backslash.
var yamlEscapes = map[byte]byte{'\\': '\\', '"': '"', '\'': '\'', '0': 0, 'a': 7, 'b': 8, 't': 9,
	'n': 10, 'v': 11, 'f': 12, 'r': 13, 'e': 27, ' ': ' '}

// resolvePlain is the value of a plain scalar, as YAML 1.1 resolves it,
// when the subset has it.
func resolvePlain(plain string) (any, bool) {
	switch plain {
	case "":
		return nil, false
	case "true", "True", "TRUE":
		return true, true
	case "false", "False", "FALSE":
		return false, true
	case "null", "Null", "NULL", "~":
		return nil, true
	}
	if yaml11Word(plain) {
		return nil, false
	}
	switch f := plain[0]; {
	case isLetter(f) || f == '/' || f == '$' || f == '_' || f == '^' || f == '(':
		return strings.Clone(plain), true
	case decimal(plain):
		return json.Number(strings.Clone(plain)), true
	}
	return nil, false
}

// flow parses a flow sequence ([a, 'b']) or mapping ({k: v}) written on
// one line, s, collections nested in it too; empty entries and a comma
// before the end are not in the subset.
func flow(s string) (any, bool) {
	v, n, ok := flowNode(s, 0, 0)
	return v, ok && endOfValue(s[n:])
}

// maxFlowDepth bounds the nesting of flow collections the subset takes.
const maxFlowDepth = 32

// flowNode parses the collection at s[i:] (s[i] is '[' or '{'), nested
// depth deep: its value and where it ends.
func flowNode(s string, i, depth int) (any, int, bool) {
	if depth > maxFlowDepth {
		return nil, 0, false
	}
	end := byte(']')
	var seq []any
	var m map[string]any
	if s[i] == '{' {
		end, m = '}', map[string]any{}
	} else {
		seq = []any{}
	}
	result := func() any {
		if m != nil {
			return m
		}
		return seq
	}
	if i = skipSpaces(s, i+1); i < len(s) && s[i] == end {
		return result(), i + 1, true
	}
	for {
		var key string
		if m != nil {
			n := keyLen(s[i:])
			if n == 0 || i+n+1 >= len(s) || s[i+n+1] != ' ' {
				return nil, 0, false
			}
			key = strings.Clone(s[i : i+n])
			if _, dup := m[key]; dup {
				return nil, 0, false
			}
			i = skipSpaces(s, i+n+1)
		}
		v, j, ok := flowValue(s, i, end, depth)
		if !ok {
			return nil, 0, false
		}
		if m != nil {
			m[key] = v
		} else {
			seq = append(seq, v)
		}
		if i = skipSpaces(s, j); i >= len(s) {
			return nil, 0, false
		}
		switch s[i] {
		case ',':
			if i = skipSpaces(s, i+1); i >= len(s) || s[i] == end {
				return nil, 0, false
			}
		case end:
			return result(), i + 1, true
		default:
			return nil, 0, false
		}
	}
}

// flowValue parses the value at s[i:] in a flow collection closed by end:
// its value and where it ends. A plain scalar holds no '#', '[', '{', '?',
// and no ':' before a space, a flow indicator or the end.
func flowValue(s string, i int, end byte, depth int) (any, int, bool) {
	if i >= len(s) {
		return nil, 0, false
	}
	switch s[i] {
	case '\'', '"':
		v, n, ok := quoted(s[i:])
		return v, i + n, ok
	case '[', '{':
		return flowNode(s, i, depth+1)
	}
	j := i
	for ; j < len(s) && s[j] != ',' && s[j] != ']' && s[j] != '}'; j++ {
		switch s[j] {
		case '#', '[', '{', '?': // '?' ends a plain scalar in a flow collection (YAML 1.1)
			return nil, 0, false
		case ':':
			if j+1 == len(s) || strings.IndexByte(" ,]}", s[j+1]) >= 0 {
				return nil, 0, false
			}
		}
	}
	if j < len(s) && s[j] != ',' && s[j] != end {
		return nil, 0, false // the other collection's end
	}
	v, ok := resolvePlain(strings.TrimRight(s[i:j], " "))
	return v, j, ok
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// endOfValue reports whether what follows a quoted scalar ends the value:
// spaces, then nothing or a comment.
func endOfValue(s string) bool {
	t := strings.TrimLeft(s, " ")
	return t == "" || t[0] == '#' && len(t) < len(s)
}

// decimal reports whether s is a decimal integer YAML 1.1 and JSON write
// alike: 0, or up to 18 digits not starting with 0, maybe negative.
func decimal(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 18 || d[0] == '0' && (len(d) > 1 || len(d) < len(s)) {
		return false
	}
	for i := range len(d) {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}
