package policy

func extractImages(kind string, obj map[string]any) (map[string]any, error) { return nil, nil }
