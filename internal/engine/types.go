package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// LastAppliedAnnotation is kubectl's annotation of the configuration it
// last applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// ObjectReader reads the objects related to the one under admission (its
// Namespace, the Node a Pod is bound to) by reference, for the rules
// (Handle.Objects) and their kinds' inputs (InputRequest.Objects); it is
// declared here, where it is used, and implemented by the cluster's informer caches (package
// source/cluster) and by the CLI's --context objects.
//
// Get returns (nil, nil) when the object does not exist. The tree it returns
// is shared and read-only: readers copy what they expose. A reader that
// cannot read a kind at all (it does not cache it, say) returns an error
// wrapping ErrKindNotServed, which callers check with errors.Is.
//
// Later rule kinds will also want related objects by edge type (the Pods
// of a ReplicaSet, the Service of an Ingress): that belongs on a second,
// separate interface next to this one, so that readers serving only Get
// stay as they are.
type ObjectReader interface {
	Get(ctx context.Context, ref ObjectRef) (map[string]any, error)
}

// ErrKindNotServed is wrapped by the error of an ObjectReader asked for a
// kind it cannot read.
var ErrKindNotServed = errors.New("the object reader does not serve this kind")

// ObjectRef names one object. The version is the reader's: it returns the
// object in the version it holds.
type ObjectRef struct {
	Group     string // API group; "" for the core group
	Kind      string
	Namespace string // "" for cluster-scoped objects
	Name      string
}

func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

// Request is one admission request: the attributes the API server sends
// (admission.k8s.io/v1 AdmissionRequest, the same in v1beta1), in plain
// types that know no rule kind. The webhook fills every field from the
// review; the CLI fills what it knows offline (see each field). ModRules
// read Operation, Namespace, Kind and the object; the other attributes are
// there for the rule kinds and languages that read them.
type Request struct {
	// UID identifies the review; empty offline.
	UID string
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation rules.Operation
	// Name and Namespace of the object; Namespace is empty for
	// cluster-scoped objects (and for a Namespace itself), Name may be
	// empty on CREATE when the server generates it.
	Name, Namespace string
	// Kind is the object's type as the request was converted for the
	// webhook. An empty Kind.Kind is read from the object.
	Kind GroupVersionKind
	// Resource is the resource being admitted (apps/v1 deployments).
	// Offline (the CLI) it is empty: mapping a kind to its resource
	// takes the API server's discovery.
	Resource GroupVersionResource
	// SubResource is the subresource admitted ("status", "scale",
	// "binding"), empty for the resource itself.
	SubResource string
	// RequestKind, RequestResource and RequestSubResource are what the
	// client originally asked for, when the API server converted the
	// request to the version the webhook registered for; empty offline.
	RequestKind        GroupVersionKind
	RequestResource    GroupVersionResource
	RequestSubResource string
	// UserInfo is who makes the request; empty offline.
	UserInfo UserInfo
	// DryRun is true when the request will not be persisted.
	DryRun bool
	// Options is the operation's options as JSON text (CreateOptions,
	// UpdateOptions, DeleteOptions, or a CONNECT's options), nil when
	// absent.
	Options []byte
	// Object is the object for CREATE and UPDATE, OldObject the existing
	// one for UPDATE and DELETE; the engine evaluates Object, or OldObject
	// on DELETE. Each may be given decoded (a JSON tree, never modified) or
	// as JSON text in ObjectJSON / OldObjectJSON, decoded only when a rule
	// can apply.
	Object, OldObject         any
	ObjectJSON, OldObjectJSON []byte
	// ObjectUnchecked: ObjectJSON has not been checked to be JSON (the
	// webhook leaves that to its decoding). Evaluate checks it where it
	// does not decode it, and an error wraps ErrInvalidRequest either way.
	ObjectUnchecked bool
	// Phases are the phases run: Mutate alone where the API server
	// mutates (a mutating webhook), Validate alone where it validates (a
	// validating webhook: the object is final, after every mutation of
	// every admission plugin); zero runs both, as one offline answer does.
	Phases Phase
	// Background marks a background scan of an existing object (an audit),
	// not an admission: no rule's failure ends the evaluation (each is
	// recorded in Decision.Errors and its trace, whatever its failure
	// policy), so that every rule reports; kinds may tell it from an
	// admission (Handle.Request: Kyverno's policies with background: false
	// do not run).
	Background bool
	// Existing marks the evaluation of an object that exists already,
	// made when a rule acting on existing objects (RuleInfo.Existing)
	// comes or changes, not an admission; kinds may tell it (a Kyverno
	// MutatingPolicy then mutates its targets, trigger or not).
	Existing bool
	// Payload marks a JSON document that is not a Kubernetes object (a
	// Terraform plan, a Dockerfile's parse): only the rules that evaluate
	// payloads (IndexKeys.Payloads) run, whatever the document's members;
	// Kind, Name and Namespace are empty and Operation is CREATE.
	Payload bool
	// PatchStorage, when set, is where the decision's Patch is built
	// (patch.Differ.DiffTo) instead of storage of its own: a caller
	// answering many requests reuses it once done with each decision (the
	// webhook, once the patch is encoded).
	PatchStorage *patch.OpStorage
	// ObjectStorage, when set, lends the maps of the object Evaluate
	// decodes from ObjectJSON or OldObjectJSON (value.Storage), and the
	// copies of maps the rules' changes make (patch.Doc.LendCopies). The caller
	// recycles it only once done with the decision and everything from it
	// (the decision shares the object's maps) and when no evaluation was
	// left running: the webhook, once the response is encoded, unless the
	// review's deadline passed (a CUE program abandoned at the deadline may
	// still read the object) or the decision has Generated objects (a
	// generator keeps them, and they may share the object's values).
	ObjectStorage *value.Storage
}

