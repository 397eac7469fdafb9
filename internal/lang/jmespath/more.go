package jmespath

import (
	"math"
	"strings"

	"github.com/blang/semver/v4"
)

// jpLookup returns the member of an object (a string key) or the element
// of an array (an integral index) named by argument 2, or null when absent.
func jpLookup(a []any) (any, error) {
	switch x := a[0].(type) {
	case map[string]any:
		k, ok := a[1].(string)
		if !ok {
			return nil, argError("lookup", 1, "String")
		}
		return x[k], nil
	case []any:
		f, ok := a[1].(float64)
		if !ok {
			return nil, argError("lookup", 1, "Number")
		}
		if f != math.Trunc(f) {
			return nil, funcError("lookup", "argument #2: expected an integer number but got: %v", a[1])
		}
		if f < 0 || f >= float64(len(x)) {
			return nil, nil
		}
		return x[int(f)], nil
	}
	return nil, argError("lookup", 0, "object or array")
}

// jpSemverCompare reports whether version (argument 1) is in the range
// (argument 2) in blang/semver's range syntax, as Kyverno.
func jpSemverCompare(a []any) (any, error) {
	v, err := semver.Parse(a[0].(string))
	if err != nil {
		return nil, funcError("semver_compare", "%v", err)
	}
	r, err := semver.ParseRange(a[1].(string))
	if err != nil {
		return nil, funcError("semver_compare", "%v", err)
	}
	return r(v), nil
}

// jpImageNormalize returns an image reference with Kyverno's defaults: the
// docker.io registry when the first segment is not a registry (it has no
// '.' or ':', is not "localhost" and is lowercase), and the latest tag
// when there is no tag; with a digest, the tag is dropped (registry/path@
// digest), as Kyverno. No "library/" is added, as in Kyverno. The
// reference's grammar is checked loosely (Kyverno parses it fully).
func jpImageNormalize(a []any) (any, error) {
	img := a[0].(string)
	if img == "" || strings.ContainsAny(img, " \t\n") || strings.HasSuffix(img, "/") || strings.HasPrefix(img, "/") {
		return nil, funcError("image_normalize", "bad image: %q", img)
	}
	first, _, hasSlash := strings.Cut(img, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first) {
		img = "docker.io/" + img
	}
	name, digest, hasDigest := strings.Cut(img, "@")
	if hasDigest && digest == "" {
		return nil, funcError("image_normalize", "bad image: %q", a[0])
	}
	slash := strings.LastIndexByte(name, '/')
	path, tag, hasTag := strings.Cut(name[slash+1:], ":")
	if hasTag && tag == "" {
		return nil, funcError("image_normalize", "bad image: %q", a[0])
	}
	repo := name[:slash+1] + path
	switch {
	case hasDigest:
		return repo + "@" + digest, nil
	case hasTag:
		return repo + ":" + tag, nil
	}
	return repo + ":latest", nil
}
