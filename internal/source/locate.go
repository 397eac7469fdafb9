package source

import (
	"bytes"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// Locate is where field (a path such as spec.match[2].select; "" for the
// document) of document d is in its file, at byte pos of the field's text
// (-1: where the field starts): a 1-based line and column. A field that is
// not in the text (a missing one) is located at its nearest ancestor that
// is. ok is false when d carries no text (it was not read from a file).
// It parses d's text: to locate many fields, use a Locator.
func Locate(d *Document, field string, pos int) (line, col int, ok bool) {
	return (&Locator{}).Locate(d, field, pos)
}

// Locator locates fields as Locate does, parsing each document's text once
// (the items of a List share their List's text: without it, an error in
// each of n items parses the whole List n times). Its zero value is ready;
// it is not safe for concurrent use.
type Locator struct {
	roots map[textKey]*yamlv3.Node // nil: unparsable
}

// textKey is a document's text by identity: where it starts, its length.
type textKey struct {
	start *byte
	n     int
}

// Locate is Locate with d's parsed text remembered.
func (l *Locator) Locate(d *Document, field string, pos int) (line, col int, ok bool) {
	if len(d.Text) == 0 || d.Line <= 0 {
		return 0, 0, false
	}
	key := textKey{&d.Text[0], len(d.Text)}
	root, seen := l.roots[key]
	if !seen {
		var r yamlv3.Node
		if err := yamlv3.Unmarshal(d.Text, &r); err == nil && len(r.Content) > 0 {
			root = &r
		}
		if l.roots == nil {
			l.roots = map[textKey]*yamlv3.Node{}
		}
		l.roots[key] = root
	}
	if root == nil {
		return d.Line, 1, true
	}
	n, at := root.Content[0], root.Content[0]
	for _, seg := range fieldPath(d.FieldPrefix + field) {
		key, next := child(n, seg)
		if next == nil {
			break
		}
		n, at = next, next
		if key != nil && next.Kind != yamlv3.ScalarNode {
			at = key // a mapping or list: where its key is
		}
	}
	line, col = at.Line, at.Column
	if pos >= 0 && n.Kind == yamlv3.ScalarNode {
		line, col = inScalar(d.Text, n, pos)
	}
	return d.Line + line - 1, col, true
}

// fieldPath splits spec.match[2].select into spec, match, [2], select.
func fieldPath(field string) []string {
	var out []string
	for _, part := range strings.Split(field, ".") {
		for part != "" {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				out = append(out, part)
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				break
			}
			out = append(out, part[i:i+j+1])
			part = part[i+j+1:]
		}
	}
	return out
}

// child is the value of key seg in a mapping (with the key's node), or
// item [i] of a sequence.
func child(n *yamlv3.Node, seg string) (key, value *yamlv3.Node) {
	if n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	if strings.HasPrefix(seg, "[") {
		i, err := strconv.Atoi(strings.Trim(seg, "[]"))
		if err != nil || n.Kind != yamlv3.SequenceNode || i < 0 || i >= len(n.Content) {
			return nil, nil
		}
		return nil, n.Content[i]
	}
	if n.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == seg {
			return n.Content[k], n.Content[k+1]
		}
	}
	return nil, nil
}

// inScalar is the line and column (within the document) of byte pos of
// scalar n's value: after the opening quote of a quoted one, on the lines
// after the indicator of a block one (| or >). A multi-line flow scalar is
// located at its start.
func inScalar(text []byte, n *yamlv3.Node, pos int) (line, col int) {
	if pos > len(n.Value) {
		pos = len(n.Value)
	}
	switch n.Style {
	case yamlv3.LiteralStyle, yamlv3.FoldedStyle:
		before := n.Value[:pos]
		nl := strings.Count(before, "\n")
		lines := bytes.Split(text, []byte("\n"))
		indent := 0
		if n.Line < len(lines) { // the first line of the block's text
			first := lines[n.Line]
			indent = len(first) - len(bytes.TrimLeft(first, " "))
		}
		return n.Line + 1 + nl, indent + 1 + pos - (strings.LastIndexByte(before, '\n') + 1)
	case yamlv3.DoubleQuotedStyle, yamlv3.SingleQuotedStyle:
		if !strings.Contains(n.Value, "\n") {
			return n.Line, n.Column + 1 + pos
		}
	case 0, yamlv3.FlowStyle:
		if !strings.Contains(n.Value, "\n") {
			return n.Line, n.Column + pos
		}
	}
	return n.Line, n.Column
}
