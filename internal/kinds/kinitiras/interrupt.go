package kinitiras

import (
	"encoding/json"
	"fmt"

	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// PatchOp is one JSON-patch operation on a policy.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// templates is what Render reads of a policy.
type templates struct {
	Kind string `json:"kind"`
	Spec struct {
		OverrideRules []struct {
			Overriders struct {
				Template *OverrideTemplate `json:"template"`
			} `json:"overriders"`
		} `json:"overrideRules"`
		ValidateRules []struct {
			Template *ValidateTemplate `json:"template"`
		} `json:"validateRules"`
	} `json:"spec"`
}

// Render is what the policy admission webhook does to a policy being
// created or updated (kinitiras' interrupter, OnMutating): each rule's
// template rendered into its renderedCue, and a condition's affectMode
// defaulted to reject. The patches are in rule order; a template that
// does not render gives a *rules.CompileError.
func Render(policy map[string]any) ([]PatchOp, error) {
	b, err := value.Encode(policy)
	if err != nil {
		return nil, err
	}
	var t templates
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Kind, err)
	}
	var out []PatchOp
	var errs []rules.FieldError
	for i, r := range t.Spec.OverrideRules {
		if r.Overriders.Template == nil {
			continue
		}
		field := fmt.Sprintf("spec.overrideRules[%d].overriders.template", i)
		src, es := RenderOverride(r.Overriders.Template, field)
		errs = append(errs, es...)
		out = append(out, PatchOp{"replace", fmt.Sprintf("/spec/overrideRules/%d/overriders/renderedCue", i), src})
	}
	for i, r := range t.Spec.ValidateRules {
		if r.Template == nil {
			continue
		}
		if c := r.Template.Condition; c != nil && c.AffectMode == "" {
			out = append(out, PatchOp{"replace", fmt.Sprintf("/spec/validateRules/%d/template/condition/affectMode", i), "reject"})
		}
		src, es := RenderValidate(r.Template, fmt.Sprintf("spec.validateRules[%d].template", i))
		errs = append(errs, es...)
		out = append(out, PatchOp{"replace", fmt.Sprintf("/spec/validateRules/%d/renderedCue", i), src})
	}
	if len(errs) > 0 {
		return nil, &rules.CompileError{Kind: t.Kind, Rule: policyKey(policy), Errors: errs}
	}
	return out, nil
}

func policyKey(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return rules.Key(ns, name)
}

// Check is what the policy admission webhook refuses (kinitiras'
// OnValidating): a policy that does not compile (its cue or renderedCue
// included) or whose templates do not render.
func Check(policy map[string]any, opts ...Option) error {
	if _, err := Compile(policy, opts...); err != nil {
		return err
	}
	_, err := Render(policy)
	return err
}
