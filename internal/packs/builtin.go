package packs

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// builtinFS holds the packs modwright embeds (builtin/<name>/).
//
//go:embed builtin
var builtinFS embed.FS

// The embedded packs, and the API group whose presence loads OpenShift's
// when its mode is auto.
const (
	BuiltinOpenShift = "openshift"
	OpenShiftGroup   = "route.openshift.io"
)

// builtinPrefix names an embedded pack where a pack source is taken.
const builtinPrefix = "builtin:"

// Builtin loads the embedded pack name (BuiltinOpenShift), as LoadDir
// loads a directory.
func Builtin(ctx context.Context, name, engineVersion string, timeout time.Duration) (*Pack, error) {
	dir := "builtin/" + name
	if _, err := fs.Stat(builtinFS, dir+"/metadata.yaml"); err != nil || strings.Contains(name, "/") {
		return nil, fmt.Errorf("no embedded pack %q (known: %s): %w", name, BuiltinOpenShift, fs.ErrNotExist)
	}
	return load(ctx, builtinPrefix+name, func(file string) ([]byte, error) {
		p := path.Join(dir, path.Clean("/"+file))
		return builtinFS.ReadFile(p)
	}, engineVersion, timeout)
}

// BuiltinSamples are an embedded pack's samples (file name to content).
func BuiltinSamples(name string) (map[string][]byte, error) {
	dir := "builtin/" + name + "/samples"
	entries, err := builtinFS.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := builtinFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}
