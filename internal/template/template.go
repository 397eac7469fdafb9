package template

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	sprig "github.com/Masterminds/sprig/v3"
)

// ErrTemplate marks template compile and execution errors.
var ErrTemplate = errors.New("template error")

// Blocked lists the Sprig functions that are removed, with the reason.
var Blocked = map[string]string{
	"env":                      "reads the process environment",
	"expandenv":                "reads the process environment",
	"getHostByName":            "performs a DNS lookup",
	"set":                      "mutates its argument (the object under admission)",
	"unset":                    "mutates its argument (the object under admission)",
	"merge":                    "mutates its first argument",
	"mergeOverwrite":           "mutates its first argument",
	"mustMerge":                "mutates its first argument",
	"mustMergeOverwrite":       "mutates its first argument",
	"genPrivateKey":            "key generation is too slow for admission",
	"genCA":                    "key generation is too slow for admission",
	"genCAWithKey":             "key generation is too slow for admission",
	"genSelfSignedCert":        "key generation is too slow for admission",
	"genSelfSignedCertWithKey": "key generation is too slow for admission",
	"genSignedCert":            "key generation is too slow for admission",
	"genSignedCertWithKey":     "key generation is too slow for admission",
	"derivePassword":           "deliberately slow key derivation",
	"htpasswd":                 "deliberately slow bcrypt hashing",
	"bcrypt":                   "deliberately slow bcrypt hashing",
}

// funcs is built once; template.FuncMap values are only read.
var funcs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for name := range Blocked {
		delete(m, name)
	}
	return m
}()

// placeholder matches KubeMod's `.#N` shorthand for `(index .SelectKeyParts N)`.
var placeholder = regexp.MustCompile(`\.#(\d+)`)

// Data is what patch value and reject message templates see.
type Data struct {
	// Target is the object (with syntheticRefs, without managedFields).
	Target any
	// Namespace is the object's namespace.
	Namespace string
	// SelectedItem is the item a patch operation's select yielded.
	SelectedItem any
	// SelectKeyParts are the keys its select captured; `.#N` is shorthand
	// for `(index .SelectKeyParts N)`.
	SelectKeyParts []any
}

// Template is a compiled template. It is immutable and safe for concurrent use.
type Template struct {
	name   string
	text   string
	static bool
	t      *template.Template
	// fast, when set, renders the template without reflection: it holds
	// only text and plain field references (see fastpath.go).
	fast []fastPart
}

// Compile parses text as a Go template named name (use the field path, for
// example "spec.patch[0].value", so errors point at the field). A text with no
// "{{" is static: Execute returns it unchanged without running anything.
func Compile(name, text string) (*Template, error) {
	t := &Template{name: name, text: text}
	if !strings.Contains(text, "{{") {
		t.static = true
		return t, nil
	}
	src := text
	if strings.Contains(text, ".#") {
		src = placeholder.ReplaceAllString(text, "(index .SelectKeyParts $1)")
	}
	// Give the template only the functions it calls: text/template copies
	// (and reflects over) every function it is given, which made compiling
	// a rule cost ~100 µs with Sprig's ~170 functions.
	parsed, err := parseTemplate(name, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrTemplate, blockedHint(err.Error()))
	}
	t.t = parsed
	t.fast = compileFast(parsed)
	return t, nil
}

// blockedHint explains a "function not defined" error for a blocked function.
func blockedHint(msg string) string {
	for name, why := range Blocked {
		if strings.Contains(msg, `function "`+name+`" not defined`) {
			return msg + " (" + name + " is disabled in modwright: " + why + ")"
		}
	}
	return msg
}

// Static reports whether the template has no actions.
func (t *Template) Static() bool { return t.static }

// Text returns the template source as written.
func (t *Template) Text() string { return t.text }

// Execute renders the template with data.
func (t *Template) Execute(data *Data) (string, error) {
	if t.static {
		return t.text, nil
	}
	if t.fast != nil {
		if s, ok := executeFast(t.fast, data); ok {
			return s, nil
		}
	}
	var buf bytes.Buffer
	buf.Grow(len(t.text) + 32)
	if err := t.t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("%w: %s", ErrTemplate, err.Error())
	}
	return buf.String(), nil
}

// builtins are text/template's predefined functions, for parse.Parse's
// name check.
var builtins = map[string]any{
	"and": true, "or": true, "not": true, "len": true, "index": true, "slice": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true,
	"urlquery": true, "call": true, "eq": true, "ne": true, "lt": true, "le": true,
	"gt": true, "ge": true,
}

// parseTemplate parses src once, then builds the template from the parse
// trees with only the functions they call. When src does not parse, the
// usual text/template parse reports the error.
func parseTemplate(name, src string) (*template.Template, error) {
	t := template.New(name).Option("missingkey=default")
	trees, err := parse.Parse(name, src, "", "", funcs, builtins)
	if err != nil {
		return t.Funcs(funcs).Parse(src)
	}
	used := template.FuncMap{}
	for _, tree := range trees {
		collectFuncs(tree.Root, used)
	}
	t.Funcs(used)
	for n, tree := range trees {
		if _, err := t.AddParseTree(n, tree); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func collectFuncs(n parse.Node, used template.FuncMap) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				collectFuncs(c, used)
			}
		}
	case *parse.ActionNode:
		collectFuncs(n.Pipe, used)
	case *parse.PipeNode:
		if n != nil {
			for _, c := range n.Cmds {
				collectFuncs(c, used)
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			collectFuncs(a, used)
		}
	case *parse.ChainNode:
		collectFuncs(n.Node, used)
	case *parse.IdentifierNode:
		if f, ok := funcs[n.Ident]; ok {
			used[n.Ident] = f
		}
	case *parse.IfNode:
		collectBranch(&n.BranchNode, used)
	case *parse.RangeNode:
		collectBranch(&n.BranchNode, used)
	case *parse.WithNode:
		collectBranch(&n.BranchNode, used)
	case *parse.TemplateNode:
		collectFuncs(n.Pipe, used)
	}
}

func collectBranch(b *parse.BranchNode, used template.FuncMap) {
	collectFuncs(b.Pipe, used)
	collectFuncs(b.List, used)
	collectFuncs(b.ElseList, used)
}
