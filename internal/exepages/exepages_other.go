//go:build !linux

package exepages

import "errors"

// Release does nothing but on Linux: it returns errors.ErrUnsupported.
func Release() (Result, error) { return Result{}, errors.ErrUnsupported }
