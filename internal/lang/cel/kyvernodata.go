package cel

import (
	"bytes"
	"crypto/md5"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/value"
)

// Kyverno's CEL libraries that read data, as Kyverno's CEL policies
// declare them (Language.KyvernoData), each a variable whose members read
// through the KyvernoData bound to it for one evaluation
// (BindKyvernoData):
//
//   - resource: Get, List and Post of objects by apiVersion and resource
//     (a plural, "configmaps"), in any namespace for a cluster-scoped
//     policy, in its own for a namespaced one (the namespace argument
//     left out), as Kyverno's resource library; ToGVR(apiVersion, kind)
//     names a kind's resource (a schema.GroupVersionResource, which Get
//     and List take in place of the apiVersion and resource);
//   - image: GetMetadata(ref), the image's data from its registry (image,
//     resolvedImage, registry, repository, tag, digest, manifest, config);
//   - http: Get(url[, headers]), Post(url, data[, headers]) and
//     Client(caBundle), each answered as {statusCode, ...the JSON body};
//   - globalContext: Get(name[, projection]).
//
// Kyverno 1.18's lower-case spellings (get, list, post, getMetadata,
// client) are declared too. The libraries that read nothing but their
// arguments are constants: json.unmarshal(s) and json.marshal(v),
// yaml.parse(s) (numbers as doubles, as Kyverno's), x509.decode(pem) (a
// certificate or certificate request, RSA keys only, as Kyverno's),
// time.now(), time.truncate(t, d), time.toCron(t), math.round(x, digits),
// sha1, sha256 and md5 (also hash.sha1, ...) of a string in hex, and the
// gzip, random and transform libraries (kyvernomore.go).

// The variables of Kyverno's data libraries.
const (
	VarResource      = "resource"
	VarImageData     = "image"
	VarHTTP          = "http"
	VarGlobalContext = "globalContext"
)

// DataScope is whether a Language declares Kyverno's data libraries, and
// with the resource library of which scope.
type DataScope uint8

const (
	NoData         DataScope = iota
	ClusterData              // resource.Get(apiVersion, resource, namespace, name)
	NamespacedData           // resource.Get(apiVersion, resource, name): the policy's namespace
)

// KyvernoData answers Kyverno's data libraries for one evaluation (its
// reads carry the evaluation's context and the policy's owner; bound with
// BindKyvernoData). Errors fail the expression; the libraries wrap them,
// so errors.Is sees through.
type KyvernoData interface {
	// GetResource is one object of resource in apiVersion; (nil, nil) when
	// it does not exist. namespace is "" for cluster-scoped resources.
	GetResource(apiVersion, resource, namespace, name string) (map[string]any, error)
	// ListResources lists them ({items: [...]}), those with labels when
	// not empty.
	ListResources(apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error)
	// PostResource creates data (a SubjectAccessReview, say) and returns
	// the answer.
	PostResource(apiVersion, resource, namespace string, data map[string]any) (map[string]any, error)
	// ImageData is the data of an image reference.
	ImageData(image string) (map[string]any, error)
	// HTTP makes a request (body nil for a GET) and returns Kyverno's
	// answer: the JSON body, an object, with statusCode added, else
	// {body, statusCode}.
	HTTP(method, url string, body any, headers map[string]string, caBundle string) (any, error)
	// GlobalContext is the value of a global context entry (projection:
	// "" for the whole).
	GlobalContext(name, projection string) (any, error)
	// ResourceFor is the resource (a plural) of kind in apiVersion.
	ResourceFor(apiVersion, kind string) (string, error)
}

var (
	resourceType      = types.NewOpaqueType("resource.Context")
	imageDataType     = types.NewOpaqueType("imagedata.Context")
	httpType          = types.NewOpaqueType("http.Context")
	globalContextType = types.NewOpaqueType("globalcontext.Context")
	gvrType           = types.NewOpaqueType("schema.GroupVersionResource")
	jsonType          = types.NewOpaqueType("json.Json")
	yamlType          = types.NewOpaqueType("yaml.Yaml")
)

// dataVal is a KyvernoData as one library's variable (an http client
// with its CA bundle, once Client gave one), or without one a library's
// constant (json, yaml).
type dataVal struct {
	t  *types.Type
	d  KyvernoData
	ca string
}

