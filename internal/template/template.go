package template

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// funcs is built once; template.FuncMap values are only read. Besides
// Sprig it holds text/template's printing builtins, which a metered
// instance replaces with the same functions under its budget.
var funcs = func() template.FuncMap {
	m := sprig.TxtFuncMap()
	for name := range Blocked {
		delete(m, name)
	}
	m["print"] = fmt.Sprint
	m["printf"] = fmt.Sprintf
	m["println"] = fmt.Sprintln
	m["html"] = template.HTMLEscaper
	m["js"] = template.JSEscaper
	m["urlquery"] = template.URLQueryEscaper
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
	// trees are the parsed templates, instrumented for metering (see
	// instrument); used names the functions they call.
	trees map[string]*parse.Tree
	used  []string
	loops []int // the body sizes the trees' loop counters charge
	nodes int   // the size of the main tree
	// pool holds instances: the trees bound to functions that charge their
	// own meter. Building one costs a few microseconds; executions reuse them.
	pool *sync.Pool
	// fast, when set, renders the template without reflection: it holds
	// only text and plain field references (see fastpath.go).
	fast []fastPart
}

// instance is a Template ready to run under its own meter.
type instance struct {
	t *template.Template
	m *meter
}

// Compile parses text as a Go template named name (use the field path, for
// example "spec.patch[0].value", so errors point at the field). A text with no
// "{{" is static: Execute returns it unchanged without running anything.
// A template nesting range deeper than MaxRangeDepth does not compile (an
// error with ErrLimit and ErrTemplate).
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
	trees, err := parse.Parse(name, src, "", "", funcs, builtins)
	if err != nil {
		// The usual text/template parse reports the error.
		_, err = template.New(name).Funcs(funcs).Parse(src)
		if err == nil {
			err = fmt.Errorf("template: %s: does not parse", name)
		}
		return nil, fmt.Errorf("%w: %s", ErrTemplate, blockedHint(err.Error()))
	}
	main := trees[name]
	if main != nil {
		t.fast = compileFast(main)
	}
	for _, tree := range trees {
		if err := checkRangeDepth(tree, tree.Root, 0); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
		}
		if err := checkMethodCalls(tree, tree.Root); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
		}
	}
	// Give the template only the functions it calls: text/template copies
	// (and reflects over) every function it is given, which made compiling
	// a rule cost ~100 µs with Sprig's ~170 functions.
	used := template.FuncMap{}
	for _, tree := range trees {
		collectFuncs(tree.Root, used)
	}
	for n := range used {
		t.used = append(t.used, n)
	}
	sort.Strings(t.used)
	loops := map[int]bool{}
	for n, tree := range trees {
		instrument(tree, tree.Root, loops)
		if n != name && tree.Root != nil {
			// A defined template counts as a step each time it runs.
			w := countNodes(tree.Root)
			tree.Root.Nodes = append([]parse.Node{loopNode(tree, tree.Root.Pos, w)}, tree.Root.Nodes...)
			loops[w] = true
		}
	}
	for w := range loops {
		t.loops = append(t.loops, w)
	}
	if main != nil {
		t.nodes = countNodes(main.Root)
	}
	t.trees = trees
	// The first execution that needs text/template builds an instance
	// (newInstance): most never do (the fast path), and building one for
	// each of 10,000 rules' templates was a tenth of what loading them
	// allocated. Assembling one cannot fail: Parse checked the trees and
	// their functions, and AddParseTree returns no error.
	t.pool = &sync.Pool{}
	return t, nil
}

// newInstance binds the trees to functions metered by a new meter.
func (t *Template) newInstance() (*instance, error) {
	m := &meter{}
	fm := m.comparisonFuncs()
	fm[rangeFunc] = m.rangeOver
	for _, name := range t.used {
		fm[name] = m.wrap(name, funcs[name], hooks[name])
	}
	for _, w := range t.loops {
		fm[loopFunc(w)] = func() (string, error) { return "", m.step(w) }
	}
	tt := template.New(t.name).Option("missingkey=default").Funcs(fm)
	for n, tree := range t.trees {
		if _, err := tt.AddParseTree(n, tree); err != nil {
			return nil, err
		}
	}
	return &instance{t: tt, m: m}, nil
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

// Execute renders the template with data, within the bounds in limits.go:
// a template that exceeds one stops with an error carrying ErrLimit (and
// ErrTemplate) that names the limit and its value.
func (t *Template) Execute(data *Data) (string, error) {
	if t.static {
		return t.text, nil
	}
	if t.fast != nil {
		if s, ok := executeFast(t.fast, data); ok {
			return s, nil
		}
	}
	in, _ := t.pool.Get().(*instance)
	if in == nil {
		var err error
		if in, err = t.newInstance(); err != nil {
			return "", fmt.Errorf("%w: %s", ErrTemplate, err.Error())
		}
	}
	defer t.pool.Put(in)
	in.m.reset()
	in.m.work = int64(t.nodes) * nodeCost
	if err := in.t.Execute(in.m, data); err != nil {
		if errors.As(err, new(template.ExecError)) {
			return "", fmt.Errorf("%w: %w", ErrTemplate, err)
		}
		// A write error (the output limit) comes without the template's name.
		return "", fmt.Errorf("%w: template: %s: %w", ErrTemplate, t.name, err)
	}
	return string(in.m.out), nil
}

// builtins are text/template's predefined functions, for parse.Parse's
// name check.
var builtins = map[string]any{
	"and": true, "or": true, "not": true, "len": true, "index": true, "slice": true,
	"print": true, "printf": true, "println": true, "html": true, "js": true,
	"urlquery": true, "call": true, "eq": true, "ne": true, "lt": true, "le": true,
	"gt": true, "ge": true,
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

// The functions the instrumentation calls. Their names cannot be written in
// a template: parsing rejects functions it does not know.
const rangeFunc = "__range"

func loopFunc(nodes int) string { return "__loop_" + strconv.Itoa(nodes) }

// loopNode is an action calling the loop counter for a body of the given
// size; it prints nothing.
func loopNode(tree *parse.Tree, pos parse.Pos, nodes int) parse.Node {
	id := parse.NewIdentifier(loopFunc(nodes)).SetTree(tree).SetPos(pos)
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: &parse.PipeNode{
		NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{id}}},
	}}
}

