package source

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// referenceSplit is what kubectl's YAML reader (k8s.io/apimachinery's
// YAMLReader) makes of data: its documents, and whether it refused it.
// It gives each line its "\n", a last line without one too.
func referenceSplit(data []byte) ([]string, bool) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []string
	for {
		text, err := r.Read()
		if err == io.EOF {
			return docs, true
		}
		if err != nil {
			return docs, false
		}
		docs = append(docs, string(text))
	}
}

// splitTexts is splitDocuments' documents as referenceSplit gives them
// (the last line with its "\n"), checking their numbers and lines.
func splitTexts(t *testing.T, data []byte) ([]string, bool) {
	spans, err := splitDocuments("f.yaml", data)
	if err != nil {
		if !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("error %v is not ErrInvalidManifest", err)
		}
		return nil, false
	}
	var docs []string
	lines := 1
	for i, s := range spans {
		if s.n != i+1 {
			t.Errorf("document %d numbered %d", i+1, s.n)
		}
		if s.line < lines {
			t.Errorf("document %d starts on line %d, before the previous one's end (line %d)", s.n, s.line, lines)
		}
		lines = s.line + bytes.Count(s.text, []byte("\n"))
		if bytes.IndexByte(data, '\r') < 0 {
			// Not a copy: the file's bytes, starting on the line counted
			// from the file's start.
			off := cap(data) - cap(s.text)
			if off < 0 || off+len(s.text) > len(data) || !bytes.Equal(data[off:off+len(s.text)], s.text) {
				t.Fatalf("document %d is not a slice of the file", s.n)
			}
			if want := 1 + bytes.Count(data[:off], []byte("\n")); s.line != want {
				t.Errorf("document %d starts on line %d, want %d", s.n, s.line, want)
			}
		}
		text := string(s.text)
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		docs = append(docs, text)
	}
	return docs, true
}

func TestSplitDocuments(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		lines      []int // each document's first line
		bad        bool
	}{
		{name: "empty", data: ""},
		{name: "one", data: "a: 1\nb: 2\n", lines: []int{1}},
		{name: "no final newline", data: "a: 1\n---\nb: 2", lines: []int{1, 3}},
		{name: "leading separator", data: "---\na: 1\n---\nb: 2\n", lines: []int{1, 4}},
		{name: "separators only", data: "---\n---\n---\n", lines: []int{1, 3}},
		{name: "comment after separator", data: "a: 1\n--- # next\nb: 2\n", lines: []int{1, 3}},
		{name: "comments before", data: "# c\n\n---\nb: 2\n", lines: []int{1, 4}},
		{name: "crlf", data: "a: 1\r\n---\r\nb: 2\r\n", lines: []int{1, 3}},
		{name: "text after separator", data: "a: 1\n--- b\n", bad: true},
		{name: "four dashes", data: "a: 1\n----\n", bad: true},
		{name: "separator indented is content", data: "a: |\n  ---\n", lines: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			got, gotOK := splitTexts(t, data)
			want, wantOK := referenceSplit(data)
			if gotOK != wantOK || gotOK == tc.bad {
				t.Fatalf("accepted: %v, the reference %v, want %v", gotOK, wantOK, !tc.bad)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("documents (-reference +splitDocuments):\n%s", diff)
			}
			spans, _ := splitDocuments("f.yaml", data)
			var lines []int
			for _, s := range spans {
				lines = append(lines, s.line)
			}
			if diff := cmp.Diff(tc.lines, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSplitDocumentsLongSeparator: an error quotes a bounded part of the
// line, however long the author made it.
func TestSplitDocumentsLongSeparator(t *testing.T) {
	line := "--- " + strings.Repeat("x", 1<<20)
	_, err := splitDocuments("f.yaml", []byte("a: 1\n"+line+"\n"))
	if !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("error %v, want ErrInvalidManifest", err)
	}
	if n := len(err.Error()); n > 200 {
		t.Errorf("the error is %d bytes long", n)
	}
	if !strings.Contains(err.Error(), "f.yaml:2:") || !strings.Contains(err.Error(), "--- xxx") {
		t.Errorf("error %q does not name the line and its start", err)
	}
}

// TestSplitDocumentsNoCopy: a document without "\r" is the file's own
// bytes.
func TestSplitDocumentsNoCopy(t *testing.T) {
	data := []byte("a: 1\n---\nb: 2\n")
	spans, err := splitDocuments("f.yaml", data)
	if err != nil || len(spans) != 2 {
		t.Fatalf("spans %v, error %v", spans, err)
	}
	if &spans[1].text[0] != &data[9] {
		t.Error("the second document is a copy, not the file's bytes")
	}
}

// FuzzSplitDocuments: splitDocuments splits as kubectl's YAML reader does.
func FuzzSplitDocuments(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: 2", "---\n---\n", "a\r\n--- #c\r\nb\r", "--- x\n", "\n\n---\n\n", strings.Repeat("x", 5000) + "\r\n---\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotOK := splitTexts(t, data)
		want, wantOK := referenceSplit(data)
		if gotOK != wantOK {
			t.Fatalf("accepted: %v, the reference %v", gotOK, wantOK)
		}
		if !gotOK {
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("documents (-reference +splitDocuments):\n%s", diff)
		}
	})
}
