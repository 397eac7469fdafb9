package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/api/v1beta1"
)

// laterMutator is a mutating webhook of someone else's that runs after
// modwright's (its configuration's name sorts after "modwright"): it
// annotates ConfigMaps labelled sneak=yes with sneaky=true.
func laterMutator(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var rv admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rv); err != nil || rv.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(rv.Request.Object.Raw, &cm)
		resp := &admissionv1.AdmissionResponse{UID: rv.Request.UID, Allowed: true}
		if cm.Labels["sneak"] == "yes" {
			op := `{"op": "add", "path": "/metadata/annotations", "value": {"sneaky": "true"}}`
			if cm.Annotations != nil {
				op = `{"op": "add", "path": "/metadata/annotations/sneaky", "value": "true"}`
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte("["+op+"]"), &pt
		}
		rv.Response, rv.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&rv)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestValidationsSeeLaterMutations (issue 28, item 12): a rule's
// validations run in modwright's validating webhook, on the object the API
// server stores, so a mutating webhook that runs after modwright's
// mutations cannot slip an object past them: a Policy validation and a
// ModRule Reject rule each refuse what the later webhook wrote, and
// modwright's own mutation still applies.
func TestValidationsSeeLaterMutations(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	a := cl.startOperator(t, "a")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	for _, ns := range []string{"team-p", "team-m"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metaName(ns)})
	}

	later := laterMutator(t)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: later.Certificate().Raw})
	none := admissionregv1.SideEffectClassNone
	fail := admissionregv1.Fail
	url := later.URL + "/mutate"
	if err := c.Create(ctx, &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "zz-later-mutator"},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    "later.example.com",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: &url, CABundle: ca},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
				Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"team-p", "team-m"}}}},
		}},
	}); err != nil {
		t.Fatal(err)
	}

	create(t, c, policy(t, "team-p", "no-sneaky", configMaps+`
mutations:
- jsonPatch: "[JSONPatch{op: 'add', path: '/metadata/labels/checked', value: 'yes'}]"
validations:
- cel: "!has(object.metadata.annotations) || !('sneaky' in object.metadata.annotations)"
  message: no sneaky annotations
`))
	create(t, c, &v1beta1.ModRule{ObjectMeta: metav1.ObjectMeta{Namespace: "team-m", Name: "no-sneaky"}, Spec: v1beta1.ModRuleSpec{
		Type:          v1beta1.ModRuleTypeReject,
		Match:         []v1beta1.MatchItem{{Select: "$.metadata.annotations.sneaky", MatchValue: ptr("true")}},
		RejectMessage: ptr("no sneaky annotations (ModRule)"),
	}})

	// Without the later webhook's annotation, the Policy admits and
	// patches; wait until both rules serve.
	eventually(t, 30*time.Second, func() error {
		cm := configMap("team-p", "plain", map[string]string{"app": "plain"})
		if err := c.Create(ctx, cm, client.DryRunAll); err != nil {
			return err
		}
		if cm.Labels["checked"] != "yes" {
			return errString("the Policy's mutation is not served yet")
		}
		return nil
	})
	for _, tc := range []struct{ ns, want string }{
		{"team-p", "no sneaky annotations"},
		{"team-m", "no sneaky annotations (ModRule)"},
	} {
		eventually(t, 30*time.Second, func() error {
			err := c.Create(ctx, configMap(tc.ns, "sneak", map[string]string{"sneak": "yes"}), client.DryRunAll)
			switch {
			case err == nil:
				return errString("a ConfigMap the later webhook annotated was admitted in " + tc.ns)
			case !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err) && !strings.Contains(err.Error(), "denied"):
				return err
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"dragnet.modwright.io"`):
				t.Fatalf("%s: denied by %v; want modwright's validating dragnet: %s", tc.ns, err, tc.want)
			}
			return nil
		}, func() string { return a.log.tail(20) })
	}
	// The validating webhook is the one that answered: the mutating one
	// admits the same object.
	cm := configMap("team-m", "plain", nil)
	if err := c.Create(ctx, cm); err != nil {
		t.Errorf("a ConfigMap the later webhook left alone: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
