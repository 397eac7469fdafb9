package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/value"
)

// ErrInvalidManifest marks unreadable or malformed input.
var ErrInvalidManifest = errors.New("invalid manifest")

// Document is one object read from a manifest: a kinds.Manifest (its
// Origin names the file and the line its document starts on, as editors
// and compilers do: "file.yaml:12", or "file.yaml:12, item 3" for an
// element of a List; "file.yaml, document 2" when the line is unknown).
type Document = kinds.Manifest

// manifestExt lists the file endings read from directories.
var manifestExt = []string{".yaml", ".yml", ".json"}

// ReadPaths reads every manifest at the given paths, in order: files as
// given, directories recursively (files ending in .yaml, .yml or .json, in
// lexical order), and "-" for stdin.
func ReadPaths(paths []string, stdin io.Reader) ([]Document, error) {
	var docs []Document
	for _, p := range paths {
		if p == "-" {
			if stdin == nil {
				return nil, fmt.Errorf("%w: standard input is not available", ErrInvalidManifest)
			}
			data, err := ReadLimited("standard input", stdin)
			if err != nil {
				return nil, err
			}
			d, err := ParseManifest("<stdin>", data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := ReadFile(f)
			if err != nil {
				return nil, err
			}
			d, err := ParseManifest(f, data)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

func expand(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if !st.IsDir() {
		if err := checkRegular(p, st); err != nil {
			return nil, err
		}
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && slices.Contains(manifestExt, strings.ToLower(filepath.Ext(path))) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	slices.Sort(files)
	return files, nil
}

// ParseManifest splits YAML or JSON text into documents, expands `kind: List`
// (and any other *List kind with items) and skips empty documents.
func ParseManifest(name string, data []byte) ([]Document, error) {
	// Split first (cheap), then decode the documents in parallel: YAML
	// decoding is most of the time it takes to load thousands of rules.
	spans, err := splitDocuments(name, data)
	if err != nil {
		return nil, err
	}
	type chunk struct {
		docSpan
		docs []Document
		err  error
	}
	chunks := make([]chunk, 0, len(spans))
	for _, s := range spans {
		if firstContent(s.text) != nil {
			chunks = append(chunks, chunk{docSpan: s})
		}
	}
	ForEach(len(chunks), func(i int) {
		c := &chunks[i]
		c.docs, c.err = parseDocument(name, c.n, c.line, c.text)
		for j := range c.docs {
			d := &c.docs[j]
			d.Path, d.Line, d.Text = name, c.line, c.text
		}
	})
	docs := make([]Document, 0, len(chunks))
	for i := range chunks {
		if chunks[i].err != nil {
			return nil, chunks[i].err
		}
		docs = append(docs, chunks[i].docs...)
	}
	return docs, nil
}

// origin names document n of file name, starting on line (0: unknown).
func origin(name string, n, line int) string {
	if line <= 0 {
		return fmt.Sprintf("%s, document %d", name, n)
	}
	return fmt.Sprintf("%s:%d", name, line)
}

// syntaxError names where in file name a syntax error of document n,
// which starts on line (0: unknown), is: the file's line, where the YAML
// library counts from the document's start and says so in its message
// only ("yaml: line 3: mapping values are not allowed in this context").
func syntaxError(name string, n, line int, err error) error {
	msg := err.Error()
	const mark = "yaml: line "
	i := strings.Index(msg, mark)
	if line <= 0 || i < 0 {
		return fmt.Errorf("%w: %s: %v", ErrInvalidManifest, origin(name, n, line), err)
	}
	digits, rest, ok := strings.Cut(msg[i+len(mark):], ": ")
	at, aerr := strconv.Atoi(digits)
	if !ok || aerr != nil || at < 1 {
		return fmt.Errorf("%w: %s: %v", ErrInvalidManifest, origin(name, n, line), err)
	}
	return fmt.Errorf("%w: %s:%d: %s", ErrInvalidManifest, name, line+at-1, rest)
}

// parseDocument decodes document n of file name, which starts on line of
// the file (0: unknown); a List gives one Document per item.
func parseDocument(name string, n, line int, text []byte) ([]Document, error) {
	origin := origin(name, n, line)
	v, j, err := decodeChunk(text)
	if err != nil {
		return nil, syntaxError(name, n, line, err)
	}
	if v == nil {
		return nil, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: expected an object, found a JSON %s", ErrInvalidManifest, origin, value.TypeName(v))
	}
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kindOf(obj), "List") {
		docs := make([]Document, 0, len(items))
		for i, it := range items {
			io := fmt.Sprintf("%s, item %d", origin, i+1)
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: %s: expected an object, found a JSON %s", ErrInvalidManifest, io, value.TypeName(it))
			}
			d, err := newDocument(io, m)
			if err != nil {
				return nil, err
			}
			d.FieldPrefix = fmt.Sprintf("items[%d].", i)
			docs = append(docs, d)
		}
		return docs, nil
	}
	if kindOf(obj) == "" {
		return nil, fmt.Errorf("%w: %s: the object has no kind", ErrInvalidManifest, origin)
	}
	// j is the document's JSON text already: no need to encode obj again.
	return []Document{{Origin: origin, Object: obj, JSON: j}}, nil
}

// decodeChunk decodes one document, returning it and its JSON text. JSON
// is decoded as JSON, so that numbers keep their exact text; YAML goes
// through sigs.k8s.io/yaml as with kubectl, unless it is in the block
// subset (decodeBlockYAML), which gives the same tree faster.
func decodeChunk(chunk []byte) (any, []byte, error) {
	if t := firstContent(chunk); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if v, err := value.Decode(t); err == nil {
			j, err := value.Encode(v) // compact
			return v, j, err
		}
	}
	if v, ok := decodeBlockYAML(chunk); ok {
		j, err := value.Encode(v)
		return v, j, err
	}
	j, err := yaml.YAMLToJSON(chunk)
	if err != nil {
		return nil, nil, err
	}
	v, err := value.Decode(j)
	return v, j, err
}

func newDocument(origin string, obj map[string]any) (Document, error) {
	if kindOf(obj) == "" {
		return Document{}, fmt.Errorf("%w: %s: the object has no kind", ErrInvalidManifest, origin)
	}
	j, err := value.Encode(obj)
	if err != nil {
		return Document{}, fmt.Errorf("%w: %s: %v", ErrInvalidManifest, origin, err)
	}
	return Document{Origin: origin, Object: obj, JSON: j}, nil
}

func kindOf(obj map[string]any) string { s, _ := obj["kind"].(string); return s }

// firstContent returns the first line of b that is not blank, a full-line
// YAML comment or a document marker ("---"), trimmed; nil when there is
// none (a document holding only comments is empty). It allocates nothing.
func firstContent(b []byte) []byte {
	for line := range bytes.Lines(b) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) {
			continue
		}
		return t
	}
	return nil
}

// ReadPayload reads a JSON payload: one JSON or YAML document that need
// not be a Kubernetes object (no kind), a top-level object, as Kyverno's
// CLI reads its jsonPayloads.
func ReadPayload(path string) (map[string]any, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	spans, err := splitDocuments(path, data)
	if err != nil {
		return nil, err
	}
	var v any
	n := 0
	for _, s := range spans {
		if firstContent(s.text) == nil {
			continue
		}
		if n++; n > 1 {
			return nil, fmt.Errorf("%w: %s: a payload is one document, this file holds more", ErrInvalidManifest, path)
		}
		if v, _, err = decodeChunk(s.text); err != nil {
			return nil, syntaxError(path, 1, s.line, err)
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, fmt.Errorf("%w: %s: the payload is empty", ErrInvalidManifest, path)
		}
		return nil, fmt.Errorf("%w: %s: a payload is a top-level object, not a JSON %s", ErrInvalidManifest, path, value.TypeName(v))
	}
	return obj, nil
}
