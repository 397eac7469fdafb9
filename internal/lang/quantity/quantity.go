package quantity

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/modwright/modwright/internal/lang"
)

const (
	// MaxExponent bounds the decimal exponent written after "e" or "E"
	// (either sign). Kubernetes represents magnitudes up to 2^63-1
	// (about 9.2e18) and nine decimal places; 10^±(MaxExponent) leaves
	// room for any quantity a manifest means and keeps every operation
	// on a parsed quantity to a few big-integer words.
	MaxExponent = 64
	// MaxDigits bounds the digits of the mantissa (before and after the
	// decimal point).
	MaxDigits = 64
)

// ErrOutOfRange is the error of a quantity beyond the bounds; it is in
// the chain of lang.ErrLimit.
var ErrOutOfRange = errors.New("quantity out of range")

// Parse is resource.ParseQuantity for a string within the bounds; a
// quantity-shaped string beyond them is refused with an error wrapping
// ErrOutOfRange (and lang.ErrLimit) before apimachinery parses it. Other
// strings fail as apimachinery fails them.
func Parse(s string) (resource.Quantity, error) {
	if err := Check(s); err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(s)
}

// Check returns an error wrapping ErrOutOfRange when s is shaped as a
// quantity (an optional sign, digits with an optional decimal point, an
// optional suffix) whose exponent or digits exceed the bounds; nil for
// every other string, quantity or not. It reads s once and allocates
// nothing unless it refuses.
func Check(s string) error {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && (isDigit(s[i]) || s[i] == '.'); i++ {
		if s[i] != '.' {
			digits++
		}
	}
	// No digit is no quantity, but apimachinery still reads an exponent
	// after nothing ("e11111111111110"): it is checked all the same.
	if digits > MaxDigits {
		return outOfRange(s, fmt.Sprintf("more than %d digits", MaxDigits))
	}
	if i == len(s) || (s[i] != 'e' && s[i] != 'E') {
		return nil // no exponent; an SI or binary suffix is bounded
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j == len(s) {
		return nil // "E" is the exa suffix
	}
	exp := 0
	for ; j < len(s); j++ {
		if !isDigit(s[j]) {
			return nil // not a quantity: apimachinery refuses it
		}
		exp = exp*10 + int(s[j]-'0')
		if exp > MaxExponent {
			return outOfRange(s, fmt.Sprintf("exponent beyond ±%d", MaxExponent))
		}
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// outOfRange names at most 32 bytes of s: the value may come from an
// object and be long.
func outOfRange(s, why string) error {
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return lang.Limit(fmt.Errorf("%w: %q: %s", ErrOutOfRange, s, why))
}

// CheckTree returns Check's error for the first string of a JSON value
// tree that it refuses: before a tree is decoded into Kubernetes' Go types,
// whose quantity fields apimachinery parses (and "1e-999999999" stalls
// there). Any quantity-shaped string counts, wherever it is: a name such
// as "1e999" is refused too (a false alarm only for such names, which no
// Go type then reads as a quantity).
func CheckTree(v any) error {
	switch x := v.(type) {
	case string:
		return Check(x)
	case []any:
		for _, e := range x {
			if err := CheckTree(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := CheckTree(e); err != nil {
				return err
			}
		}
	}
	return nil
}
