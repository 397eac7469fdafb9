package lang

// MatchWildcard reports whether name matches pattern, where "*" matches any text
// and "?" any one character, as Kyverno's wildcards (its condition operators and its wildcard JMESPath function); the match takes
// time linear in len(pattern) × len(name) (no backtracking blow-up on
// patterns with many stars).
func MatchWildcard(pattern, name string) bool {
	if pattern == "" {
		return name == ""
	}
	p, s := []rune(pattern), []rune(name)
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
