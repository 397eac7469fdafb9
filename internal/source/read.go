package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxManifestBytes bounds one manifest file, and standard input: nothing
// read is larger, whatever the path names (a device such as /dev/zero, a
// runaway pipe). 64 MiB is far above any real manifest (the API server
// stores objects of at most 1.5 MiB) and keeps the decoded trees within a
// few hundred MiB.
const MaxManifestBytes = 64 << 20

// ErrNotRegular marks a path that names neither a regular file nor a
// directory (a FIFO, a device, a socket): reading it could block forever
// or never end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks input larger than MaxManifestBytes.
var ErrTooLarge = errors.New("input too large")

// ReadFile reads a regular file of at most MaxManifestBytes. Symbolic links
// are followed; anything else that is not a regular file is refused before
// it is opened, so a FIFO never blocks the reader. Errors wrap
// ErrInvalidManifest and, where they apply, ErrNotRegular or ErrTooLarge.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := checkRegular(path, st); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	defer f.Close()
	// The path may have been replaced between Stat and Open.
	if st, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := checkRegular(path, st); err != nil {
		return nil, err
	}
	return readLimited(path, f, st.Size())
}

func checkRegular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%w: %s: %w (%s); only regular files and directories are read", ErrInvalidManifest, path, ErrNotRegular, fileType(st.Mode()))
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.Type().String()
}

// ReadLimited reads r to its end, refusing more than MaxManifestBytes;
// name says what r is in errors ("standard input", a path).
func ReadLimited(name string, r io.Reader) ([]byte, error) { return readLimited(name, r, 0) }

// readLimited is ReadLimited of a reader of about size bytes (a file's
// size): read into one buffer of that size, not one doubled as it fills.
func readLimited(name string, r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	// bytes.MinRead spare: the read that finds the end needs no growth.
	buf.Grow(int(min(max(size, 0), MaxManifestBytes)) + bytes.MinRead + 1)
	_, err := buf.ReadFrom(io.LimitReader(r, MaxManifestBytes+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: reading %s: %v", ErrInvalidManifest, name, err)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %s: %w: more than %d MiB", ErrInvalidManifest, name, ErrTooLarge, MaxManifestBytes>>20)
	}
	return data, nil
}
