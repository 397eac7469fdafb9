package kinitiras

// DirectOverride runs an annotations or labels template natively; ok is
// false for the other types.
func DirectOverride(t *OverrideTemplate, obj, old any, extra map[string]any) (ops []any, ok bool) {
	n := newDirectMetadata(t)
	if n == nil {
		return nil, false
	}
	return n.patches(&sources{object: obj, oldObject: old, hasOld: true, extra: extra}), true
}

// DirectValidate runs a condition template natively (old: nil when the
// request has no old object); ok is false when it does not run so.
func DirectValidate(t *ValidateTemplate, obj, old any, extra map[string]any) (valid bool, reason string, err error, ok bool) {
	n := newDirectCondition(t)
	if n == nil {
		return false, "", nil, false
	}
	valid, reason, err = n.validate(&sources{object: obj, oldObject: old, hasOld: old != nil, extra: extra})
	return valid, reason, err, true
}
