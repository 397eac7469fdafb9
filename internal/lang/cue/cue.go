package cue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

// Parameter names a program reads, as kinitiras passes them: the object,
// the old object (UPDATE), and data ({object, oldObject, ...}: what
// rendered templates and Policies read).
const (
	VarObject    = "object"
	VarOldObject = "oldObject"
	VarData      = "data"
)

// ErrNoOutput is in the chain of the error of a program that has no value
// at the output field asked for (kinitiras: "output ... not found").
var ErrNoOutput = errors.New("the CUE program has no output field")

// maxUses is how many evaluations a pooled CUE context serves before it
// is dropped: a context keeps what it interned (labels, strings), so a
// fresh one bounds its growth.
const maxUses = 1024

// DefaultCheckTimeout bounds the check of a program when it loads (CUE
// cannot be interrupted: a check still running is abandoned).
const DefaultCheckTimeout = 2 * time.Second

// MaxSource bounds the text Compile accepts.
const MaxSource = 1 << 20

// Language is CUE (cuelang.org/go); its zero value is ready to use.
type Language struct {
	// CheckTimeout bounds the check of a program when it loads; zero:
	// DefaultCheckTimeout.
	CheckTimeout time.Duration
	// Workers, when not nil, check and evaluate programs in worker
	// processes that are killed at the deadline or past their memory
	// limit (CUE cannot be interrupted in a process: without Workers an
	// evaluation still running at its deadline is abandoned and runs on).
	Workers *Workers
}

func (l Language) checkTimeout() time.Duration {
	if l.CheckTimeout > 0 {
		return l.CheckTimeout
	}
	return DefaultCheckTimeout
}

// Name returns "cue".
func (Language) Name() string { return "cue" }

// Compile parses and builds src once; a syntax or build error is a
// Diagnostic at its byte offset. env's variables are not checked (a
// program declares its parameters itself: object: _ @tag(object)).
func (l Language) Compile(env *lang.Env, src string) (lang.Program, []lang.Diagnostic) {
	p, ds := l.CompileExpr(env, src)
	if ds != nil {
		return nil, ds
	}
	return p, nil
}

// CompileExpr is Compile returning the concrete *Program. With Workers,
// the program's check runs in a worker (killed at CheckTimeout) and so
// do its evaluations.
func (l Language) CompileExpr(env *lang.Env, src string) (*Program, []lang.Diagnostic) {
	if l.Workers == nil {
		return l.compile(src)
	}
	p, ds := parse(src)
	if ds != nil {
		return nil, ds
	}
	p.id = l.Workers.ids.Add(1)
	if ds := l.Workers.check(p.id, src, l.checkTimeout()); ds != nil {
		return nil, ds
	}
	p.workers = l.Workers
	return p, nil
}

// parse parses src and finds what the program reads of its parameters.
func parse(src string) (*Program, []lang.Diagnostic) {
	if len(src) > MaxSource {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: fmt.Sprintf("the CUE program is %d bytes, over the %d limit", len(src), MaxSource)}}
	}
	f, err := parser.ParseFile("program.cue", src, parser.ParseComments)
	if err != nil {
		return nil, diagnostics(err)
	}
	dropUnusedImports(f)
	p := &Program{src: src, file: f}
	p.reads, p.aliases = usages(f, VarObject, VarOldObject, VarData)
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if name, ok := labelName(fd.Label); ok && name == "processing" {
				p.task = true
			}
		}
	}
	return p, nil
}

// checkTimeoutMsg is the diagnostic of a check that ran out of time.
func checkTimeoutMsg(d time.Duration) []lang.Diagnostic {
	return []lang.Diagnostic{{Pos: -1, Msg: fmt.Sprintf("checking the program took over %v: what it computes without its parameters is too large", d)}}
}

// compile compiles and checks src in this process.
func (l Language) compile(src string) (*Program, []lang.Diagnostic) {
	p, ds := parse(src)
	if ds != nil {
		return nil, ds
	}
	// Checked on a value of its own: evaluating a program before its
	// parameters are filled in would leave its comprehensions decided
	// without them (a top-level `if kind == "Pod"` stays unapplied).
	// Validate, not Err: without its parameters a program is incomplete;
	// only errors that no parameter can mend refuse it.
	// What it computes without them (a constant list of a million
	// elements) is computed here: bounded by CheckTimeout, as a request
	// is by its deadline.
	checked := make(chan error, 1)
	go func() { checked <- cuecontext.New().BuildFile(p.file).Validate() }()
	select {
	case err := <-checked:
		if err != nil {
			return nil, diagnostics(err)
		}
	case <-time.After(l.checkTimeout()):
		return nil, checkTimeoutMsg(l.checkTimeout())
	}
	p.pool.Put(p.build())
	return p, nil
}