// Authorizer decides whether a user may do something, as the API server's
// authorizers do (a SubjectAccessReview): rules that ask (CEL's
// `authorizer`) reach it through Handle.Authorizer. It is declared here,
// where the kernel carries it, and implemented by the cluster's
// SubjectAccessReview client (package source/cluster) and by test suites.
type Authorizer interface {
	Authorize(ctx context.Context, a AuthzAttributes) (allowed bool, reason string, err error)
}

// APIReader reads the API server by URL path, as a client with the
// operator's identity would: a Policy's apiCall context entry reaches it
// through Handle.API. It is declared here, where the kernel carries it, and
// implemented by the cluster's REST client (package source/cluster, with
// its timeout, size limit and cache) and offline by recorded responses.
// Call returns the response body (JSON). A call that cannot be answered
// offline wraps ErrNoAPIResponse.
type APIReader interface {
	Call(ctx context.Context, c APICall) ([]byte, error)
}

// APICall is one read: Method is GET or POST; Data the POST body (JSON).
type APICall struct {
	Method string
	Path   string
	Data   []byte
	// Owner is the namespace of the namespaced rule the call is made for
	// ("" for a cluster-scoped rule): a reader in the cluster makes it
	// only when that namespace's rule reader (docs/security.md) may.
	Owner string
}

// ErrNoReader is in the chain of the error of a rule reading data that no
// reader gives (offline, without --context or recorded responses): how the
// cluster would answer is unknown, so the CLI reports an unusable input,
// not a rejection. Kinds and languages make such errors with NoReader
// (lang.NoReader: the languages sit below the kernel).
var ErrNoReader = lang.ErrNoReader

// NoReader returns an error whose text is msg and in whose chain
// ErrNoReader is.
func NoReader(msg string) error { return lang.NoReader(msg) }

// Refusal reports whether err, an evaluation's error, is one the webhook
// answers by denying the object (a rule failed under failurePolicy Fail,
// a Reject or validation rule could not be decided): every front end
// then reports a rejection, as the cluster would. A rule that read data
// no reader gives offline (ErrNoReader) is not one: the input is
// incomplete.
func Refusal(err error) bool {
	return (errors.Is(err, ErrRuleFailed) || errors.Is(err, ErrUndecided)) && !errors.Is(err, ErrNoReader)
}

// ErrNoAPIResponse is wrapped by an APIReader's error when it has no
// answer for a call (offline: no recorded response; in the cluster: no
// API reader configured).
var ErrNoAPIResponse = errors.New("no response for the API call")

// ErrNoGlobalContextEntry is wrapped by a GlobalContextReader's error for
// an entry it does not hold.
var ErrNoGlobalContextEntry = errors.New("no such global context entry")

// RoleReader names the RBAC roles bound to a user, as Kyverno's
// request.roles ("namespace:name" Roles bound in namespace) and
// request.clusterRoles (ClusterRole names, bound cluster-wide or in
// namespace). Implemented by the cluster's RBAC informers and offline by
// --user-info.
type RoleReader interface {
	Roles(ctx context.Context, user UserInfo, namespace string) (roles, clusterRoles []string, err error)
}

