package kyverno

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyvernoreq"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
)

// globalRefEntry is a compiled globalReference context entry: the entry's
// name (entry or entry.projection) and a JMESPath over its value, both
// with {{ }} variables.
type globalRefEntry struct {
	name *subst.Template
	jp   *subst.Template
}

// globalReference is Kyverno's kyverno.io/v1 globalReference.
type globalReference struct {
	Name     string `json:"name"`
	JMESPath string `json:"jmesPath,omitempty"`
}

func (c *compiler) globalRef(field string, raw []byte) *globalRefEntry {
	var g globalReference
	if !c.decodeInto(field, raw, &g) {
		return nil
	}
	if g.Name == "" {
		c.errf(field+".name", "the name of a GlobalContextEntry is required")
		return nil
	}
	out := &globalRefEntry{name: c.template(field+".name", g.Name)}
	if g.JMESPath != "" {
		out.jp = c.template(field+".jmesPath", g.JMESPath)
	}
	return out
}

// globalRef reads a globalReference entry through the engine's
// GlobalContextReader: an entry it does not hold is an error (Kyverno:
// "failed to fetch entry"); a Policy (namespaced) reads none, since an
// entry holds data of the whole cluster. read is false without a reader (offline
// without entries: as kyverno test, a value of the same name stands for
// it).
func (s *scope) globalRef(h *engine.Handle, e *globalRefEntry) (v any, read bool, err error) {
	g := h.Globals()
	if g == nil {
		return nil, false, nil
	}
	if s.owner != "" {
		return nil, false, fmt.Errorf("%w: a Policy (namespace %s) does not read GlobalContextEntries: they hold data of the whole cluster", ErrOutsideNamespace, s.owner)
	}
	name, err := e.name.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, false, err
	}
	entry, projection, _ := strings.Cut(name, ".")
	v, err = readGlobal(h.Context(), g, entry, projection)
	switch {
	case errors.Is(err, engine.ErrNoReader):
		return nil, false, nil
	case errors.Is(err, engine.ErrNoGlobalContextEntry):
		return nil, false, fmt.Errorf("failed to fetch entry key=%s", kyvernoreq.Truncate(entry, 100))
	case err != nil:
		return nil, false, err
	}
	out, src, err := s.searchEntry(e.jp, v)
	if err != nil && src != "" {
		return nil, false, fmt.Errorf("failed to apply JMESPath %s for context entry: %w", src, err)
	}
	return out, err == nil, err
}

// searchEntry applies jp (its {{ }} variables rendered; nil: none) to v: the
// result, and the expression when searching failed ("" when rendering or
// compiling it did).
func (s *scope) searchEntry(jp *subst.Template, v any) (out any, src string, err error) {
	if jp == nil {
		return v, "", nil
	}
	if src, err = jp.RenderEscaped(s.ctx, s, nil); err != nil {
		return nil, "", err
	}
	prog, err := s.progs.compile(src)
	if err != nil {
		return nil, "", err
	}
	lib, err := jmespath.Prepare(v)
	if err != nil {
		return nil, "", err
	}
	res, err := prog.prog.Search(s.ctx, lib)
	if err != nil {
		return nil, src, err
	}
	return jmespath.Result(res), "", nil
}

// readGlobal reads an entry through g. An entry or projection name longer
// than an object's name (253 bytes) names no entry: a name an object gives
// reaches no reader, error or log line unbounded.
func readGlobal(ctx context.Context, g engine.GlobalContextReader, entry, projection string) (any, error) {
	if len(entry) > maxPathPart || len(projection) > maxPathPart {
		return nil, fmt.Errorf("%q: %w", kyvernoreq.Truncate(entry, 100), engine.ErrNoGlobalContextEntry)
	}
	return g.GlobalContext(ctx, entry, projection)
}

// imageRegistryEntry is a compiled imageRegistry context entry: the
// image's reference and the JMESPath applied to its data, with {{ }}
// variables.
type imageRegistryEntry struct {
	ref, jp *subst.Template
}

// imageRegistry is an imageRegistry entry as written; its
// imageRegistryCredentials are not read (the engine's ImageReader has the
// operator's: --image-pull-secrets).
type imageRegistry struct {
	Reference                string          `json:"reference"`
	JMESPath                 string          `json:"jmesPath,omitempty"`
	ImageRegistryCredentials json.RawMessage `json:"imageRegistryCredentials,omitempty"`
}

func (c *compiler) imageRegistry(field string, raw []byte) *imageRegistryEntry {
	var r imageRegistry
	if !c.decodeInto(field, raw, &r) {
		return nil
	}
	if r.Reference == "" {
		c.errf(field+".reference", "an image reference is required")
		return nil
	}
	out := &imageRegistryEntry{ref: c.template(field+".reference", r.Reference)}
	if r.JMESPath != "" {
		out.jp = c.template(field+".jmesPath", r.JMESPath)
	}
	return out
}

// imageData reads an imageRegistry entry's image through the engine's
// ImageReader and gives it in Kyverno's shape (image, resolvedImage,
// registry, repository, identifier, manifestList, manifest, configData),
// its JMESPath applied. read is false without a reader (offline without
// image data: as kyverno test, a value of the same name stands for it).
func (s *scope) imageData(h *engine.Handle, e *imageRegistryEntry) (v any, read bool, err error) {
	if h.Images() == nil || e.ref == nil {
		return nil, false, nil
	}
	ref, err := e.ref.RenderEscaped(s.ctx, s, nil)
	if err != nil {
		return nil, false, err
	}
	d, err := readImage(h, ref)
	switch {
	case errors.Is(err, engine.ErrNoReader):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("failed to fetch image descriptor: %s, error: %w", kyvernoreq.Truncate(ref, 200), err)
	}
	data := map[string]any{"image": d["image"], "resolvedImage": d["resolvedImage"], "registry": d["registry"], "repository": d["repository"],
		"identifier": d["identifier"], "manifestList": d["imageIndex"], "manifest": d["manifest"], "configData": d["config"]}
	out, src, err := s.searchEntry(e.jp, data)
	if err != nil && src != "" {
		return nil, false, fmt.Errorf("failed to apply JMESPath (%s) results to context entry, error: %w", src, err)
	}
	return out, err == nil, err
}
