package translate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

func gkRule(t *testing.T, kind, text string) Rule {
	t.Helper()
	v, err := value.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return Rule{Kind: kind, Origin: "test", Object: v.(map[string]any)}
}

func TestGatekeeper(t *testing.T) {
	cel := gkRule(t, "ConstraintTemplate", `{"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate", "metadata": {"name": "k8sx"},
		"spec": {"crd": {"spec": {"names": {"kind": "K8sX"}}}, "targets": [{"target": "admission.k8s.gatekeeper.sh", "code": [
			{"engine": "K8sNativeValidation", "source": {"failurePolicy": "Ignore", "variables": [{"name": "v", "expression": "1"}], "validations": [{"expression": "variables.v == 1", "message": "m"}]}}]}]}}`)
	rego := gkRule(t, "ConstraintTemplate", `{"apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate", "metadata": {"name": "k8sy"},
		"spec": {"crd": {"spec": {"names": {"kind": "K8sY"}}}, "targets": [{"target": "admission.k8s.gatekeeper.sh", "rego": "package y\nviolation[{\"msg\": \"m\"}] { true }"}]}}`)
	constraint := func(kind, name, spec string) Rule {
		return gkRule(t, kind, `{"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "`+kind+`", "metadata": {"name": "`+name+`"}, "spec": `+spec+`}`)
	}
	long := strings.Repeat("n", 250)
	res := Gatekeeper([]Rule{cel, rego}, []Rule{
		constraint("K8sX", "deny", `{"match": {"labelSelector": {"matchLabels": {"a": "b"}}}}`),
		constraint("K8sX", "scoped", `{"enforcementAction": "scoped", "scopedEnforcementActions": [{"action": "warn", "enforcementPoints": [{"name": "vap.k8s.io"}]}, {"action": "deny", "enforcementPoints": [{"name": "validation.gatekeeper.sh"}]}]}`),
		constraint("K8sX", "dry", `{"enforcementAction": "dryrun"}`),
		constraint("K8sX", long, `{}`),
		constraint("K8sY", "rego", `{}`),
		constraint("K8sX", "webhook-only", `{"enforcementAction": "scoped", "scopedEnforcementActions": [{"action": "deny", "enforcementPoints": [{"name": "validation.gatekeeper.sh"}]}]}`),
	})
	var got []string
	for _, tr := range res.Translated {
		for _, o := range tr.Objects {
			md := o["metadata"].(map[string]any)
			spec := o["spec"].(map[string]any)
			line := o["kind"].(string) + " " + md["name"].(string)
			if as, ok := spec["validationActions"].([]any); ok {
				for _, a := range as {
					line += " " + a.(string)
				}
			}
			if fp, ok := spec["failurePolicy"]; ok {
				line += " " + fp.(string)
			}
			got = append(got, line)
		}
	}
	longName := "gatekeeper-k8sx-" + long
	longName = strings.TrimRight(longName[:244], "-.")
	want := []string{
		"ValidatingAdmissionPolicy gatekeeper-k8sx Ignore",
		"ValidatingAdmissionPolicyBinding gatekeeper-k8sx-deny Deny",
		"ValidatingAdmissionPolicyBinding gatekeeper-k8sx-scoped Warn",
		"ValidatingAdmissionPolicyBinding gatekeeper-k8sx-dry Audit",
	}
	if diff := cmp.Diff(want, got[:4]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if len(got) != 5 || !strings.HasPrefix(got[4], "ValidatingAdmissionPolicyBinding "+longName+"-") || len(strings.Fields(got[4])[1]) != 253 {
		t.Errorf("the long binding: got %q", got[4:])
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.Rule.Key()+": "+s.Reason)
	}
	wantSkipped := []string{
		"k8sy: the template has no K8sNativeValidation code (Rego has no admission policy equivalent)",
		"rego: its ConstraintTemplate gives no admission policy (no K8sNativeValidation code, generateVAP false, or not given)",
		"webhook-only: its scopedEnforcementActions name no vap.k8s.io enforcement point",
	}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	// The binding's selectors.
	b := res.Translated[1].Objects[0]["spec"].(map[string]any)["matchResources"].(map[string]any)
	if _, ok := b["objectSelector"]; !ok {
		t.Errorf("the labelSelector is not the binding's objectSelector: %v", b)
	}
}