// KindReader reads objects of any kind by apiVersion and kind, one by
// name or those a label selector picks: what a kinitiras reference
// (valueRef from k8s or owner) reads. It is implemented in the cluster by
// informer caches started per kind on first use, and offline by the
// context objects. Get returns (nil, nil) when the object does not exist;
// List's selector is in the label selector syntax (app=web,tier in (a,b));
// with limit > 0 it gives at most limit objects, which ones being the
// reader's choice (a caller with a bound asks one more than it keeps, to
// know it is passed, and the reader never copies the rest).
// The trees returned are shared and read-only.
type KindReader interface {
	GetKind(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error)
	ListKind(ctx context.Context, apiVersion, kind, namespace, selector string, limit int) ([]map[string]any, error)
}

// ImageReader reads the data of a container image from its registry, as
// Kyverno's image.GetMetadata gives it: image, resolvedImage, registry,
// repository, tag, digest, and the manifest and config as JSON trees. It
// is implemented in the cluster by an OCI client (its timeout, size limit
// and cache) and offline by the images a context file gives.
type ImageReader interface {
	ImageData(ctx context.Context, ref string) (map[string]any, error)
}

// GlobalContextReader reads the value of a global context entry (Kyverno's
// GlobalContextEntry), its projection when not "": offline the entries a
// test suite gives. An entry it does not hold is an error wrapping
// ErrNoGlobalContextEntry; a reader that holds none at all (offline
// without entries) wraps ErrNoReader.
type GlobalContextReader interface {
	GlobalContext(ctx context.Context, name, projection string) (any, error)
}

// GraphReader reads the relationship graph (docs/graph.md): the edges
// into and out of the object under admission (obj, as the request has it:
// its own edges out are derived from it, not from a stored copy), each a
// JSON tree {type, from: {kind, namespace, name}, to: {...}}. ModRules
// read them under syntheticRefs.edges. It is implemented offline by the
// graph of the context objects.
type GraphReader interface {
	Edges(ctx context.Context, ref ObjectRef, obj map[string]any) (incoming, outgoing []any, err error)
}

// InventoryReader gives the objects replicated from the cluster for rules
// that read its state as a whole (Gatekeeper's data.inventory): in the
// cluster the objects the operator is configured to sync, offline the
// context objects. Version changes whenever the objects do, so that what a
// kind derives from them can be kept until then.
type InventoryReader interface {
	Inventory(ctx context.Context) (version uint64, objects []map[string]any, err error)
}

// HTTPReader makes an HTTP request outside the cluster for a rule (a
// kinitiras http reference). The cluster's client allows only the hosts
// the operator lists, with a timeout, a size limit and a cache (a response
// is reused for MaxAge, or the client's own time when zero); offline,
// responses are recorded in the context.
type HTTPReader interface {
	Fetch(ctx context.Context, r HTTPRequest) (*HTTPResponse, error)
}

// SchemaReader types the values of kinds with a declared schema (custom
// resources, by their CRDs): TypedValue is value, found at path (object
// keys as strings, list indices as ints, root first) in an object of
// apiVersion and kind, as an expression typed by the schema at that place
// sees it (a CEL value, as the API server binds a CRD rule's self there);
// ok is false when no schema of the kind is known or it does not type
// the place. A Policy's scoped CEL validation binds self and oldSelf so.
// It is implemented by crdschema.Set (the CLI's --crd) and in the cluster
// by the operator's cache of CustomResourceDefinitions.
type SchemaReader interface {
	// Types reports whether a schema of apiVersion and kind is known (a
	// rule skips the typing of other kinds' values at once).
	Types(apiVersion, kind string) bool
	TypedValue(apiVersion, kind string, path []any, value any) (typed any, ok bool)
}

// HTTPRequest is one request: Method is GET when empty.
type HTTPRequest struct {
	Method, URL string
	Header      map[string]string
	Body        []byte
	MaxAge      time.Duration
	// CABundle is a PEM bundle of the CAs that verify the server's
	// certificate; empty: the system's roots.
	CABundle []byte
}

// HTTPResponse is a response read whole.
type HTTPResponse struct {
	Status int
	Header map[string][]string
	Body   []byte
}

// AuthzAttributes is one question to an Authorizer: may User do Verb on a
// resource (ResourceRequest) or a non-resource Path?
type AuthzAttributes struct {
	User                                  UserInfo
	Verb                                  string
	ResourceRequest                       bool
	Group, Version, Resource, Subresource string
	Namespace, Name                       string
	Path                                  string
}

// GroupVersionKind names a type: group "" is the core group.
type GroupVersionKind struct{ Group, Version, Kind string }

