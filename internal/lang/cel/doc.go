// Package cel is the CEL language of the language seam (package lang): an
// adapter over cel-go in the Kubernetes CEL environment, as the
// kube-apiserver of our k8s modules (v0.37.2) runs it for admission
// policies. An expression compiles once, with type-checking, against an Env
// whose every variable (any identifier: object, oldObject, request,
// namespaceObject, variables, self, oldSelf, params, ...) is declared with
// CEL's dynamic type (authorizer excepted, see below); the resulting
// *Program is a lang.Program, and CompileMutation compiles the mutations
// of a MutatingAdmissionPolicy.
//
// # The environment
//
// An environment is built per set of declared variables; with
// Language.Envs (an EnvCache) expressions declaring the same variables
// share it, as the apiserver's compilers share theirs: a kind's adapter
// holds one cache for all its rules.
//
// The base environment is the apiserver's for new expressions
// (environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()),
// NewExpressionsEnv; the compatibility version is 1.36 for v0.37.2): the
// standard library, strings (ext v2), sets, two-variable comprehensions,
// lists (ext v3 and Kubernetes' lists v0: sort, isSorted, sum, min, max,
// indexOf), regex (find, findAll), URLs, quantity, IP and CIDR, format,
// semver, optional types, cross-type numeric comparisons, the validators of
// duration, timestamp, regex and homogeneous literals, and Kubernetes'
// cost estimator. jsonpatch.escapeKey, which the apiserver adds only for
// MutatingAdmissionPolicy, is added too. The authorizer library is present;
// when an Env declares the variable authorizer, it is declared with the
// library's type (and authorizer.requestResource with it), as the
// apiserver declares them, and bound from Activation.Vars (values made by
// NewAuthorizer and NewRequestResourceAuthorizer over an
// authorizer.UnconditionalAuthorizer: a cluster's, or a test suite's
// decisions); with no value bound, any use of either fails with
// ErrNoAuthorizer ("authorizer is not available offline (no cluster)").
//
// # Limits
//
// Env.Limits.MaxWork is the per-expression cost budget in CEL cost units;
// 0 means the apiserver's PerCallLimit (celconfig.PerCallLimit, 1e6).
// Every variable has the dynamic type, so no size of an input is known at
// Compile (the apiserver checks no estimate for admission policies, whose
// object is dynamic, only for CRD rules, whose schema bounds sizes): Compile
// refuses, with a Diagnostic, an expression whose estimated worst-case cost
// exceeds the budget with empty inputs (the cost its literals alone
// imply), and Cost reports the worst case over inputs up to the
// apiserver's largest request (3 MiB), for warnings. At Eval the actual
// cost is tracked, as the apiserver tracks it, and an evaluation that
// exceeds the budget fails with an error in whose chain lang.ErrLimit is.
// EvalCost and EvalBoolCost also return the actual cost (cel-go's tracked
// cost with Kubernetes' estimator, as the apiserver counts it; tracking is
// on for every evaluation, since the budget needs it, so Eval costs the
// same); a rule kind sums them against RuntimeCostBudget, the apiserver's
// budget of one policy evaluation. cel-go charges a call's cost after
// the call ran, so the calls that can multiply their arguments (replace,
// join, + of strings, bytes or lists, lists.range) are checked before they
// run against MaxOutput (this package's constant), and quantity() and
// isQuantity() against package quantity's bounds, by a decorator that
// evaluates the arguments once and calls the same implementation
// (bounds.go); a JSON Patch's copies are bounded by patch.MaxCopyBytes and
// a built-in kind's quantities checked before its Go form is decoded.
// Env.Limits' MaxValues and MaxOutput do not apply to CEL and are ignored. Eval honours
// ctx (ContextEval, checked every celconfig.CheckFrequency comprehension
// steps): a cancelled evaluation's error wraps ctx.Err(). An expression
// whose worst case costs at most QuickCost (no comprehension over the
// input, no operation on its long strings) is evaluated without it: it
// ends in microseconds anyway.
//
// # Values
//
// Activation.Object, OldObject and Item are bound to object, oldObject and
// self, Vars by name; a declared variable with no value is bound to null.
// JSON trees (internal/value's types) are converted lazily, as CEL reads
// them: json.Number to int when it is an integer's text, else to double;
// an object member whose value is null is absent (has() is false, as
// Kubernetes drops null fields). Results are converted back to JSON trees
// (ints and doubles as json.Number).
//
// A lang.Lazy (a Policy's variables) is bound as a map from its Names to
// its members: variables.x, variables['x'], has(variables.x) and 'x' in
// variables call Member (a null member is present, as in the apiserver);
// an error of Member is the evaluation's error, wrapped, so that
// errors.Is finds the original (lang.ErrLimit of a nested expression);
// size() and iteration read Names and compute nothing. EvalValue returns
// a result as a CEL value, for a Lazy's member that has no JSON form (a
// quantity).
//
// # Mutations
//
// CompileMutation compiles a MutatingAdmissionPolicy mutation: the
// environment of CompileExpr plus the apiserver's mutation types (its
// DynamicTypeResolver: JSONPatch, Object, Object.<path>); the type must
// be exactly list(JSONPatch) (JSONPatch) or Object (ApplyConfiguration),
// so that a dyn or an untyped [] is refused, as by the apiserver.
// Mutation.Apply evaluates it and applies the result to a JSON tree as the
// apiserver's patchers do, with their code where it is exported:
//
//   - JSONPatch: the operations are built as the apiserver builds them and
//     applied by the same library (gopkg.in/evanphx/json-patch.v4) to the
//     object's JSON; a failed test operation leaves the object unchanged
//     without an error; any other failure is an error. A built-in kind
//     (one client-go's scheme knows) is patched as the apiserver patches
//     it, in the form its Go type serializes (empty structs such as
//     resources: {} present, quantities canonical), and the result must
//     decode strictly into that type (unknown fields and wrong types
//     refused); the parts of the result the patch did not change keep the
//     object's own form, so that a diff shows only the patch (operations
//     that only add, replace and remove and succeed on the object's own
//     text are applied to it directly: the same result, faster). Unlike
//     the apiserver, which goes through protobuf's Value (a double),
//     values keep integers exact (beyond 2^53 too).
//   - ApplyConfiguration: the apiserver's ApplyStructuredMergeDiff with the
//     schema of a built-in kind (client-go's applyconfigurations type
//     converter: list-maps merged by key, atomic fields refused) or, for
//     another kind, the deduced type (maps merged, lists replaced
//     atomically): the apiserver would use the CRD's schema from the
//     cluster, which is not known offline. A null member of the
//     configuration is absent.
//     Numbers go through int64 and float64 as in unstructured objects; an
//     unchanged number keeps its text.
//
// The apiserver defaults the object after each mutation; Apply does not
// (there is no defaulter offline). The cost and ctx are as Eval's.
//
// A JSONPatch expression that is a list of JSONPatch constructions (nearly
// every one) is taken apart when it compiles (patchplan.go): the fields
// written as literals are read once, an op and a path given as literals
// parsed once, and the others evaluated together as one list, instead of
// building a JSONPatch object per operation to read its fields back. The
// operations, errors, cost of a success and budget are the whole
// expression's (TestPatchPlan, TestPatchPlanBudget). EvalJSONPatch
// evaluates without applying, for a kind that applies the fast path's
// operations to its own document (Patched.Edits).
//
// # What it must not know
//
// No rule kind, no admission review, no cluster (an authorizer is given to
// it): kinds compile their fields through it, turn Diagnostics into field
// errors, build Activations and sum costs against RuntimeCostBudget.
package cel