// BindKyvernoData binds the variables of Kyverno's data libraries to d in
// vars (an Activation's).
func BindKyvernoData(vars map[string]any, d KyvernoData) {
	vars[VarResource] = dataVal{t: resourceType, d: d}
	vars[VarImageData] = dataVal{t: imageDataType, d: d}
	vars[VarHTTP] = dataVal{t: httpType, d: d}
	vars[VarGlobalContext] = dataVal{t: globalContextType, d: d}
}

// DataVars are the variables BindKyvernoData binds.
func DataVars() []string {
	return []string{VarResource, VarImageData, VarHTTP, VarGlobalContext}
}

func (v dataVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("%s has no native form (%v)", v.t.TypeName(), t)
}

func (v dataVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return v.t
	}
	return types.NewErr("type conversion error from %s to %s", v.t.TypeName(), t)
}

func (v dataVal) Equal(o ref.Val) ref.Val {
	ov, ok := o.(dataVal)
	return types.Bool(ok && ov == v)
}

func (v dataVal) Type() ref.Type { return v.t }
func (v dataVal) Value() any     { return v.d }

// gvrVal is a resource.ToGVR's value: a resource in its apiVersion.
type gvrVal struct{ apiVersion, resource string }

func (v gvrVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("%s has no native form (%v)", gvrType.TypeName(), t)
}

func (v gvrVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return gvrType
	}
	return types.NewErr("type conversion error from %s to %s", gvrType.TypeName(), t)
}

func (v gvrVal) Equal(o ref.Val) ref.Val {
	ov, ok := o.(gvrVal)
	return types.Bool(ok && ov == v)
}

func (v gvrVal) Type() ref.Type { return gvrType }
func (v gvrVal) Value() any     { return v }

// resourceToGVR is resource.ToGVR(apiVersion, kind).
func resourceToGVR(args ...ref.Val) ref.Val {
	d, s, e := dataAndStrings(args)
	if e != nil {
		return e
	}
	r, err := d.d.ResourceFor(s[0], s[1])
	if err != nil {
		return types.WrapErr(fmt.Errorf("failed to convert to GVR: %w", err))
	}
	return gvrVal{apiVersion: s[0], resource: r}
}

// withGVR is a resource call whose first argument is a ToGVR's value,
// made as fn with its apiVersion and resource in its place.
func withGVR(fn func(args ...ref.Val) ref.Val) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		g, ok := args[1].(gvrVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[1])
		}
		return fn(append([]ref.Val{args[0], types.String(g.apiVersion), types.String(g.resource)}, args[2:]...)...)
	}
}

// dataOf is the KyvernoData of a call's receiver.
func dataOf(arg ref.Val) (dataVal, ref.Val) {
	v, ok := arg.(dataVal)
	if !ok || v.d == nil {
		return dataVal{}, types.NewErr("no data reader is bound to %s", arg.Type().TypeName())
	}
	return v, nil
}

// dataAndStrings are a call's receiver's KyvernoData and its string
// arguments, or the error of the first that is neither.
func dataAndStrings(args []ref.Val) (dataVal, []string, ref.Val) {
	d, e := dataOf(args[0])
	if e != nil {
		return dataVal{}, nil, e
	}
	s, e := strArgs(args[1:])
	return d, s, e
}

// strArgs are string arguments, or the error of the first that is not.
func strArgs(args []ref.Val) ([]string, ref.Val) {
	out := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(types.String)
		if !ok {
			return nil, types.MaybeNoSuchOverloadErr(a)
		}
		out[i] = string(s)
	}
	return out, nil
}

// stringMap is a map(string, string) argument.
func stringMap(arg ref.Val) (map[string]string, ref.Val) {
	m, e := objectArg(arg)
	if e != nil {
		return nil, e
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return nil, types.NewErr("%s: want a string, got %s", k, value.TypeName(v))
		}
		out[k] = s
	}
	return out, nil
}

