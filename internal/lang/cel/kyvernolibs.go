package cel

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-containerregistry/pkg/name"
)

// Kyverno's CEL libraries that read nothing but their arguments, as
// Kyverno's CEL policies declare them (Language.KyvernoLibs):
//
//   - image: parseImageReference(s) (and image(s), its former name) parse
//     an image reference as go-containerregistry does (Kyverno's parser:
//     index.docker.io and library/ for a bare name, latest for no tag); the
//     image's registry(), repository(), identifier(), tag(), digest() and
//     containsDigest(); isImage(s) says whether s parses.
//   - user: parseServiceAccount(s) is {Namespace, Name} of a
//     "system:serviceaccount:NS:NAME" user name (both empty otherwise).

// imageType is Kyverno's image type.
var imageType = types.NewOpaqueType("kyverno.image")

// imageVal is a parsed image reference as a CEL value.
type imageVal struct{ ref name.Reference }

func (v imageVal) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf("").AssignableTo(t) {
		return v.ref.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from image to %v", t)
}

func (v imageVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case imageType:
		return v
	case types.StringType:
		return types.String(v.ref.String())
	case types.TypeType:
		return imageType
	}
	return types.NewErr("type conversion error from image to %s", t)
}

func (v imageVal) Equal(o ref.Val) ref.Val {
	ov, ok := o.(imageVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(o)
	}
	return types.Bool(v.ref.String() == ov.ref.String())
}

func (v imageVal) Type() ref.Type { return imageType }
func (v imageVal) Value() any     { return v.ref }

// maxImageRefLen bounds an image reference parsed: a registry host and a
// repository path are far shorter (a name longer is not an image).
const maxImageRefLen = 4096

func parseImage(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	if len(s) > maxImageRefLen {
		return types.NewErr("image reference of %d bytes (at most %d)", len(s), maxImageRefLen)
	}
	r, err := name.ParseReference(string(s))
	if err != nil {
		return types.NewErr("%v", err)
	}
	return imageVal{r}
}

func isImage(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	if len(s) > maxImageRefLen {
		return types.False
	}
	_, err := name.ParseReference(string(s))
	return types.Bool(err == nil)
}

// imageMember is one of the image's member functions.
func imageMember(f func(name.Reference) ref.Val) func(ref.Val) ref.Val {
	return func(arg ref.Val) ref.Val {
		v, ok := arg.(imageVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg)
		}
		return f(v.ref)
	}
}

// parseServiceAccount is Kyverno's user library.
func parseServiceAccount(arg ref.Val) ref.Val {
	s, ok := arg.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	sa := map[string]any{"Namespace": "", "Name": ""}
	if rest, ok := strings.CutPrefix(string(s), "system:serviceaccount:"); ok {
		if ns, n, ok := strings.Cut(rest, ":"); ok {
			sa["Namespace"], sa["Name"] = ns, n
		}
	}
	return jsonAdapter.NativeToValue(sa)
}

// kyvernoLibs declares the libraries above.
func kyvernoLibs() []cel.EnvOption {
	member := func(fn, id string, out *cel.Type, f func(name.Reference) ref.Val) cel.EnvOption {
		return cel.Function(fn, cel.MemberOverload(id, []*cel.Type{imageType}, out, cel.UnaryBinding(imageMember(f))))
	}
	str := func(s string) ref.Val { return types.String(s) }
	return []cel.EnvOption{
		cel.Function("image", cel.Overload("kyverno_string_to_image_deprecated", []*cel.Type{cel.StringType}, imageType, cel.UnaryBinding(parseImage))),
		cel.Function("parseImageReference", cel.Overload("kyverno_string_to_image", []*cel.Type{cel.StringType}, imageType, cel.UnaryBinding(parseImage))),
		cel.Function("isImage", cel.Overload("kyverno_is_image_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isImage))),
		member("containsDigest", "kyverno_image_contains_digest", cel.BoolType, func(r name.Reference) ref.Val {
			d, ok := r.(name.Digest)
			return types.Bool(ok && d.DigestStr() != "")
		}),
		member("registry", "kyverno_image_registry", cel.StringType, func(r name.Reference) ref.Val { return str(r.Context().RegistryStr()) }),
		member("repository", "kyverno_image_repository", cel.StringType, func(r name.Reference) ref.Val { return str(r.Context().RepositoryStr()) }),
		member("identifier", "kyverno_image_identifier", cel.StringType, func(r name.Reference) ref.Val { return str(r.Identifier()) }),
		member("tag", "kyverno_image_tag", cel.StringType, func(r name.Reference) ref.Val {
			if t, ok := r.(name.Tag); ok {
				return str(t.TagStr())
			}
			return str("")
		}),
		member("digest", "kyverno_image_digest", cel.StringType, func(r name.Reference) ref.Val {
			if d, ok := r.(name.Digest); ok {
				return str(d.DigestStr())
			}
			return str("")
		}),
		cel.Function("parseServiceAccount", cel.Overload("kyverno_parse_service_account_string", []*cel.Type{cel.StringType}, cel.DynType, cel.UnaryBinding(parseServiceAccount))),
	}
}
