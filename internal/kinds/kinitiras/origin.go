package kinitiras

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/modwright/modwright/api/kinitiras/v1alpha1"
	bounded "github.com/modwright/modwright/internal/lang/quantity"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Origin overriders are structured overrides applied without CUE (new in
// kinitiras v0.4.5): each gives one replace operation on a Pod or a
// Deployment's pod template, computed from the object as the rule found
// it.

// Origin is one origin overrider.
type Origin = v1alpha1.OverrideRuleOrigin

// replaceOnly are the origin types whose only operation is replace.
var replaceOnly = map[v1alpha1.OverrideRuleOriginType]bool{
	"hostNetwork": true, "schedulerName": true, "affinity": true, "topologySpreadConstraints": true,
	"resourceRequirements": true, "resourceOversell": true,
}

var originTypes = map[v1alpha1.OverrideRuleOriginType]bool{
	"annotations": true, "labels": true, "nodeSelector": true, "tolerations": true,
}

// checkOrigins refuses what kinitiras fails on every request (an unknown
// type, add or remove where only replace is served) and what its policy
// webhook refuses (one container given both resourceRequirements and
// resourceOversell).
func checkOrigins(os []Origin, field string) []rules.FieldError {
	var errs []rules.FieldError
	counts := map[int]v1alpha1.OverrideRuleOriginType{}
	for i, o := range os {
		f := fmt.Sprintf("%s.origin[%d]", field, i)
		switch {
		case !originTypes[o.Type] && !replaceOnly[o.Type]:
			errs = append(errs, rules.FieldError{Field: f + ".type", Pos: -1, Msg: fmt.Sprintf("unknown origin type %q", o.Type)})
		case replaceOnly[o.Type] && (o.Operation == "add" || o.Operation == "remove"):
			errs = append(errs, rules.FieldError{Field: f + ".operation", Pos: -1, Msg: fmt.Sprintf("%s supports replace only, not %s", o.Type, o.Operation)})
		}
		if o.Type == "resourceRequirements" || o.Type == "resourceOversell" {
			if other, ok := counts[o.ContainerCount]; ok && other != o.Type {
				errs = append(errs, rules.FieldError{Field: f + ".containerCount", Pos: -1,
					Msg: fmt.Sprintf("container %d has both resourceRequirements and resourceOversell", o.ContainerCount)})
			}
			counts[o.ContainerCount] = o.Type
		}
	}
	return errs
}

// podSpecPath is where a Pod or a Deployment keeps its pod spec.
func podSpecPath(obj map[string]any) ([]string, error) {
	switch obj["kind"] {
	case "Pod":
		return []string{"spec"}, nil
	case "Deployment":
		return []string{"spec", "template", "spec"}, nil
	}
	return nil, errors.New("unsupported kind type error") // kinitiras' words
}

func podPtr(spec []string, rest ...string) string {
	return ptr(append(append([]string{}, spec...), rest...)...)
}

// originPatches are the operations of a rule's origin overriders, each
// computed from obj.
func originPatches(obj map[string]any, os []Origin) ([]any, error) {
	var out []any
	for i := range os {
		op, err := originPatch(obj, &os[i])
		if err != nil {
			return nil, fmt.Errorf("origin[%d] (%s): %w", i, os[i].Type, err)
		}
		out = append(out, op)
	}
	return out, nil
}

func originPatch(obj map[string]any, o *Origin) (any, error) {
	replace := func(path string, v any) (any, error) {
		tree, err := treeOf(v)
		if err != nil {
			return nil, err
		}
		return jsonPatch("replace", path, tree, true), nil
	}
	switch o.Type {
	case "annotations", "labels":
		m := o.Annotations
		if o.Type == "labels" {
			m = o.Labels
		}
		cur, err := stringMap(obj, "metadata", string(o.Type))
		if err != nil {
			return nil, err
		}
		return replace(ptr("metadata", string(o.Type)), merged(cur, m, o))
	}
	spec, err := podSpecPath(obj)
	if err != nil {
		return nil, err
	}
	switch o.Type {
	case "nodeSelector":
		cur, err := stringMap(obj, append(spec, "nodeSelector")...)
		if err != nil {
			return nil, err
		}
		return replace(podPtr(spec, "nodeSelector"), merged(cur, o.NodeSelector, o))
	case "hostNetwork":
		return replace(podPtr(spec, "hostNetwork"), o.HostNetwork)
	case "schedulerName":
		return replace(podPtr(spec, "schedulerName"), o.SchedulerName)
	case "affinity":
		return replace(podPtr(spec, "affinity"), o.Affinity)
	case "topologySpreadConstraints":
		return replace(podPtr(spec, "topologySpreadConstraints"), o.TopologySpreadConstraints)
	case "resourceRequirements":
		return replace(podPtr(spec, "containers", strconv.Itoa(o.ContainerCount), "resources"), o.ResourceRequirements)
	case "tolerations":
		var ps corev1.PodSpec
		if err := typed(obj, spec, &ps); err != nil {
			return nil, err
		}
		return replace(podPtr(spec, "tolerations"), tolerations(ps.Tolerations, o))
	case "resourceOversell":
		var ps corev1.PodSpec
		if err := typed(obj, spec, &ps); err != nil {
			return nil, err
		}
		if len(ps.Containers) == 0 {
			return nil, errors.New("containers not found in the pod spec")
		}
		if len(ps.Containers) <= o.ContainerCount {
			return nil, errors.New("containerCount cannot be greater than the number of containers in the pod")
		}
		return replace(podPtr(spec, "containers", strconv.Itoa(o.ContainerCount), "resources"), oversold(ps.Containers[o.ContainerCount].Resources, o.ResourceOversell))
	}
	return nil, fmt.Errorf("unknown origin type %q", o.Type)
}

// merged is a string map after the operation: replace (with Replace) the
// map itself; add or replace its keys; remove them.
func merged(cur, m map[string]string, o *Origin) map[string]string {
	if o.Replace {
		return m
	}
	switch o.Operation {
	case "add", "replace":
		if cur == nil {
			return m
		}
		maps.Copy(cur, m)
	case "remove":
		for k := range m {
			delete(cur, k)
		}
	}
	return cur
}

// tolerations are the pod's after the operation, as kinitiras merges them
// (a toleration is the same when its key, operator, value and effect are).
func tolerations(cur []corev1.Toleration, o *Origin) []corev1.Toleration {
	if o.Replace || (o.Operation == "add" || o.Operation == "replace") && len(cur) == 0 {
		return o.Tolerations
	}
	if o.Operation == "remove" && len(cur) == 0 {
		return nil
	}
	id := func(t corev1.Toleration) string {
		return t.Key + "\x00" + string(t.Operator) + "\x00" + t.Value + "\x00" + string(t.Effect)
	}
	given := map[string]bool{}
	var out []corev1.Toleration
	switch o.Operation {
	case "add", "replace":
		for _, t := range o.Tolerations {
			given[id(t)] = true
			out = append(out, t)
		}
	case "remove":
		for _, t := range o.Tolerations {
			given[id(t)] = true
		}
	}
	for _, t := range cur {
		if !given[id(t)] {
			out = append(out, t)
		}
	}
	return out
}

// oversold is a container's resources with each named request and limit
// times its factor (cpu in millicores, memory and storage in bytes; a zero
// quantity stays).
func oversold(r corev1.ResourceRequirements, factors map[string]map[string]v1alpha1.Float64) corev1.ResourceRequirements {
	scale := func(list corev1.ResourceList, fs map[string]v1alpha1.Float64) {
		for name, f := range fs {
			factor, err := strconv.ParseFloat(string(f), 64)
			if err != nil {
				continue
			}
			q := list[corev1.ResourceName(name)]
			switch corev1.ResourceName(name) {
			case corev1.ResourceCPU:
				if q.MilliValue() != 0 {
					list[corev1.ResourceName(name)] = *resource.NewMilliQuantity(int64(float64(q.MilliValue())*factor), resource.DecimalSI)
				}
			case corev1.ResourceMemory, corev1.ResourceStorage, corev1.ResourceEphemeralStorage:
				if q.Value() != 0 {
					list[corev1.ResourceName(name)] = *resource.NewQuantity(int64(float64(q.Value())*factor), resource.BinarySI)
				}
			}
		}
	}
	scale(r.Requests, factors["requests"])
	scale(r.Limits, factors["limits"])
	return r
}

// stringMap reads a map of strings at path (nil when absent).
func stringMap(obj map[string]any, path ...string) (map[string]string, error) {
	var cur any = obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, nil
		}
		if cur, ok = m[k]; !ok || cur == nil {
			return nil, nil
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%v is not a map of strings", path)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%v.%s is not a string", path, k)
		}
		out[k] = s
	}
	return out, nil
}

// typed decodes the pod spec at path into ps.
func typed(obj map[string]any, path []string, ps *corev1.PodSpec) error {
	var cur any = obj
	for _, k := range path {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil
	}
	// apimachinery parses the spec's quantities ("1e-999999999" stalls
	// there).
	if err := bounded.CheckTree(m); err != nil {
		return err
	}
	b, err := value.Encode(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ps)
}

// treeOf is a typed value as a JSON tree.
func treeOf(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return value.Decode(b)
}