// objectArg is a map(string, dyn) argument as a JSON object.
func objectArg(arg ref.Val) (map[string]any, ref.Val) {
	tree, err := toJSON(arg)
	if err != nil {
		return nil, types.WrapErr(err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, types.MaybeNoSuchOverloadErr(arg)
	}
	return m, nil
}

// answer is a reader's answer as a CEL value.
func answer(what string, v any, err error) ref.Val {
	if err != nil {
		return types.WrapErr(fmt.Errorf("failed to %s: %w", what, err))
	}
	if m, ok := v.(map[string]any); ok && m == nil {
		return types.NullValue
	}
	return jsonAdapter.NativeToValue(v)
}

// resourceGet, resourceList and resourcePost are the resource library's
// calls: ns is the index of the namespace among the string arguments
// (-1: none, the namespaced form), the others in Kyverno's order.
func resourceGet(ns int) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		d, s, e := dataAndStrings(args)
		if e != nil {
			return e
		}
		namespace, name := "", s[len(s)-1]
		if ns >= 0 {
			namespace = s[ns]
		}
		o, err := d.d.GetResource(s[0], s[1], namespace, name)
		return answer("get resource", o, err)
	}
}

func resourceList(ns int, withLabels bool) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		d, e := dataOf(args[0])
		if e != nil {
			return e
		}
		n := len(args) - 1
		var labels map[string]string
		if withLabels {
			n--
			if labels, e = stringMap(args[len(args)-1]); e != nil {
				return e
			}
		}
		s, e := strArgs(args[1 : 1+n])
		if e != nil {
			return e
		}
		namespace := ""
		if ns >= 0 {
			namespace = s[ns]
		}
		l, err := d.d.ListResources(s[0], s[1], namespace, labels)
		return answer("list resource", l, err)
	}
}

func resourcePost(ns int) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		d, e := dataOf(args[0])
		if e != nil {
			return e
		}
		s, e := strArgs(args[1 : len(args)-1])
		if e != nil {
			return e
		}
		data, e := objectArg(args[len(args)-1])
		if e != nil {
			return e
		}
		namespace := ""
		if ns >= 0 {
			namespace = s[ns]
		}
		o, err := d.d.PostResource(s[0], s[1], namespace, data)
		return answer("create resource", o, err)
	}
}

func imageMetadata(recv, ref_ ref.Val) ref.Val {
	d, e := dataOf(recv)
	if e != nil {
		return e
	}
	s, ok := ref_.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(ref_)
	}
	if len(s) > maxImageRefLen {
		return types.NewErr("failed to get image data: a reference of %d bytes (at most %d)", len(s), maxImageRefLen)
	}
	m, err := d.d.ImageData(string(s))
	return answer("get image data", m, err)
}

// httpCall is http.Get (withBody false) or http.Post, with headers when
// the call has one more argument.
func httpCall(method string, withBody bool) func(args ...ref.Val) ref.Val {
	return func(args ...ref.Val) ref.Val {
		d, e := dataOf(args[0])
		if e != nil {
			return e
		}
		url, ok := args[1].(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(args[1])
		}
		rest := args[2:]
		var body any
		if withBody {
			var err error
			if body, err = toJSON(rest[0]); err != nil {
				return types.WrapErr(err)
			}
			rest = rest[1:]
		}
		var headers map[string]string
		if len(rest) == 1 {
			if headers, e = stringMap(rest[0]); e != nil {
				return e
			}
		}
		v, err := d.d.HTTP(method, string(url), body, headers, d.ca)
		if err != nil {
			return types.WrapErr(fmt.Errorf("http %s %.200s: %w", method, url, err))
		}
		return jsonAdapter.NativeToValue(v)
	}
}

func httpClient(recv, ca ref.Val) ref.Val {
	d, e := dataOf(recv)
	if e != nil {
		return e
	}
	s, ok := ca.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(ca)
	}
	if s != "" {
		if _, err := x509.ParseCertificate(firstPEM([]byte(s))); err != nil {
			return types.WrapErr(fmt.Errorf("http.Client: the CA bundle: %w", err))
		}
		d.ca = string(s)
	}
	return d
}

// firstPEM is the DER of the first PEM block of b (nil: none).
func firstPEM(b []byte) []byte {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil
	}
	return blk.Bytes
}

func globalContextGet(args ...ref.Val) ref.Val {
	d, e := dataOf(args[0])
	if e != nil {
		return e
	}
	s, e := strArgs(args[1:])
	if e != nil {
		return e
	}
	projection := ""
	if len(s) == 2 {
		projection = s[1]
	}
	v, err := d.d.GlobalContext(s[0], projection)
	if err != nil {
		return types.WrapErr(fmt.Errorf("globalContext.Get %.100q: %w", s[0], err))
	}
	return jsonAdapter.NativeToValue(v)
}

