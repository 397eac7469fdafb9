package conditions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// resolver is the test's subst.Resolver: JMESPath with Kyverno's
// functions over a case's context; a plain field path reaching a missing
// key is undefined, as in Kyverno.
type resolver struct{ data any }

var fieldPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

func (r resolver) Resolve(_ context.Context, expr string) (any, error) {
	if fieldPath.MatchString(expr) {
		cur := r.data
		for _, k := range strings.Split(expr, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, nil
			}
			if cur, ok = m[k]; !ok {
				return nil, fmt.Errorf("%w: unknown key %q in %s", subst.ErrUndefined, k, expr)
			}
		}
		return cur, nil
	}
	p, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: "t"}, expr)
	if ds != nil {
		return nil, errors.New(ds[0].Msg)
	}
	data, err := jmespath.Prepare(r.data)
	if err != nil {
		return nil, err
	}
	v, err := p.Search(context.Background(), data)
	if err != nil {
		return nil, err
	}
	return jmespath.Result(v), nil
}

type condCase struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Input    json.RawMessage `json:"input"`
	Context  json.RawMessage `json:"context"`
	Expected struct {
		Result  bool   `json:"result"`
		Message string `json:"message"`
		Error   string `json:"error"`
	} `json:"expected"`
}

type rawCondition struct {
	Key      any    `json:"key"`
	Operator string `json:"operator"`
	Value    any    `json:"value"`
	Message  string `json:"message"`
}

type rawBlock struct {
	All []rawCondition `json:"all"`
	Any []rawCondition `json:"any"`
}

func conds(rs []rawCondition) []conditions.Condition {
	if rs == nil {
		return nil
	}
	out := make([]conditions.Condition, len(rs))
	for i, r := range rs {
		out[i] = conditions.Condition{Key: r.Key, Operator: r.Operator, Value: r.Value, Message: r.Message}
	}
	return out
}

// decode reads JSON as a value tree (json.Number numbers), as policies are.
func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	tree, err := value.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := value.Encode(tree)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatal(err)
	}
}

// evalBlocks is Kyverno's evaluation of a list of blocks: the first that
// does not hold decides, with its message; else the messages of all,
// joined with ";".
func evalBlocks(ctx context.Context, r subst.Resolver, blocks []rawBlock) (bool, string, error) {
	var msgs []string
	for _, b := range blocks {
		s, errs := conditions.Compile(conditions.Block{All: conds(b.All), Any: conds(b.Any)})
		if errs != nil {
			return false, "", fmt.Errorf("%v", errs)
		}
		ok, msg, err := s.Eval(ctx, r, nil)
		if err != nil || !ok {
			return false, msg, err
		}
		if msg != "" {
			msgs = append(msgs, msg)
		}
	}
	return true, strings.Join(msgs, ";"), nil
}

// conditionDeviations lists the cases where modwright differs from
// Kyverno, with the reason.
var conditionDeviations = map[string]string{}

func TestConformanceConditions(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-jmespath", "MODWRIGHT_KYVERNO_JMESPATH_DIR", "conditions.json")
	b, err := os.ReadFile(filepath.Join(dir, "conditions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []condCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 350 {
		t.Fatalf("%d cases; the data has 356", len(file.Cases))
	}
	ctx := context.Background()
	pass, dev := 0, 0
	names := map[string]int{}
	for _, c := range file.Cases {
		names[c.Name]++
		name := c.Name
		if n := names[c.Name]; n > 1 {
			name = fmt.Sprintf("%s@%d", c.Name, n)
		}
		t.Run(name, func(t *testing.T) {
			var data any
			if len(c.Context) > 0 {
				decode(t, c.Context, &data)
			}
			r := resolver{data: data}
			var (
				ok  bool
				msg string
				err error
			)
			switch c.Function {
			case "Evaluate":
				var rc rawCondition
				decode(t, c.Input, &rc)
				var s *conditions.Set
				s, errs := conditions.Compile(conditions.Block{All: conds([]rawCondition{rc})})
				if errs != nil {
					err = fmt.Errorf("%v", errs)
					break
				}
				ok, msg, err = s.Eval(ctx, r, nil)
				if rc.Message != "" && !ok {
					msg = rc.Message
				}
			case "EvaluateConditions", "EvaluateConditionsWithContext":
				var rb rawBlock
				decode(t, c.Input, &rb)
				ok, msg, err = evalBlocks(ctx, r, []rawBlock{rb})
			default:
				var rbs []rawBlock
				decode(t, c.Input, &rbs)
				ok, msg, err = evalBlocks(ctx, r, rbs)
			}
			if why, isDev := conditionDeviations[name]; isDev {
				dev++
				t.Skipf("documented deviation: %s", why)
			}
			if c.Expected.Error != "" {
				if err == nil {
					t.Fatalf("no error; Kyverno: %s", c.Expected.Error)
				}
				pass++
				return
			}
			if err != nil {
				t.Fatalf("error %v; Kyverno: %v %q\ninput %s", err, c.Expected.Result, c.Expected.Message, c.Input)
			}
			if ok != c.Expected.Result || (c.Function != "Evaluate" && msg != c.Expected.Message) {
				t.Errorf("got %v %q, Kyverno %v %q\ninput %s", ok, msg, c.Expected.Result, c.Expected.Message, c.Input)
				return
			}
			pass++
		})
	}
	t.Logf("%d of %d condition cases pass, %d documented deviations", pass, len(file.Cases), dev)
}