// dropUnusedImports removes the imports a program never uses: CUE up to
// v0.4 (the one kinitiras runs, whose rendered templates import strings,
// strconv, math and list whatever they use) accepted them; current CUE
// refuses them.
func dropUnusedImports(f *ast.File) {
	used := map[string]bool{}
	ast.Walk(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	}, nil)
	name := func(spec *ast.ImportSpec) string {
		if spec.Name != nil {
			return spec.Name.Name
		}
		path, err := literal.Unquote(spec.Path.Value)
		if err != nil {
			return ""
		}
		path, _, _ = strings.Cut(path, ":")
		return path[strings.LastIndex(path, "/")+1:]
	}
	var decls []ast.Decl
	for _, d := range f.Decls {
		if imp, ok := d.(*ast.ImportDecl); ok {
			var specs []*ast.ImportSpec
			for _, spec := range imp.Specs {
				if n := name(spec); n == "" || used[n] {
					specs = append(specs, spec)
				}
			}
			if len(specs) == 0 {
				continue
			}
			imp.Specs = specs
		}
		decls = append(decls, d)
	}
	f.Decls = decls
}

// diagnostics turns CUE errors into positioned diagnostics.
func diagnostics(err error) []lang.Diagnostic {
	var ds []lang.Diagnostic
	for _, e := range cueerrors.Errors(err) {
		pos := -1
		if p := e.Position(); p.IsValid() {
			pos = p.Offset()
		} else {
			for _, ip := range e.InputPositions() {
				if ip.IsValid() {
					pos = ip.Offset()
					break
				}
			}
		}
		ds = append(ds, lang.Diagnostic{Pos: pos, Msg: message(e)})
	}
	if ds == nil {
		ds = []lang.Diagnostic{{Pos: -1, Msg: err.Error()}}
	}
	return ds
}

// message is an error's text without its position (the caller adds the
// field and the offset).
func message(e cueerrors.Error) string {
	format, args := e.Msg()
	msg := fmt.Sprintf(format, args...)
	if path := e.Path(); len(path) > 0 {
		msg = strings.Join(path, ".") + ": " + msg
	}
	return msg
}

// Program is a compiled CUE program. It is immutable and safe for
// concurrent use: each evaluation borrows a context holding the built
// program (a CUE context is not safe for concurrent use).
type Program struct {
	src  string
	file *ast.File
	pool sync.Pool // *instance
	// building serializes build: CUE's BuildFile resolves identifiers in
	// the syntax tree it is given, writing into it.
	building sync.Mutex
	// reads is what the program reads of its parameters (see usages):
	// a parameter it never reads is not compiled in, one it reads in
	// part is pruned to those paths.
	reads map[string]*usage
	// task is true when the program has a top-level processing field
	// (kinitiras' http task).
	task bool
	// aliases are the top-level fields that only name a parameter's
	// path: one asked for as the output gets the parameters whole.
	aliases map[string]bool
	// outputs caches the parsed paths of the output fields asked for.
	outputs sync.Map // string -> cue.Path
	// workers, when not nil, evaluate the program (Language.Workers),
	// which know it by id (its text crosses to a worker once).
	workers *Workers
	id      uint64
}

type instance struct {
	ctx  *cue.Context
	v    cue.Value
	uses int
}

var _ lang.Program = (*Program)(nil)

// Source returns the program's text.
func (p *Program) Source() string { return p.src }

// build builds the program, unevaluated, for one evaluation after another
// (each fills its parameters into it).
func (p *Program) build() *instance {
	p.building.Lock()
	defer p.building.Unlock()
	ctx := cuecontext.New()
	return &instance{ctx: ctx, v: ctx.BuildFile(p.file)}
}

// Eval evaluates the program with the Activation's object and old object
// (when not nil) and its Vars as parameters; the result is the whole
// program's value as a JSON tree.
func (p *Program) Eval(ctx context.Context, in *lang.Activation) (any, error) {
	params := map[string]any{}
	for k, v := range in.Vars {
		params[k] = v
	}
	if in.Object != nil {
		params[VarObject] = in.Object
	}
	if in.OldObject != nil {
		params[VarOldObject] = in.OldObject
	}
	return p.Run(ctx, params, "")
}