// textArg is a string argument of a parsing call, at most MaxOutput bytes.
func textArg(function string, arg ref.Val) (string, ref.Val) {
	s, ok := arg.(types.String)
	if !ok {
		return "", types.MaybeNoSuchOverloadErr(arg)
	}
	if len(s) > MaxOutput {
		return "", types.WrapErr(tooLarge(function, len(s)))
	}
	return string(s), nil
}

func jsonUnmarshal(_, arg ref.Val) ref.Val {
	s, e := textArg("json.unmarshal", arg)
	if e != nil {
		return e
	}
	var v any // numbers as doubles, as Kyverno's (encoding/json)
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return types.WrapErr(fmt.Errorf("json.unmarshal: %w", err))
	}
	return jsonAdapter.NativeToValue(v)
}

func jsonMarshal(_, arg ref.Val) ref.Val {
	v, err := toJSON(arg)
	if err != nil {
		return types.WrapErr(err)
	}
	b, err := value.Encode(v)
	if err != nil {
		return types.WrapErr(fmt.Errorf("json.marshal: %w", err))
	}
	if len(b) > MaxOutput {
		return types.WrapErr(tooLarge("json.marshal", len(b)))
	}
	return types.String(b)
}

func yamlParse(_, arg ref.Val) ref.Val {
	s, e := textArg("yaml.parse", arg)
	if e != nil {
		return e
	}
	// sigs.k8s.io/yaml, as Kyverno's (YAML 1.1: y is true; numbers as
	// doubles), refuses a document whose aliases expand past its bound;
	// the JSON it makes is then bounded as any output.
	j, err := sigsyaml.YAMLToJSON([]byte(s))
	if err != nil {
		return types.WrapErr(fmt.Errorf("yaml.parse: %w", err))
	}
	if len(j) > MaxOutput {
		return types.WrapErr(tooLarge("yaml.parse", len(j)))
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return types.WrapErr(fmt.Errorf("yaml.parse: %w", err))
	}
	return jsonAdapter.NativeToValue(v)
}

// x509Decode is x509.decode(pem): a certificate or a certificate request
// as Go's crypto/x509 describes it, in Kyverno's shape (the raw fields in
// base64, times in RFC 3339, the RSA public key as {N, E}).
func x509Decode(arg ref.Val) ref.Val {
	s, e := textArg("x509.decode", arg)
	if e != nil {
		return e
	}
	blk, _ := pem.Decode([]byte(s))
	if blk == nil {
		return types.WrapErr(errors.New("x509.decode: failed to decode PEM block"))
	}
	var out map[string]any
	var err error
	switch blk.Type {
	case "CERTIFICATE":
		var c *x509.Certificate
		if c, err = x509.ParseCertificate(blk.Bytes); err == nil {
			out, err = certificateOf(c)
		}
	case "CERTIFICATE REQUEST":
		var c *x509.CertificateRequest
		if c, err = x509.ParseCertificateRequest(blk.Bytes); err == nil {
			out, err = requestOf(c)
		}
	default:
		err = errors.New("PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST")
	}
	if err != nil {
		return types.WrapErr(fmt.Errorf("x509.decode: %w", err))
	}
	return jsonAdapter.NativeToValue(out)
}

// rsaKey is an RSA public key as Kyverno's x509.decode gives it.
type rsaKey struct {
	N string
	E int
}

