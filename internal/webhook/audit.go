package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/modwright/modwright/internal/engine"
)

// maxAuditKey is the longest key of an audit annotation a webhook may
// return: the name part of a qualified name (the API server prefixes it
// with the webhook's name).
const maxAuditKey = 63

// auditAnnotations turns the rules' audit annotations into the response's:
// each key is <kind>.<namespace>.<name>.<key> in lower case (a rule's
// annotations cannot collide with another's), shortened with a hash when
// longer than a key may be. Values under one key (a rule's validation
// failures) are joined into a JSON array when they are JSON objects.
func auditAnnotations(as []engine.AuditAnnotation) map[string]string {
	m := make(map[string]string, len(as))
	for _, a := range as {
		k := auditKey(a)
		old, dup := m[k]
		switch {
		case !dup:
			m[k] = a.Value
		case strings.HasPrefix(old, "[") && strings.HasPrefix(a.Value, "{"):
			m[k] = old[:len(old)-1] + "," + a.Value + "]"
		case strings.HasPrefix(old, "{") && strings.HasPrefix(a.Value, "{"):
			m[k] = "[" + old + "," + a.Value + "]"
		default:
			m[k] = a.Value
		}
	}
	return m
}

func auditKey(a engine.AuditAnnotation) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(a.Kind))
	b.WriteByte('.')
	b.WriteString(strings.ReplaceAll(a.Rule, "/", "."))
	b.WriteByte('.')
	b.WriteString(a.Key)
	k := b.String()
	if len(k) <= maxAuditKey {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	h := hex.EncodeToString(sum[:4])
	// Keep the key's end (the annotation's own key) readable.
	tail := a.Key
	if len(tail) > maxAuditKey-len(h)-2 {
		tail = tail[len(tail)-(maxAuditKey-len(h)-2):]
	}
	head := k[:maxAuditKey-len(h)-len(tail)-2]
	return head + "." + h + "." + tail
}
