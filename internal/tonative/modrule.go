package tonative

func modRule(r Rule, o Options) ([]any, error) {
	return nil, untranslatable("ModRules: not yet")
}
