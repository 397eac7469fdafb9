package template

import (
	"encoding/json"
	"text/template/parse"
)

// The fast path renders the most common templates, text with plain field
// references such as "{{ .Target.metadata.name }}-sidecar", by walking the
// JSON tree directly instead of through text/template's reflection. It
// produces exactly what text/template would, and gives up (the caller then
// runs text/template) on anything it does not handle identically: missing
// members, values that are not strings, numbers or booleans, output longer
// than MaxOutput.
type fastPart struct {
	text  string   // literal text, when field is nil
	field []string // a field chain such as [Target metadata name]
}

func compileFast(t *parse.Tree) []fastPart {
	if t == nil || t.Root == nil {
		return nil
	}
	var parts []fastPart
	for _, n := range t.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			parts = append(parts, fastPart{text: string(n.Text)})
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || len(p.Decl) > 0 || p.IsAssign || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil
			}
			f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) == 0 {
				return nil
			}
			switch f.Ident[0] {
			case "Target", "SelectedItem":
			case "Namespace":
				if len(f.Ident) != 1 {
					return nil
				}
			default:
				return nil
			}
			parts = append(parts, fastPart{field: f.Ident})
		default:
			return nil
		}
	}
	return parts
}

func executeFast(parts []fastPart, d *Data) (string, bool) {
	// The text is made on the stack when short, and the string of it once
	// at its length (a Builder grows by steps).
	var buf [128]byte
	b := buf[:0]
	for _, p := range parts {
		if p.field == nil {
			b = append(b, p.text...)
			continue
		}
		var v any
		switch p.field[0] {
		case "Namespace":
			b = append(b, d.Namespace...)
			continue
		case "Target":
			v = d.Target
		case "SelectedItem":
			v = d.SelectedItem
		}
		for _, k := range p.field[1:] {
			m, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			if v, ok = m[k]; !ok {
				return "", false
			}
		}
		switch t := v.(type) {
		case string:
			b = append(b, t...)
		case json.Number:
			b = append(b, t...)
		case bool:
			if t {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
		default:
			return "", false
		}
		if len(b) > MaxOutput {
			return "", false // text/template reports the limit
		}
	}
	return string(b), true
}
