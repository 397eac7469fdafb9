package cue

import (
	"slices"
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
)

// usage is what a program reads of one parameter: the paths of its
// references (object.spec.replicas is [spec replicas]), or all of it.
type usage struct {
	all   bool
	paths [][]string
}

// usages finds, for each name, what the program reads of the top-level
// field of that name: the selector paths of its references. A name used
// whole (alone, through an alias, with a computed index) or whose
// top-level field is declared with anything but _ (a constraint a
// parameter unifies with) is read whole. Names the program never reads
// are absent.
//
// A top-level field that is only a selector chain of a parameter is an
// alias: its references read at its path, and its own declaration reads
// nothing unless it is the output (aliases lists them; Run then passes
// the parameters whole).
func usages(f *ast.File, names ...string) (map[string]*usage, map[string]bool) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]*usage{}
	get := func(n string) *usage {
		u := out[n]
		if u == nil {
			u = &usage{}
			out[n] = u
		}
		return u
	}
	// Aliases: a top-level field that is a parameter's selector chain
	// (`object: data.object`, `kind: object.kind`, as kinitiras' rendered
	// templates declare them) reads what its references read, at its
	// path.
	aliases := map[string]alias{}
	aliasDecl := map[*ast.Field]bool{}
	for range len(f.Decls) + 1 { // to a fixed point: aliases of aliases in any order
		changed := false
		for _, d := range f.Decls {
			fd, ok := d.(*ast.Field)
			if !ok || len(fd.Attrs) > 0 {
				continue
			}
			name, ok := labelName(fd.Label)
			if !ok {
				continue
			}
			root, path, ok := chain(fd.Value)
			if !ok || root == name {
				continue
			}
			var to alias
			if a, ok := aliases[root]; ok {
				to = alias{a.root, append(slices.Clip(a.path), path...)}
			} else if want[root] {
				to = alias{root, path}
			} else {
				continue
			}
			if old, ok := aliases[name]; !ok || old.root != to.root || !slices.Equal(old.path, to.path) {
				aliases[name], aliasDecl[fd], changed = to, true, true
			}
		}
		if !changed {
			break
		}
	}
	// Top-level declarations: `object: _ @tag(object)` is a declaration;
	// `object: {spec: replicas: <10}` constrains the parameter.
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok || aliasDecl[fd] {
			continue
		}
		if name, ok := labelName(fd.Label); ok && want[name] {
			if id, ok := fd.Value.(*ast.Ident); !ok || id.Name != "_" {
				get(name).all = true
			}
		}
	}
	var stack []ast.Node
	ast.Walk(f, func(n ast.Node) bool {
		if fd, ok := n.(*ast.Field); ok && aliasDecl[fd] {
			return false
		}
		if id, ok := n.(*ast.Ident); ok && !isLabel(stack, id) {
			name := id.Name
			path, whole := selectorPath(stack, id)
			if a, ok := aliases[name]; ok {
				name, path = a.root, append(slices.Clip(a.path), path...)
				whole = len(path) == 0
			} else if !want[name] {
				stack = append(stack, n)
				return true
			}
			u := get(name)
			if whole {
				u.all = true
			} else {
				u.paths = append(u.paths, path)
			}
		}
		stack = append(stack, n)
		return true
	}, func(ast.Node) { stack = stack[:len(stack)-1] })
	named := map[string]bool{}
	for n := range aliases {
		named[n] = true
	}
	return out, named
}

type alias struct {
	root string
	path []string
}

// chain is the root and path of a selector chain with constant labels and
// indexes (data.object.spec, object.spec.containers[0]).
func chain(e ast.Expr) (root string, path []string, ok bool) {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			slices.Reverse(path)
			return x.Name, path, true
		case *ast.SelectorExpr:
			name, ok := labelName(x.Sel)
			if !ok {
				return "", nil, false
			}
			path = append(path, name)
			e = x.X
		case *ast.IndexExpr:
			lit, ok := x.Index.(*ast.BasicLit)
			if !ok {
				return "", nil, false
			}
			s, err := literal.Unquote(lit.Value)
			if lit.Kind == token.INT {
				s, err = lit.Value, nil
			} else if lit.Kind != token.STRING {
				err = strconv.ErrSyntax
			}
			if err != nil {
				return "", nil, false
			}
			path = append(path, s)
			e = x.X
		default:
			return "", nil, false
		}
	}
}

// isLabel reports whether id is the label of its parent field or the
// selector of its parent selector expression (not a reference).
func isLabel(stack []ast.Node, id *ast.Ident) bool {
	if len(stack) == 0 {
		return false
	}
	switch p := stack[len(stack)-1].(type) {
	case *ast.Field:
		return p.Label == ast.Label(id)
	case *ast.SelectorExpr:
		return p.Sel == ast.Label(id) // x.object: a selector, not a reference
	}
	return false
}

// selectorPath climbs the selectors and constant indexes applied to id:
// whole is true when there is none (the reference reads all of it).
func selectorPath(stack []ast.Node, id *ast.Ident) (path []string, whole bool) {
	var cur ast.Node = id
	for i := len(stack) - 1; i >= 0; i-- {
		switch p := stack[i].(type) {
		case *ast.SelectorExpr:
			if p.X != cur {
				return path, len(path) == 0
			}
			name, ok := labelName(p.Sel)
			if !ok {
				return path, len(path) == 0
			}
			path = append(path, name)
		case *ast.IndexExpr:
			if p.X != cur {
				return path, len(path) == 0
			}
			lit, ok := p.Index.(*ast.BasicLit)
			if !ok {
				return path, len(path) == 0
			}
			switch lit.Kind {
			case token.STRING:
				s, err := literal.Unquote(lit.Value)
				if err != nil {
					return path, len(path) == 0
				}
				path = append(path, s)
			case token.INT:
				if _, err := strconv.Atoi(lit.Value); err != nil {
					return path, len(path) == 0
				}
				path = append(path, lit.Value)
			default:
				return path, len(path) == 0
			}
		default:
			return path, len(path) == 0
		}
		cur = stack[i]
	}
	return path, len(path) == 0
}

// labelName is the name a label spells, when it is a constant.
func labelName(l ast.Label) (string, bool) {
	switch x := l.(type) {
	case *ast.Ident:
		return x.Name, true
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := literal.Unquote(x.Value)
		return s, err == nil
	}
	return "", false
}

// prune keeps of v the subtrees at paths (a path that stops at a list
// keeps the list whole); absent paths stay absent. A path that is a
// prefix of another keeps its whole subtree.
func prune(v any, paths [][]string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	groups := map[string][][]string{}
	for _, p := range paths {
		if len(p) == 0 {
			return v
		}
		groups[p[0]] = append(groups[p[0]], p[1:])
	}
	out := make(map[string]any, len(groups))
	for k, rest := range groups {
		e, ok := m[k]
		if !ok {
			continue
		}
		whole := false
		for _, r := range rest {
			if len(r) == 0 {
				whole = true
				break
			}
		}
		if whole {
			out[k] = e
		} else {
			out[k] = prune(e, rest)
		}
	}
	return out
}