// Run unifies each parameter (a JSON tree) into the field of its name, as
// kinitiras does, and returns the value of the output field ("" for the
// whole program) as a JSON tree; it must be concrete. An output field the
// program lacks wraps ErrNoOutput. CUE cannot be interrupted in a
// process: with the Language's Workers the evaluation's worker is killed
// when ctx ends; without, an evaluation still running when ctx ends is
// abandoned (its context is not reused) and Run returns ctx's error.
func (p *Program) Run(ctx context.Context, params map[string]any, output string) (any, error) {
	return p.RunTasks(ctx, params, output, nil)
}

// Task is the HTTP request a program's processing.http describes
// (kinitiras' http task): its method (GET by default), url, and
// request.header and request.body.
type Task struct {
	Method, URL string
	Header      map[string]string
	Body        []byte
}

// Tasks carries out a program's task and returns the response body, a
// JSON object the program then reads as processing.output. A program with
// a task and no Tasks fails.
type Tasks func(ctx context.Context, t Task) ([]byte, error)

// ErrNoTasks is wrapped by the error of a program with a task run without
// Tasks.
var ErrNoTasks = errors.New("the program has a processing.http task and nothing runs tasks here")

// RunTasks is Run for a program that may describe a task
// (processing.http): the parameters filled, the task carried out by tasks
// and its response filled into processing.output, then the output read.
func (p *Program) RunTasks(ctx context.Context, params map[string]any, output string, tasks Tasks) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.workers != nil {
		return p.workers.run(ctx, p, params, output, tasks)
	}
	b, err := p.runJSON(ctx, params, output, tasks)
	if err != nil {
		return nil, err
	}
	return value.Decode(b)
}

// runJSON evaluates the program in this process and returns the output's
// JSON.
func (p *Program) runJSON(ctx context.Context, params map[string]any, output string, tasks Tasks) ([]byte, error) {
	inst, _ := p.pool.Get().(*instance)
	if inst == nil {
		inst = p.build()
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := inst.run(ctx, p, params, output, tasks)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if inst.uses++; inst.uses < maxUses {
			p.pool.Put(inst)
		}
		return r.b, r.err
	case <-ctx.Done():
		// Only here, at the caller's own deadline, is the program left
		// running: it may still read params. A caller that reuses the
		// maps it passed once done (the webhook reuses the object's)
		// tells this case by ctx.Err(); a timeout of this function's own
		// would break that.
		return nil, fmt.Errorf("the CUE program did not finish: %w", context.Cause(ctx))
	}
}

func (p *Program) inject(name string, v any, whole bool) (any, bool) {
	if whole || name != VarObject && name != VarOldObject && name != VarData {
		return v, true
	}
	u := p.reads[name]
	switch {
	case u == nil:
		return nil, false // never read: nothing to compile
	case u.all:
		return v, true
	}
	return prune(v, u.paths), true
}

func (inst *instance) run(ctx context.Context, p *Program, params map[string]any, output string, tasks Tasks) ([]byte, error) {
	v := inst.v
	for name, pv := range params {
		// The whole program's value shows every field: nothing pruned.
		root, _, _ := strings.Cut(output, ".")
		pv, ok := p.inject(name, pv, output == "" || p.aliases[root])
		if !ok {
			continue
		}
		// A literal built from the JSON tree, not JSON text: no parse per
		// request (JSON's 3 is an int, 3.5 a float). Not Context.Encode:
		// lists it makes are not indexed inside comprehensions
		// (`if ... {x: data.list[0].y}` stays unapplied; CUE v0.17).
		x := inst.ctx.BuildExpr(jsonLiteral(pv))
		if err := x.Err(); err != nil {
			return nil, fmt.Errorf("parameter %s: %w", name, err)
		}
		v = v.FillPath(cue.MakePath(cue.Str(name)), x)
	}
	if p.task {
		var err error
		if v, err = inst.runTask(ctx, v, tasks); err != nil {
			return nil, err
		}
	}
	out := v
	if output != "" {
		out = v.LookupPath(p.outputPath(output))
		if !out.Exists() {
			if err := v.Err(); err != nil {
				return nil, evalError(err)
			}
			return nil, fmt.Errorf("%w %q", ErrNoOutput, output)
		}
	}
	if err := out.Validate(cue.Concrete(true)); err != nil {
		return nil, evalError(err)
	}
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, evalError(err)
	}
	return b, nil
}

var (
	taskPath   = cue.ParsePath("processing.http")
	outputPath = cue.ParsePath("processing.output")
)

