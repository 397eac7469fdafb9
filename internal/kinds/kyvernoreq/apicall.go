package kyvernoreq

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/modwright/modwright/internal/lang/subst"
)

// ErrURLPath is in the chain of the error of an apiCall whose urlPath a
// variable's value would change the shape of.
var ErrURLPath = errors.New("invalid urlPath")

// MaxURLPath bounds a rendered urlPath (with its query), checked before it
// reaches the API reader, its cache, its authorization and the errors that
// name it: an object's text could make it any length; a URL of 8 KiB is
// beyond what HTTP servers commonly take.
const MaxURLPath = 8 << 10

// Confined reports whether an API path stays in namespace ns: a
// namespaced resource's path under /api/v1/namespaces/ns or
// /apis/group/version/namespaces/ns (the Namespace object itself
// included). A namespaced rule's calls must be (docs/security.md).
func Confined(p, ns string) bool {
	p, _, _ = strings.Cut(p, "?")
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 4 && segs[0] == "api" && segs[1] == "v1" && segs[2] == "namespaces":
		rest = segs[3:]
	case len(segs) >= 5 && segs[0] == "apis" && segs[3] == "namespaces":
		rest = segs[4:]
	default:
		return false
	}
	name, err := url.PathUnescape(rest[0])
	return err == nil && name == ns
}

// pathSegment is a variable's value in a urlPath: one path segment,
// escaped. A value holding "/" or being "." or ".." is refused: an
// object's text must not redirect the call (Kyverno splices it as it is;
// docs/compatibility.md).
func pathSegment(s string) (string, error) {
	if s == "" || s == "." || s == ".." || strings.Contains(s, "/") {
		return "", fmt.Errorf("%w: the value %q is not one path segment", ErrURLPath, Truncate(s, 64))
	}
	return url.PathEscape(s), nil
}

// Truncate is s cut to n bytes, "..." marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// RenderPath renders an apiCall's urlPath s (t: its compiled template, nil
// without variables) through r: variables' values are path segments, and
// the result must be a clean absolute path (no "." or ".." segment, no
// "//"), so that no value leaves the prefix the policy wrote.
func RenderPath(ctx context.Context, r subst.Resolver, s string, t *subst.Template) (string, error) {
	if t != nil {
		var err error
		if s, err = t.RenderEscaped(ctx, r, pathSegment); err != nil {
			return "", err
		}
	}
	if len(s) > MaxURLPath {
		return "", fmt.Errorf("%w: %d bytes, over the %d limit", ErrURLPath, len(s), MaxURLPath)
	}
	p, _, _ := strings.Cut(s, "?")
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p && path.Clean(p)+"/" != p {
		return "", fmt.Errorf("%w: %q is not a clean absolute path", ErrURLPath, Truncate(s, 200))
	}
	return s, nil
}