func rsaKeyOf(alg x509.PublicKeyAlgorithm, k any) (rsaKey, error) {
	pk, ok := k.(*rsa.PublicKey)
	if alg != x509.RSA || !ok {
		return rsaKey{}, errors.New("certificate should use rsa algorithm")
	}
	return rsaKey{N: new(big.Int).Set(pk.N).String(), E: pk.E}, nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// certificateOf is a certificate as a JSON tree: its fields as
// encoding/json writes them, the raw ones in base64, the times in RFC
// 3339.
func certificateOf(c *x509.Certificate) (map[string]any, error) {
	pk, err := rsaKeyOf(c.PublicKeyAlgorithm, c.PublicKey)
	if err != nil {
		return nil, err
	}
	shape := *c
	shape.PublicKey = pk
	m, err := treeOf(&shape)
	if err != nil {
		return nil, err
	}
	for k, raw := range map[string][]byte{"Raw": c.Raw, "RawTBSCertificate": c.RawTBSCertificate, "RawSubjectPublicKeyInfo": c.RawSubjectPublicKeyInfo,
		"RawSubject": c.RawSubject, "RawIssuer": c.RawIssuer, "Signature": c.Signature} {
		m[k] = b64(raw)
	}
	m["NotBefore"], m["NotAfter"] = c.NotBefore.Format(time.RFC3339), c.NotAfter.Format(time.RFC3339)
	m["SerialNumber"] = json.Number(c.SerialNumber.String())
	return m, nil
}

// requestOf is a certificate request as a JSON tree, as encoding/json
// writes it.
func requestOf(c *x509.CertificateRequest) (map[string]any, error) {
	pk, err := rsaKeyOf(c.PublicKeyAlgorithm, c.PublicKey)
	if err != nil {
		return nil, err
	}
	shape := *c
	shape.PublicKey = pk
	return treeOf(&shape)
}

// treeOf is v as encoding/json writes it, as a JSON tree.
func treeOf(v any) (map[string]any, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	t, err := value.Decode(buf.Bytes())
	if err != nil {
		return nil, err
	}
	m, _ := t.(map[string]any)
	return m, nil
}

// kyvernoDataLibs declares the data libraries of scope and the constant
// ones; vars are the variables it declares (the environment's own
// declarations of them are left out).
func kyvernoDataLibs(scope DataScope) (opts []cel.EnvOption, vars []string) {
	str, dyn := cel.StringType, cel.DynType
	strMap, objMap := cel.MapType(str, str), cel.MapType(str, dyn)
	type overload struct {
		args []*cel.Type
		out  *cel.Type
		fn   func(args ...ref.Val) ref.Val
	}
	// fns are the member functions by name, each also declared with its
	// lower-case first letter (Kyverno 1.18).
	fns := map[string][]overload{}
	add := func(recv *types.Type, name string, out *cel.Type, fn func(args ...ref.Val) ref.Val, args ...*cel.Type) {
		fns[name] = append(fns[name], overload{append([]*cel.Type{recv}, args...), out, fn})
	}
	if scope == ClusterData {
		add(resourceType, "Get", objMap, resourceGet(2), str, str, str, str)
		add(resourceType, "Get", objMap, withGVR(resourceGet(2)), gvrType, str, str)
		add(resourceType, "List", objMap, resourceList(2, false), str, str, str)
		add(resourceType, "List", objMap, withGVR(resourceList(2, false)), gvrType, str)
		add(resourceType, "List", objMap, resourceList(2, true), str, str, str, strMap)
		add(resourceType, "List", objMap, withGVR(resourceList(2, true)), gvrType, str, strMap)
		add(resourceType, "Post", objMap, resourcePost(2), str, str, str, objMap)
	} else {
		add(resourceType, "Get", objMap, resourceGet(-1), str, str, str)
		add(resourceType, "Get", objMap, withGVR(resourceGet(-1)), gvrType, str)
		add(resourceType, "List", objMap, resourceList(-1, false), str, str)
		add(resourceType, "List", objMap, withGVR(resourceList(-1, false)), gvrType)
		add(resourceType, "List", objMap, resourceList(-1, true), str, str, strMap)
		add(resourceType, "List", objMap, withGVR(resourceList(-1, true)), gvrType, strMap)
		add(resourceType, "Post", objMap, resourcePost(-1), str, str, objMap)
	}
	add(resourceType, "ToGVR", gvrType, resourceToGVR, str, str)
	add(imageDataType, "GetMetadata", dyn, func(a ...ref.Val) ref.Val { return imageMetadata(a[0], a[1]) }, str)
	add(httpType, "Get", dyn, httpCall("GET", false), str)
	add(httpType, "Get", dyn, httpCall("GET", false), str, strMap)
	add(httpType, "Post", dyn, httpCall("POST", true), str, dyn)
	add(httpType, "Post", dyn, httpCall("POST", true), str, dyn, strMap)
	add(httpType, "Client", httpType, func(a ...ref.Val) ref.Val { return httpClient(a[0], a[1]) }, str)
	add(globalContextType, "Get", dyn, globalContextGet, str)
	add(globalContextType, "Get", dyn, globalContextGet, str, str)
	for name, ovs := range fns {
		for _, spelling := range []string{name, string(name[0]+'a'-'A') + name[1:]} {
			var fo []cel.FunctionOpt
			for _, o := range ovs {
				id := "kyverno_" + spelling
				for _, a := range o.args {
					id += "_" + a.String()
				}
				fo = append(fo, cel.MemberOverload(id, o.args, o.out, cel.FunctionBinding(o.fn)))
			}
			opts = append(opts, cel.Function(spelling, fo...))
		}
	}
	for _, v := range []struct {
		name string
		t    *types.Type
	}{{VarResource, resourceType}, {VarImageData, imageDataType}, {VarHTTP, httpType}, {VarGlobalContext, globalContextType}} {
		opts = append(opts, cel.Variable(v.name, v.t))
		vars = append(vars, v.name)
	}
	opts = append(opts,
		cel.Constant("json", jsonType, dataVal{t: jsonType}),
		cel.Constant("yaml", yamlType, dataVal{t: yamlType}),
		cel.Function("unmarshal", cel.MemberOverload("kyverno_json_unmarshal", []*cel.Type{jsonType, dyn}, dyn, cel.BinaryBinding(jsonUnmarshal))),
		cel.Function("marshal", cel.MemberOverload("kyverno_json_marshal", []*cel.Type{jsonType, dyn}, str, cel.BinaryBinding(jsonMarshal))),
		cel.Function("parse", cel.MemberOverload("kyverno_yaml_parse", []*cel.Type{yamlType, str}, dyn, cel.BinaryBinding(yamlParse))),
		cel.Function("x509.decode", cel.Overload("kyverno_x509_decode_string", []*cel.Type{str}, dyn, cel.UnaryBinding(x509Decode))),
		cel.Function("time.now", cel.Overload("kyverno_time_now", nil, cel.TimestampType,
			cel.FunctionBinding(func(...ref.Val) ref.Val { return types.Timestamp{Time: time.Now().UTC()} }))),
		cel.Function("time.truncate", cel.Overload("kyverno_time_truncate", []*cel.Type{cel.TimestampType, cel.DurationType}, cel.TimestampType,
			cel.BinaryBinding(func(t, d ref.Val) ref.Val {
				ts, ok1 := t.(types.Timestamp)
				du, ok2 := d.(types.Duration)
				if !ok1 || !ok2 {
					return types.MaybeNoSuchOverloadErr(t)
				}
				return types.Timestamp{Time: ts.Time.Truncate(du.Duration)}
			}))),
		cel.Function("time.toCron", cel.Overload("kyverno_time_to_cron", []*cel.Type{cel.TimestampType}, str,
			cel.UnaryBinding(func(t ref.Val) ref.Val {
				ts, ok := t.(types.Timestamp)
				if !ok {
					return types.MaybeNoSuchOverloadErr(t)
				}
				return types.String(fmt.Sprintf("%d %d %d %d %d", ts.Minute(), ts.Hour(), ts.Day(), int(ts.Month()), int(ts.Weekday())))
			}))),
		cel.Function("math.round", cel.Overload("kyverno_math_round_double_int", []*cel.Type{cel.DoubleType, cel.IntType}, cel.DoubleType,
			cel.BinaryBinding(func(v, p ref.Val) ref.Val {
				f, ok1 := v.(types.Double)
				n, ok2 := p.(types.Int)
				if !ok1 || !ok2 {
					return types.MaybeNoSuchOverloadErr(v)
				}
				shift := math.Pow(10, float64(n))
				return types.Double(math.Round(float64(f)*shift) / shift)
			}))),
	)
	opts = append(opts, kyvernoMoreLibs()...)
	for _, h := range []struct {
		name string
		sum  func([]byte) []byte
	}{
		{"sha1", func(b []byte) []byte { s := sha1.Sum(b); return s[:] }},
		{"sha256", func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }},
		{"md5", func(b []byte) []byte { s := md5.Sum(b); return s[:] }},
	} {
		fn := cel.UnaryBinding(func(arg ref.Val) ref.Val {
			s, ok := arg.(types.String)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			return types.String(hex.EncodeToString(h.sum([]byte(s))))
		})
		opts = append(opts,
			cel.Function(h.name, cel.Overload("kyverno_"+h.name+"_string", []*cel.Type{str}, str, fn)),
			cel.Function("hash."+h.name, cel.Overload("kyverno_hash_"+h.name+"_string", []*cel.Type{str}, str, fn)))
	}
	return opts, vars
}