// GroupVersionResource names a resource: group "" is the core group.
type GroupVersionResource struct{ Group, Version, Resource string }

// UserInfo is the identity of the requester, as the API server
// authenticated it.
type UserInfo struct {
	Username string
	UID      string
	Groups   []string
	// Extra holds the authenticator's other attributes (scopes, ...).
	Extra map[string][]string
}

// Decision is the outcome of evaluating one request.
type Decision struct {
	// Object is the object after every applied rule: the input itself (not a
	// copy) when nothing changed. It shares every subtree the rules did not
	// touch with the input (and may share values with the rules), so treat
	// it as read-only. When the request gave the object only as JSON text,
	// Evaluate does not decode what no rule reads (the webhook reads only
	// Patch): Object is nil when no rule could apply, that text left in
	// ObjectJSON, and otherwise lacks the object's metadata.managedFields
	// (which rules never see and Patch never touches). DecodeObject returns
	// the whole object in every case.
	Object any
	// Patch turns the input object into Object (RFC 6902).
	Patch []patch.Operation
	// Applied names the Mutate rules whose operations were applied, in
	// order, with or without a trace.
	Applied []RuleRef
	// Rejections lists the rules that rejected the object, in evaluation
	// order.
	Rejections []Rejection
	// Warnings are what Validate rules warned about, in evaluation order.
	Warnings []Warning
	// AuditAnnotations are what rules added to the request's audit
	// record, in evaluation order.
	AuditAnnotations []AuditAnnotation
	// Generated are the objects rules ask to exist beside the reviewed one
	// (Kyverno's generate rules), in evaluation order: a front end creates
	// them once the request is allowed (the operator), prints them (apply)
	// or compares them (test). On a DELETE they are the synchronized
	// objects that go with the deleted object (their identity only).
	Generated []Generated
	// Trace has one entry per rule considered, in evaluation order.
	Trace []RuleTrace
	// Errors lists what went wrong while applying rules: a rule that failed
	// is skipped as a whole, and the others still run.
	Errors []RuleError
	// ObjectJSON is the request's JSON text of the object when Evaluate
	// left it undecoded (Object is then nil); nil otherwise.
	ObjectJSON []byte
	// ManagedFieldsJSON is the request's JSON text of the object's
	// metadata.managedFields when Object was decoded without them; nil
	// otherwise.
	ManagedFieldsJSON []byte
}

// Allowed reports whether no rule rejected the object.
func (d *Decision) Allowed() bool { return len(d.Rejections) == 0 }

// Changed reports whether the rules changed the object.
func (d *Decision) Changed() bool { return len(d.Patch) > 0 }