// instrument makes every range charge its meter: the ranged value passes
// through rangeFunc, and each iteration starts with a loop counter charging
// the size of the body.
func instrument(tree *parse.Tree, n parse.Node, loops map[int]bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				instrument(tree, c, loops)
			}
		}
	case *parse.IfNode:
		instrument(tree, n.List, loops)
		instrument(tree, n.ElseList, loops)
	case *parse.WithNode:
		instrument(tree, n.List, loops)
		instrument(tree, n.ElseList, loops)
	case *parse.RangeNode:
		instrument(tree, n.List, loops)
		instrument(tree, n.ElseList, loops)
		w := countNodes(n.List)
		id := parse.NewIdentifier(rangeFunc).SetTree(tree).SetPos(n.Pos)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
		n.List.Nodes = append([]parse.Node{loopNode(tree, n.Pos, w)}, n.List.Nodes...)
		loops[w] = true
	}
}

// countNodes is the size of a subtree: its nodes, at least 1.
func countNodes(n parse.Node) int {
	c := 1
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, x := range n.Nodes {
				c += countNodes(x)
			}
		}
	case *parse.ActionNode:
		c += countNodes(n.Pipe)
	case *parse.PipeNode:
		if n != nil {
			for _, x := range n.Cmds {
				c += countNodes(x)
			}
		}
	case *parse.CommandNode:
		for _, x := range n.Args {
			c += countNodes(x)
		}
	case *parse.ChainNode:
		c += countNodes(n.Node)
	case *parse.IfNode:
		c += countBranch(&n.BranchNode)
	case *parse.RangeNode:
		c += countBranch(&n.BranchNode)
	case *parse.WithNode:
		c += countBranch(&n.BranchNode)
	case *parse.TemplateNode:
		c += countNodes(n.Pipe)
	}
	return c
}

func countBranch(b *parse.BranchNode) int {
	return countNodes(b.Pipe) + countNodes(b.List) + countNodes(b.ElseList)
}

// checkRangeDepth rejects range actions nested deeper than MaxRangeDepth.
func checkRangeDepth(tree *parse.Tree, n parse.Node, depth int) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				if err := checkRangeDepth(tree, c, depth); err != nil {
					return err
				}
			}
		}
	case *parse.IfNode:
		return checkBranchDepth(tree, &n.BranchNode, depth)
	case *parse.WithNode:
		return checkBranchDepth(tree, &n.BranchNode, depth)
	case *parse.RangeNode:
		if depth+1 > MaxRangeDepth {
			loc, _ := tree.ErrorContext(n)
			return fmt.Errorf("template: %s: %w", loc, exceeded(fmt.Sprintf("range nested %d deep", depth+1), "MaxRangeDepth", MaxRangeDepth))
		}
		if err := checkRangeDepth(tree, n.List, depth+1); err != nil {
			return err
		}
		return checkRangeDepth(tree, n.ElseList, depth)
	}
	return nil
}

func checkBranchDepth(tree *parse.Tree, b *parse.BranchNode, depth int) error {
	if err := checkRangeDepth(tree, b.List, depth); err != nil {
		return err
	}
	return checkRangeDepth(tree, b.ElseList, depth)
}

// checkMethodCalls rejects method calls with arguments, such as
// (now).Format "2006": a method's work cannot be metered, and those of the
// values functions return (time.Time, *semver.Version) can take time in
// the length of a string argument. Calls without arguments (.Unix, .Major)
// and field and key references stay allowed.
func checkMethodCalls(tree *parse.Tree, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				if err := checkMethodCalls(tree, c); err != nil {
					return err
				}
			}
		}
	case *parse.ActionNode:
		return checkMethodCalls(tree, n.Pipe)
	case *parse.TemplateNode:
		return checkMethodCalls(tree, n.Pipe)
	case *parse.IfNode:
		return checkBranchMethods(tree, &n.BranchNode)
	case *parse.RangeNode:
		return checkBranchMethods(tree, &n.BranchNode)
	case *parse.WithNode:
		return checkBranchMethods(tree, &n.BranchNode)
	case *parse.ChainNode:
		return checkMethodCalls(tree, n.Node)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for i, cmd := range n.Cmds {
			if len(cmd.Args) > 1 || i > 0 {
				if isMethodRef(cmd.Args[0]) {
					loc, ctx := tree.ErrorContext(cmd)
					return fmt.Errorf("template: %s: calling a method with arguments (%s) is not supported: its cost cannot be bounded (format times with date or dateInZone)", loc, ctx)
				}
			}
			for _, a := range cmd.Args {
				if err := checkMethodCalls(tree, a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkBranchMethods(tree *parse.Tree, b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := checkMethodCalls(tree, n); err != nil {
			return err
		}
	}
	return nil
}

// isMethodRef reports whether n names a field or method of a value: .X.Y,
// $x.Y, (pipeline).Y.
func isMethodRef(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.FieldNode:
		return true
	case *parse.ChainNode:
		return len(n.Field) > 0
	case *parse.VariableNode:
		return len(n.Ident) > 1
	}
	return false
}
