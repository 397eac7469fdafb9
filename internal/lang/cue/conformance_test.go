package cue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

type cueCase struct {
	Name          string          `json:"name"`
	CUE           string          `json:"cue"`
	Parameters    json.RawMessage `json:"parameters"`
	OutputName    string          `json:"outputName"`
	Expected      json.RawMessage `json:"expected"`
	ExpectedError bool            `json:"expectedError"`
	ErrorMessage  string          `json:"errorMessage"`
	Note          string          `json:"note"`
}

// cueDeviations lists kinitiras' CUE cases modwright does not run as they
// are, with the reason.
var cueDeviations = map[string]string{
	"TestCueDoAndReturn#3": "a check of kinitiras' Go API (the output argument must be settable), not of CUE: no such argument here",
	"TestCueDoAndReturn#4": "a check of kinitiras' Go API (the output argument must not be nil), not of CUE: no such argument here",
}

// tokenServer is the HTTP server kinitiras' processing.http case calls
// (127.0.0.1:8090: /api/v1/token?val=X answers {"token": X}), without a
// network.
func tokenServer(_ context.Context, t cue.Task) ([]byte, error) {
	u, err := url.Parse(t.URL)
	if err != nil || u.Host != "127.0.0.1:8090" || u.Path != "/api/v1/token" {
		return nil, fmt.Errorf("no route to %s", t.URL)
	}
	return json.Marshal(map[string]string{"token": u.Query().Get("val")})
}

func TestConformanceCUE(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", "cue-cases.json")
	b, err := os.ReadFile(filepath.Join(dir, "cue-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []cueCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 16 {
		t.Fatalf("%d cases; the data has 16", len(file.Cases))
	}
	for _, l := range languages(t) {
		t.Run(l.name, func(t *testing.T) { runCUECases(t, l.Language, file.Cases) })
	}
}

func runCUECases(t *testing.T, l cue.Language, cases []cueCase) {
	pass := 0
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := cueDeviations[c.Name]; ok {
				t.Skipf("documented deviation: %s", why)
			}
			p, ds := l.CompileExpr(&lang.Env{Name: "t"}, c.CUE)
			var params map[string]any
			if len(c.Parameters) > 0 {
				v, err := value.Decode(c.Parameters)
				if err != nil {
					t.Fatal(err)
				}
				params, _ = v.(map[string]any)
			}
			var got any
			var err error
			if ds != nil {
				err = ds[0]
			} else {
				got, err = p.RunTasks(context.Background(), params, c.OutputName, tokenServer)
			}
			if c.ExpectedError {
				if err == nil {
					t.Fatalf("no error, got %v; kinitiras: %s (%s)", got, c.ErrorMessage, c.Note)
				}
				t.Logf("error %v; kinitiras: %s", err, c.ErrorMessage)
				pass++
				return
			}
			if err != nil {
				t.Fatalf("error %v; kinitiras: %s", err, c.Expected)
			}
			want, err := value.Decode(c.Expected)
			if err != nil {
				t.Fatal(err)
			}
			if c.OutputName == cue.OutputValidate {
				// kinitiras decodes validate into its result struct.
				valid, reason, err := cue.ValidateResult(got)
				if err != nil {
					t.Fatal(err)
				}
				got = map[string]any{"valid": valid, "reason": reason}
			}
			if !value.Equal(want, got) {
				t.Errorf("(-kinitiras +ours):\n%s", cmp.Diff(want, got))
				return
			}
			pass++
		})
	}
	t.Logf("%d of %d kinitiras CUE cases pass", pass, len(cases))
}

// TestTaskNeedsTasks: a program with processing.http run where nothing
// runs tasks fails, naming why.
func TestTaskNeedsTasks(t *testing.T) {
	p, ds := cue.Language{}.CompileExpr(&lang.Env{Name: "t"}, "processing: {http: {url: \"http://x\"}, output: {a?: int}}\nout: processing.output")
	if ds != nil {
		t.Fatal(ds)
	}
	if _, err := p.Run(context.Background(), nil, "out"); !errors.Is(err, cue.ErrNoTasks) {
		t.Errorf("error %v", err)
	}
	got, err := p.RunTasks(context.Background(), nil, "out", func(context.Context, cue.Task) ([]byte, error) { return []byte(`{"a": 1}`), nil })
	if err != nil || !value.Equal(got, map[string]any{"a": json.Number("1")}) {
		t.Errorf("got %v, %v", got, err)
	}
}
