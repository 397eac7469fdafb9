package graphapi

import (
	"encoding/json"
	"net/http"

	"github.com/modwright/modwright/internal/graph"
)

// Prefix is the path under which Handler serves.
const Prefix = "/api/v1alpha1/resources/"

// clusterNamespace stands for the namespace of cluster-scoped objects.
const clusterNamespace = "_"

// Reader is what the endpoint reads of the graph.
type Reader interface {
	Object(ref graph.Ref) (graph.Resource, bool)
	Incoming(ref graph.Ref) []graph.Edge
	Outgoing(ref graph.Ref) []graph.Edge
}

var _ Reader = (*graph.Graph)(nil)

// Edge is an edge as KubeAtlas' API gives it: its ends as resource IDs
// (namespace/Kind/name; /Kind/name for a cluster-scoped object).
type Edge struct {
	From       string            `json:"from"`
	To         string            `json:"to"`
	Type       string            `json:"type"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// Detail is a resource with its edges (GET .../{name}).
type Detail struct {
	Resource graph.Resource `json:"resource"`
	Incoming []Edge         `json:"incoming"`
	Outgoing []Edge         `json:"outgoing"`
}

// errorBody is KubeAtlas' error response.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// ID is a resource's ID in KubeAtlas' form.
func ID(r graph.Ref) string { return r.Namespace + "/" + r.Kind + "/" + r.Name }

func edges(es []graph.Edge) []Edge {
	out := make([]Edge, len(es)) // [] rather than null when empty
	for i, e := range es {
		out[i] = Edge{From: ID(e.From), To: ID(e.To), Type: e.Type, Attributes: e.Attributes.Map()}
	}
	return out
}

// Handler serves the read API under Prefix. An object is found when the
// graph holds it (a kind its informers watch) or when any edge reaches it
// (a Secret the graph knows only as a Pod's reference): its resource is
// then its kind, namespace and name.
func Handler(g Reader) http.Handler {
	mux := http.NewServeMux()
	find := func(w http.ResponseWriter, r *http.Request) (graph.Ref, graph.Resource, []graph.Edge, []graph.Edge, bool) {
		ref := graph.Ref{Kind: r.PathValue("kind"), Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		if ref.Namespace == clusterNamespace {
			ref.Namespace = ""
		}
		res, ok := g.Object(ref)
		in, out := g.Incoming(ref), g.Outgoing(ref)
		if !ok && len(in) == 0 && len(out) == 0 {
			write(w, http.StatusNotFound, errorBody{Error: "resource not found: " + ID(ref), Code: "not_found"})
			return ref, res, nil, nil, false
		}
		if !ok {
			res = graph.Resource{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		}
		return ref, res, in, out, true
	}
	mux.HandleFunc("GET "+Prefix+"{namespace}/{kind}/{name}", func(w http.ResponseWriter, r *http.Request) {
		if _, res, in, out, ok := find(w, r); ok {
			write(w, http.StatusOK, Detail{Resource: res, Incoming: edges(in), Outgoing: edges(out)})
		}
	})
	mux.HandleFunc("GET "+Prefix+"{namespace}/{kind}/{name}/incoming", func(w http.ResponseWriter, r *http.Request) {
		if _, _, in, _, ok := find(w, r); ok {
			write(w, http.StatusOK, edges(in))
		}
	})
	mux.HandleFunc("GET "+Prefix+"{namespace}/{kind}/{name}/outgoing", func(w http.ResponseWriter, r *http.Request) {
		if _, _, _, out, ok := find(w, r); ok {
			write(w, http.StatusOK, edges(out))
		}
	})
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		write(w, http.StatusBadRequest, errorBody{Error: "URL must be " + Prefix + "{namespace}/{kind}/{name}[/incoming|/outgoing]", Code: "invalid_argument"})
	})
	return mux
}

func write(w http.ResponseWriter, code int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
