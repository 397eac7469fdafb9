package rules

// Key names a rule, or any object, as engine.RuleInfo.Key does:
// namespace/name, or the name alone without a namespace.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
