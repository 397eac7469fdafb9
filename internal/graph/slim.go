package graph

// Slim is what the graph needs of an object of a kind only the built-in
// extractors read: its identity, labels and owners, and the fields
// Extract and the SELECTS edges read (pod specs' volumes, containers' env
// and envFrom references, pull secrets and service account, selectors,
// an Ingress's backends, a claim's volume). The operator's informers keep
// this, not whole objects. Extract and the selectors give the same edges
// for Slim(obj) as for obj. obj is not modified; Slim shares its leaves.
func Slim(obj map[string]any) map[string]any {
	out := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
	if md, ok := obj["metadata"].(map[string]any); ok {
		out["metadata"] = pick(md, "name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences")
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return out
	}
	slimSpec := map[string]any{}
	switch str(obj, "kind") {
	case "Pod":
		slimSpec = slimPodSpec(spec)
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		slimSpec = pick(spec, "selector")
		if t, ok := spec["template"].(map[string]any); ok {
			if ps, ok := t["spec"].(map[string]any); ok {
				slimSpec["template"] = map[string]any{"spec": slimPodSpec(ps)}
			}
		}
	case "CronJob":
		if ps, ok := dig(spec, "jobTemplate", "spec", "template", "spec").(map[string]any); ok {
			slimSpec["jobTemplate"] = map[string]any{"spec": map[string]any{"template": map[string]any{"spec": slimPodSpec(ps)}}}
		}
	case "Service":
		slimSpec = pick(spec, "selector")
	case "Ingress":
		slimSpec = pick(spec, "defaultBackend", "rules")
	case "PersistentVolumeClaim":
		slimSpec = pick(spec, "volumeName")
	}
	if len(slimSpec) > 0 {
		out["spec"] = slimSpec
	}
	return out
}

// slimPodSpec keeps a pod spec's references.
func slimPodSpec(ps map[string]any) map[string]any {
	out := pick(ps, "volumes", "imagePullSecrets", "serviceAccountName", "serviceAccount")
	for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, ok := ps[field].([]any)
		if !ok {
			continue
		}
		slim := make([]any, 0, len(cs))
		for _, c := range cs {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			sc := pick(cm, "envFrom")
			if env, ok := cm["env"].([]any); ok {
				// Only references: a literal value is no edge.
				refs := make([]any, 0, len(env))
				for _, e := range env {
					if vf := dig(e, "valueFrom"); vf != nil {
						refs = append(refs, map[string]any{"valueFrom": vf})
					}
				}
				sc["env"] = refs
			}
			slim = append(slim, sc)
		}
		out[field] = slim
	}
	return out
}

// pick is m's members of the given names.
func pick(m map[string]any, names ...string) map[string]any {
	out := make(map[string]any, len(names))
	for _, n := range names {
		if v, ok := m[n]; ok {
			out[n] = v
		}
	}
	return out
}