// DenialText lists the rejections as KubeMod does:
// `ns/name: "message"` (or `ns/name` without a message), joined by ","
// without a space, exactly as KubeMod's webhook joins them.
func (d *Decision) DenialText() string {
	parts := make([]string, len(d.Rejections))
	for i, r := range d.Rejections {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// DenialMessage is the message a denied request gets. For each kind of
// rule that rejected it, in the order of their first rejection,
// "operation rejected by the following <Kind>(s): " and the list of
// DenialText; kinds are separated by "; ". When only ModRules rejected, it
// is KubeMod webhook's text byte for byte. Standalone rejections (their
// peer's own wording, Gatekeeper's "[name] message") are given as they
// are, joined by newlines as Gatekeeper joins them, in the place of the
// first of them.
func (d *Decision) DenialMessage() string {
	if len(d.Rejections) == 0 {
		return ""
	}
	const standalone = "\x00standalone"
	var kinds []string
	for _, r := range d.Rejections {
		k := r.Kind
		if r.Standalone {
			k = standalone
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString("; ")
		}
		if k == standalone {
			n := 0
			for _, r := range d.Rejections {
				if r.Standalone {
					if n > 0 {
						b.WriteByte('\n')
					}
					b.WriteString(r.Message)
					n++
				}
			}
			continue
		}
		b.WriteString("operation rejected by the following ")
		b.WriteString(k)
		b.WriteString("(s): ")
		n := 0
		for _, r := range d.Rejections {
			if r.Kind != k || r.Standalone {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteString(r.String())
			n++
		}
	}
	return b.String()
}

// DecodeObject returns Object whole: after decoding ObjectJSON into it when
// Evaluate left the object undecoded (given as JSON text, and no rule could
// apply), or the metadata.managedFields it was decoded without back in it
// (where the result's metadata is an object, as Evaluate restores them).
// The error wraps ErrInvalidRequest when that text is not JSON. Like the
// rest of the Decision, it is not safe for concurrent use.
func (d *Decision) DecodeObject() (any, error) {
	if d.Object == nil && d.ObjectJSON != nil {
		v, err := decodeObject(d.ObjectJSON)
		if err != nil {
			return nil, err
		}
		d.Object, d.ObjectJSON = v, nil
	}
	if d.ManagedFieldsJSON != nil {
		mf, err := decodeObject(d.ManagedFieldsJSON) // checked by Evaluate
		if err != nil {
			return nil, err
		}
		d.ManagedFieldsJSON = nil
		root, _ := d.Object.(map[string]any)
		if md, ok := root["metadata"].(map[string]any); ok {
			// Copies: Object shares its containers with the input.
			md = maps.Clone(md)
			md["managedFields"] = mf
			root = maps.Clone(root)
			root["metadata"] = md
			d.Object = root
		}
	}
	return d.Object, nil
}

// Rejection is one rule that rejected the object.
type Rejection struct {
	Kind string // the rule's kind ("ModRule")
	Rule string
	// Message is the rendered rejectMessage; empty when the rule has none or
	// it failed to render (MessageError then says why).
	Message      string
	MessageError error
	// Reason and Code are the status of the denial (Invalid, 422) when the
	// kind gives one (Handle.Deny); empty: the webhook's default
	// (Forbidden, 403).
	Reason string
	Code   int
	// Standalone: Message is the whole denial as the rule's peer words it
	// (Handle.RejectStandalone); DenialMessage gives it as it is.
	Standalone bool
}

// AuditAnnotation is one audit annotation a rule added.
type AuditAnnotation struct {
	Kind, Rule string
	Key, Value string
}

// RuleRef names a rule: its kind and namespace/name.
type RuleRef struct{ Kind, Key string }

func (r RuleRef) String() string { return r.Key }

// Generated is an object one rule asks to exist.
type Generated struct {
	Kind, Rule string
	// Name is the inner rule that generated it, if the rule has inner
	// rules (a Kyverno policy's rule name).
	Name string
	// Object is the whole object: apiVersion, kind, metadata (name,
	// namespace, labels) and content. Treat it as read-only.
	Object map[string]any
	// Synchronize: keep the object as the rule says (recreate it when
	// deleted, overwrite changes, delete it with its trigger); otherwise
	// create it once when it does not exist.
	Synchronize bool
	// Patch, when set, makes this an existing object the rule changed (a
	// mutate of existing objects): Patch (RFC 6902, its first operation a
	// test of the resourceVersion read) turns the object as the rule read
	// it into Object.
	Patch []patch.Operation
}

// Warning is what one rule warned about.
type Warning struct {
	Kind, Rule string
	Message    string
}

func (r Rejection) String() string {
	if r.Message == "" {
		return r.Rule
	}
	return r.Rule + ": " + strconv.Quote(r.Message)
}

// Outcome says what happened to a rule.
type Outcome string

// Outcomes.
const (
	Matched    Outcome = "matched"     // the rule applied (Mutate: its operations were applied)
	NotMatched Outcome = "not-matched" // the rule did not apply
	Failed     Outcome = "failed"      // it applied, but could not be carried out (see Reason)
	Skipped    Outcome = "skipped"     // not evaluated (see Reason)
)

// RuleTrace records how one rule was evaluated.
type RuleTrace struct {
	Kind  string
	Rule  string
	Tier  int
	Phase Phase
	Outcome
	// Reason explains Skipped and Failed outcomes.
	Reason string
	// Ops are the operations a matching Mutate rule produced (applied
	// unless the outcome is Failed).
	Ops []patch.Operation
	// LastAppliedErr is set when the rule's operations could not be
	// mirrored into the last-applied-configuration annotation.
	LastAppliedErr error
	// Detail is the kind's own record of its steps (package
	// internal/kinds/modrule: *modrule.Trace), which its explainer
	// prints; nil when the kind recorded none.
	Detail any
}

// RuleError is a rule that failed while being applied.
type RuleError struct {
	Kind  string // the rule's kind; empty for the errors of no rule (an Input's)
	Rule  string
	Field string // spec.patch[i], or "" for the rule as a whole
	Err   error
	// LastApplied is true when the failure concerns only the
	// last-applied-configuration copy; the object itself was patched.
	LastApplied bool
}

func (e RuleError) Error() string {
	where := e.Rule
	if e.Field != "" {
		where += " " + e.Field
	}
	if e.LastApplied {
		return fmt.Sprintf("%s (last-applied-configuration): %v", where, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e RuleError) Unwrap() error { return e.Err }
