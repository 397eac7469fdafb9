package source

import (
	"bytes"
	"fmt"

	"github.com/modwright/modwright/internal/rules"
)

// maxQuotedLine bounds the part of a line an error quotes.
const maxQuotedLine = 80

// docSpan is one document of a manifest: n counts the documents from 1
// (the empty ones too), line is the file's line it starts on, text is its
// bytes: a slice of the file's own, or, for a document with "\r\n" line
// ends, a copy with "\n" ones (as the YAML reader of kubectl gives them).
type docSpan struct {
	n, line int
	text    []byte
}

// splitDocuments splits the text of manifest name into its documents as
// k8s.io/apimachinery's YAMLReader (kubectl's) does, and what it returns
// is the same text (FuzzSplitDocuments), without copying the file line by
// line: a line starting with "---" ends the document before it, and must
// hold nothing else but a comment; a separator before any other line of
// its document belongs to that document (a lone "---" is an empty
// document).
func splitDocuments(name string, data []byte) ([]docSpan, error) {
	var docs []docSpan
	start, startLine := -1, 0 // the current document's first byte and line; -1: none yet
	emit := func(end int) {
		text := data[start:end]
		if bytes.IndexByte(text, '\r') >= 0 {
			text = bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n"))
		}
		docs = append(docs, docSpan{n: len(docs) + 1, line: startLine, text: text})
		start = -1
	}
	at, line := 0, 0 // the current line's first byte and number
	for l := range bytes.Lines(data) {
		line++
		end := at + len(l) // past its "\n"
		if bytes.HasPrefix(l, []byte("---")) {
			if rest := bytes.TrimSpace(l[3:]); len(rest) > 0 && rest[0] != '#' {
				// The line is the author's: at most maxQuotedLine bytes of it.
				return nil, fmt.Errorf("%w: %s:%d: invalid document separator %q: only a comment may follow ---", ErrInvalidManifest, name, line,
					rules.Truncate(string(bytes.TrimRight(l, "\r\n")), maxQuotedLine))
			}
			if start >= 0 {
				emit(at)
				at = end
				continue
			}
		}
		if start < 0 {
			start, startLine = at, line
		}
		at = end
	}
	if start >= 0 {
		emit(len(data))
	}
	return docs, nil
}