// runTask carries out processing.http, when the program has it, and fills
// processing.output with the response.
func (inst *instance) runTask(ctx context.Context, v cue.Value, tasks Tasks) (cue.Value, error) {
	tv := v.LookupPath(taskPath)
	if !tv.Exists() {
		return v, nil
	}
	if tasks == nil {
		return v, ErrNoTasks
	}
	if tv.LookupPath(cue.ParsePath("tls_config")).Exists() {
		return v, errors.New("processing.http.tls_config is not supported: the request would be made without its CA and client certificate")
	}
	t := Task{Method: "GET", Header: map[string]string{}}
	if m, err := tv.LookupPath(cue.ParsePath("method")).String(); err == nil && m != "" {
		t.Method = m
	}
	u, err := tv.LookupPath(cue.ParsePath("url")).String()
	if err != nil {
		return v, fmt.Errorf("processing.http.url: %w", evalError(err))
	}
	t.URL = u
	if hs := tv.LookupPath(cue.ParsePath("request.header")); hs.Exists() {
		it, err := hs.Fields()
		if err != nil {
			return v, fmt.Errorf("processing.http.request.header: %w", evalError(err))
		}
		for it.Next() {
			if s, err := it.Value().String(); err == nil {
				t.Header[it.Selector().Unquoted()] = s
			}
		}
	}
	if b := tv.LookupPath(cue.ParsePath("request.body")); b.Exists() && b.IsConcrete() {
		if t.Body, err = b.Bytes(); err != nil {
			return v, fmt.Errorf("processing.http.request.body: %w", evalError(err))
		}
	}
	body, err := tasks(ctx, t)
	if err != nil {
		return v, fmt.Errorf("processing.http: %w", err)
	}
	resp, err := value.Decode(body)
	if _, ok := resp.(map[string]any); err != nil || !ok {
		return v, fmt.Errorf("processing.http: %s %s: the response is not a JSON object", t.Method, t.URL)
	}
	return v.FillPath(outputPath, inst.ctx.BuildExpr(jsonLiteral(resp))), nil
}

// evalError renders CUE's errors as one error: each with its path.
func evalError(err error) error {
	var msgs []string
	for _, e := range cueerrors.Errors(err) {
		msgs = append(msgs, message(e))
	}
	if msgs == nil {
		return err
	}
	return errors.New(strings.Join(msgs, "; "))
}

// The output fields kinitiras' programs produce.
const (
	OutputValidate = "validate"
	OutputPatches  = "patches"
)

// ValidateResult reads a `validate` output as kinitiras decodes it into
// its result: valid (true when absent) and reason ("" when absent).
func ValidateResult(v any) (valid bool, reason string, err error) {
	m, ok := v.(map[string]any)
	if !ok {
		return false, "", fmt.Errorf("validate must be a struct {valid: bool, reason: string}, not %s", value.TypeName(v))
	}
	valid = true
	if x, ok := m["valid"]; ok {
		if valid, ok = x.(bool); !ok {
			return false, "", fmt.Errorf("validate.valid must be a bool, not %s", value.TypeName(x))
		}
	}
	if x, ok := m["reason"]; ok {
		if reason, ok = x.(string); !ok {
			return false, "", fmt.Errorf("validate.reason must be a string, not %s", value.TypeName(x))
		}
	}
	return valid, reason, nil
}

// jsonLiteral is a JSON tree as a CUE literal: integer text an int, other
// numbers floats.
func jsonLiteral(v any) ast.Expr {
	switch x := v.(type) {
	case map[string]any:
		s := &ast.StructLit{Elts: make([]ast.Decl, 0, len(x))}
		for k, e := range x {
			s.Elts = append(s.Elts, &ast.Field{Label: ast.NewString(k), Value: jsonLiteral(e)})
		}
		return s
	case []any:
		l := &ast.ListLit{Elts: make([]ast.Expr, len(x))}
		for i, e := range x {
			l.Elts[i] = jsonLiteral(e)
		}
		return l
	case string:
		return ast.NewString(x)
	case bool:
		return ast.NewBool(x)
	case nil:
		return ast.NewNull()
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return &ast.BasicLit{Kind: token.INT, Value: string(x)}
		}
		if _, err := x.Float64(); err == nil {
			return &ast.BasicLit{Kind: token.FLOAT, Value: string(x)}
		}
		return ast.NewString(string(x))
	case int64:
		return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatInt(x, 10)}
	case int:
		return &ast.BasicLit{Kind: token.INT, Value: strconv.Itoa(x)}
	case float64:
		t := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(t, ".eEnI") {
			t += ".0"
		}
		return &ast.BasicLit{Kind: token.FLOAT, Value: t}
	}
	return &ast.BottomLit{}
}

// outputPath parses an output field's path once per program.
func (p *Program) outputPath(s string) cue.Path {
	if v, ok := p.outputs.Load(s); ok {
		return v.(cue.Path)
	}
	path := cue.ParsePath(s)
	p.outputs.Store(s, path)
	return path
}
