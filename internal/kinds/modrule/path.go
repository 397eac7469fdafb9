package modrule

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
)

// PathTemplate is a compiled patch path: a JSON pointer whose tokens may hold
// #N placeholders, filled from the keys a select captured.
type PathTemplate struct {
	Source string
	// Static is the pointer when the path has no placeholders.
	Static patch.Pointer
	// MaxPlaceholder is the highest N of the #N placeholders, or -1.
	MaxPlaceholder int
	tokens         [][]pathPart
}

type pathPart struct {
	lit string
	ph  int // -1 for a literal
}

type pathError struct {
	pos int
	msg string
}

// compilePath parses a path. Placeholders are recognised only when the
// operation has a select, as KubeMod does; otherwise the path is taken as it
// is.
func compilePath(src string, placeholders bool) (PathTemplate, *pathError) {
	pt := PathTemplate{Source: src, MaxPlaceholder: -1}
	if !strings.HasPrefix(src, "/") {
		return pt, &pathError{0, fmt.Sprintf("a JSON pointer must start with '/' (got %q)", src)}
	}
	if !placeholders {
		p, err := patch.ParsePointer(src)
		if err != nil {
			return pt, &pathError{-1, err.Error()}
		}
		pt.Static = p
		return pt, nil
	}
	offset := 1
	for _, raw := range strings.Split(src[1:], "/") {
		var parts []pathPart
		i := 0
		for i < len(raw) {
			j := strings.IndexByte(raw[i:], '#')
			if j < 0 {
				parts = append(parts, pathPart{lit: raw[i:], ph: -1})
				break
			}
			j += i
			k := j + 1
			for k < len(raw) && raw[k] >= '0' && raw[k] <= '9' {
				k++
			}
			if k == j+1 { // a lone '#' is literal text
				parts = append(parts, pathPart{lit: raw[i : j+1], ph: -1})
				i = j + 1
				continue
			}
			if j > i {
				parts = append(parts, pathPart{lit: raw[i:j], ph: -1})
			}
			n, err := strconv.Atoi(raw[j+1 : k])
			if err != nil || n > 1000 {
				return pt, &pathError{offset + j, fmt.Sprintf("placeholder %q is out of range", raw[j:k])}
			}
			parts = append(parts, pathPart{ph: n})
			if n > pt.MaxPlaceholder {
				pt.MaxPlaceholder = n
			}
			i = k
		}
		for pi := range parts {
			if parts[pi].ph >= 0 {
				continue
			}
			lit, err := unescapeToken(parts[pi].lit)
			if err != "" {
				return pt, &pathError{offset + strings.Index(raw, parts[pi].lit), err}
			}
			parts[pi].lit = lit
		}
		if len(parts) == 0 {
			parts = []pathPart{{lit: "", ph: -1}}
		}
		pt.tokens = append(pt.tokens, parts)
		offset += len(raw) + 1
	}
	if pt.MaxPlaceholder < 0 {
		p, err := patch.ParsePointer(src)
		if err != nil {
			return pt, &pathError{-1, err.Error()}
		}
		pt.Static = p
		pt.tokens = nil
	}
	return pt, nil
}

// SyntheticRefs is the member under which the related objects are
// (refsInput).
const SyntheticRefs = "syntheticRefs"

// UnderSyntheticRefs reports whether the path's first token is, as written,
// syntheticRefs. (A placeholder there may still render to it: the engine
// checks rendered paths too.)
func (p *PathTemplate) UnderSyntheticRefs() bool {
	if p.tokens == nil {
		return len(p.Static) > 0 && p.Static[0] == SyntheticRefs
	}
	first := p.tokens[0]
	return len(first) == 1 && first[0].ph < 0 && first[0].lit == SyntheticRefs
}

func unescapeToken(s string) (string, string) {
	if !strings.Contains(s, "~") {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && (s[i+1] == '0' || s[i+1] == '1') {
			if s[i+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			i++
			continue
		}
		return "", "'~' must be followed by 0 or 1 in a JSON pointer"
	}
	return b.String(), ""
}

// Render fills the placeholders with captured keys. Keys are used as
// reference tokens as they are, so a key holding '/' or '~' addresses that
// very member (KubeMod pasted keys unescaped). A recursive-descent capture
// fills a whole path segment with the path it went down.
func (p *PathTemplate) Render(keys []any) (patch.Pointer, error) {
	return p.RenderTo(nil, keys)
}

// RenderTo is Render appending the path's tokens to *arena (nil: a slice
// of their own) and returning them from there, capped: arena's storage
// can be reused once the path is no longer needed.
func (p *PathTemplate) RenderTo(arena *[]string, keys []any) (patch.Pointer, error) {
	if p.tokens == nil {
		return p.Static, nil
	}
	var out patch.Pointer
	start := 0
	if arena != nil {
		out, start = *arena, len(*arena)
	} else {
		out = make(patch.Pointer, 0, len(p.tokens)+2)
	}
	for _, parts := range p.tokens {
		if len(parts) == 1 && parts[0].ph < 0 {
			out = append(out, parts[0].lit)
			continue
		}
		if len(parts) == 1 {
			k, err := keyAt(keys, parts[0].ph)
			if err != nil {
				return nil, err
			}
			if d, ok := k.(lang.Path); ok {
				for _, dk := range d {
					out = append(out, keyText(dk))
				}
				continue
			}
			out = append(out, keyText(k))
			continue
		}
		var b strings.Builder
		for _, part := range parts {
			if part.ph < 0 {
				b.WriteString(part.lit)
				continue
			}
			k, err := keyAt(keys, part.ph)
			if err != nil {
				return nil, err
			}
			if _, ok := k.(lang.Path); ok {
				return nil, fmt.Errorf("placeholder #%d holds a recursive-descent path and must fill a whole path segment", part.ph)
			}
			b.WriteString(keyText(k))
		}
		out = append(out, b.String())
	}
	if arena != nil {
		*arena = out
		return out[start:len(out):len(out)], nil
	}
	return out, nil
}

func keyAt(keys []any, n int) (any, error) {
	if n >= len(keys) {
		return nil, fmt.Errorf("placeholder #%d has no captured key (select captured %d)", n, len(keys))
	}
	return keys[n], nil
}

func keyText(k any) string {
	switch t := k.(type) {
	case int:
		return strconv.Itoa(t)
	case string:
		return t
	case lang.Path:
		parts := make([]string, len(t))
		for i, dk := range t {
			parts[i] = patch.EscapeToken(keyText(dk))
		}
		return strings.Join(parts, "/")
	}
	return fmt.Sprint(k)
}
