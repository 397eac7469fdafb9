package source

import (
	"bytes"
	"testing"
)

// TestFirstContent: the first line that is not blank, a comment or a
// document marker, as the copy with the comments stripped and trimmed
// began (what manifest reading tested before, allocating the copy).
func TestFirstContent(t *testing.T) {
	strippedStart := func(b []byte) []byte {
		var out []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			tr := bytes.TrimSpace(line)
			if len(tr) == 0 || tr[0] == '#' || bytes.Equal(tr, []byte("---")) {
				continue
			}
			out = append(out, line...)
			out = append(out, '\n')
		}
		out = bytes.TrimSpace(out)
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = bytes.TrimSpace(out[:i])
		}
		return out
	}
	for _, doc := range []string{
		"", "\n\n", "# only\n  # comments\n", "---\n# c\n", "--- \n\t\n",
		"apiVersion: v1\nkind: ConfigMap\n", "# c\n  {\"kind\": \"x\"}\n", "\n---\n[1, 2]",
		"---x\n", "  # c\r\n  kind: x\r\n", "key: v # not a full-line comment",
	} {
		got, want := firstContent([]byte(doc)), strippedStart([]byte(doc))
		if !bytes.Equal(got, want) || (got == nil) != (len(want) == 0) {
			t.Errorf("firstContent(%q) = %q, want %q", doc, got, want)
		}
		b := []byte(doc)
		if n := testing.AllocsPerRun(10, func() { firstContent(b) }); n != 0 {
			t.Errorf("firstContent(%q) allocates %v times", doc, n)
		}
	}
}
