package images

import (
	"errors"
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// DefaultRegistry is the registry of an image that names none, as
// Kyverno's default.
const DefaultRegistry = "docker.io"

// ErrBadImage is in the chain of the error of an image reference that
// does not parse.
var ErrBadImage = errors.New("bad image")

// Info is Kyverno's information on one image reference.
type Info struct {
	Registry, Path, Name, Tag, Digest string
	// Reference is registry/path then :tag, or @digest when there is one.
	Reference string
	// ReferenceWithTag is registry/path:tag.
	ReferenceWithTag string
}

// Parse parses an image reference as Kyverno does: docker.io when the
// first path element is not a registry host, "latest" without a tag and
// a digest.
func Parse(image string) (Info, error) {
	full := withRegistry(image)
	ref, err := reference.Parse(full)
	if err != nil {
		return Info{}, fmt.Errorf("%w %q: %w", ErrBadImage, image, err)
	}
	var in Info
	if named, ok := ref.(reference.Named); ok {
		in.Registry = reference.Domain(named)
		in.Path = reference.Path(named)
		in.Name = in.Path[strings.LastIndex(in.Path, "/")+1:]
	}
	if tagged, ok := ref.(reference.Tagged); ok {
		in.Tag = tagged.Tag()
	}
	if digested, ok := ref.(reference.Digested); ok {
		in.Digest = digested.Digest().String()
	}
	if in.Digest == "" && in.Tag == "" {
		in.Tag = "latest"
	}
	base := in.Path
	if in.Registry != "" {
		base = in.Registry + "/" + in.Path
	}
	in.ReferenceWithTag = base + ":" + in.Tag
	if in.Digest != "" {
		in.Reference = base + "@" + in.Digest
	} else {
		in.Reference = base + ":" + in.Tag
	}
	return in, nil
}

// withRegistry prefixes the default registry when the first path element
// is not a host (no '.' nor ':', not localhost, lower case), as Kyverno.
func withRegistry(image string) string {
	first, _, ok := strings.Cut(image, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first) {
		return DefaultRegistry + "/" + image
	}
	return image
}

// tree is the JSON form of an image's information, with the fields
// Kyverno omits when empty left out.
func (in Info) tree(pointer string) map[string]any {
	m := map[string]any{"name": in.Name, "path": in.Path, "jsonPointer": pointer}
	for k, v := range map[string]string{"registry": in.Registry, "tag": in.Tag, "digest": in.Digest,
		"reference": in.Reference, "referenceWithTag": in.ReferenceWithTag} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// podSpecPaths are where each kind holds its pod spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// Sorts are the container lists, in Kyverno's order.
var Sorts = []string{"initContainers", "containers", "ephemeralContainers"}

// Extract returns the images of obj (a JSON value tree) of kind kind:
// {"containers": {NAME: info}, "initContainers": ..., "ephemeralContainers":
// ...}, with only the sorts that have images; nil for a kind without
// containers or an object without images. A container without a name, or
// an image that does not parse, is an error, as in Kyverno.
func Extract(kind string, obj map[string]any) (map[string]any, error) {
	path, ok := podSpecPaths[kind]
	if !ok {
		return nil, nil
	}
	var spec any = obj
	for _, k := range path {
		m, ok := spec.(map[string]any)
		if !ok {
			return nil, nil
		}
		spec = m[k]
	}
	specMap, ok := spec.(map[string]any)
	if !ok {
		return nil, nil
	}
	var out map[string]any
	for _, sort := range Sorts {
		list, ok := specMap[sort].([]any)
		if !ok {
			continue
		}
		byName := map[string]any{}
		for i, c := range list {
			cm, ok := c.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: not an object", sort, i)
			}
			pointer := "/" + strings.Join(path, "/") + fmt.Sprintf("/%s/%d/image", sort, i)
			img, _ := cm["image"].(string)
			if strings.TrimSpace(img) == "" {
				continue // no image: nothing to say
			}
			name, ok := cm["name"].(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: a container without a name", sort, i)
			}
			in, err := Parse(img)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", sort, name, err)
			}
			byName[name] = in.tree(pointer)
		}
		if len(byName) > 0 {
			if out == nil {
				out = map[string]any{}
			}
			out[sort] = byName
		}
	}
	return out, nil
}
