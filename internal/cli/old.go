package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

// The old object of an UPDATE (apply and explain --old, a suite case's
// old or oldObject). An UPDATE keeps an object's apiVersion, kind,
// namespace and name, so an old object is paired with the object that has
// the same four; the namespace of either is the admission's (a namespaced
// object without one is in --namespace).

// oldUsage is the --old flag's help.
const oldUsage = "the old object(s) of an UPDATE: a file or - (each -f object is paired with the old object of the same apiVersion, kind, namespace and name); without it an UPDATE carries no old object"

// checkOld refuses --old with an operation other than UPDATE, and a
// directory.
func checkOld(path string, op rules.Operation) error {
	if path == "" {
		return nil
	}
	switch op {
	case rules.Create:
		return usageError("--old is the old object of an UPDATE, and the operation is CREATE: give --operation UPDATE")
	case rules.Delete:
		return usageError("--old is refused with --operation DELETE: the object being deleted is the old object, given with -f")
	}
	if path != "-" {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			return usageError("--old must be a file or -, not a directory (%s)", path)
		}
	}
	return nil
}

// identity is what an UPDATE does not change.
type identity struct{ apiVersion, kind, ns, name string }

// identityOf is the identity of an object admitted with defaultNS as the
// namespace of namespaced objects that carry none.
func identityOf(obj map[string]any, defaultNS string) identity {
	a := newAdmission(obj, defaultNS)
	av, _ := obj["apiVersion"].(string)
	return identity{apiVersion: av, kind: a.kind, ns: a.ns, name: a.name}
}

func (id identity) String() string {
	a := admission{kind: id.kind, ns: id.ns, name: id.name}
	return fmt.Sprintf("%s (%s)", a, id.apiVersion)
}

// pairOld pairs each object with its old object among olds: the one with
// the same identity. An object without an old one, an old object that is
// none of the objects and two old objects of one identity are errors (all
// reported). The result is parallel to objs.
func pairOld(objs, olds []source.Document, defaultNS string) ([]*source.Document, error) {
	if len(olds) == 0 {
		return nil, errors.New("--old holds no object")
	}
	byID := make(map[identity]*source.Document, len(olds))
	var errs []error
	for i := range olds {
		d := &olds[i]
		id := identityOf(d.Object, defaultNS)
		if prev, ok := byID[id]; ok {
			errs = append(errs, fmt.Errorf("--old: %s is given twice (%s; %s)", id, prev.Origin, d.Origin))
			continue
		}
		byID[id] = d
	}
	out := make([]*source.Document, len(objs))
	used := make(map[identity]bool, len(olds))
	for i := range objs {
		id := identityOf(objs[i].Object, defaultNS)
		old, ok := byID[id]
		if !ok {
			errs = append(errs, fmt.Errorf("--old: no old object for %s (%s)", id, objs[i].Origin))
			continue
		}
		out[i], used[id] = old, true
	}
	for i := range olds {
		d := &olds[i]
		if id := identityOf(d.Object, defaultNS); !used[id] && byID[id] == d {
			errs = append(errs, fmt.Errorf("--old: the old object %s (%s) is none of the objects (-f): an UPDATE keeps apiVersion, kind, namespace and name", id, d.Origin))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// findOld is the old object of one suite case among the documents of its
// old file: the one with the object's identity.
func findOld(docs []source.Document, obj map[string]any, ns string) (map[string]any, error) {
	want := identityOf(obj, ns)
	var found []string
	for i := range docs {
		if identityOf(docs[i].Object, ns) == want {
			found = append(found, docs[i].Origin)
			if len(found) == 1 {
				obj = docs[i].Object
			}
		}
	}
	switch len(found) {
	case 0:
		held := make([]string, len(docs))
		for i := range docs {
			held[i] = identityOf(docs[i].Object, ns).String()
		}
		return nil, fmt.Errorf("no old object for %s (the file holds %s): an UPDATE keeps apiVersion, kind, namespace and name", want, orNothing(held))
	case 1:
		return obj, nil
	}
	return nil, fmt.Errorf("%s is given twice (%s)", want, strings.Join(found, "; "))
}

// sameObject refuses an inline old object that names another object than
// obj.
func sameObject(obj, old map[string]any, ns string) error {
	if a, b := identityOf(obj, ns), identityOf(old, ns); a != b {
		return fmt.Errorf("the old object is %s, the object %s: an UPDATE keeps apiVersion, kind, namespace and name", b, a)
	}
	return nil
}

func orNothing(list []string) string {
	if len(list) == 0 {
		return "nothing"
	}
	return strings.Join(list, ", ")
}
