package source

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/metrics"
)

// ErrNoRules is returned when the rule paths hold no rule at all and the
// FileSource does not allow that.
var ErrNoRules = errors.New("no rule found")

// FileSource builds snapshots from rule files and directories (as
// `modwright apply --rules` reads them) and publishes them to a Store.
type FileSource struct {
	Paths []string
	// Kinds are the rule kinds served. Keep one registry for the
	// FileSource's life: its kinds keep the parsed expressions of the
	// rules from one Load to the next (a reload, SIGHUP, re-reads and
	// recompiles every rule, and most of its expressions are those of the
	// previous load), bounded (modrule.CacheLimit).
	Kinds   *kinds.Registry
	Store   *Store
	Log     logr.Logger
	Metrics *metrics.Metrics // nil: none
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AllowEmpty accepts paths without any rule (an empty snapshot).
	AllowEmpty bool
}

// LoadReport describes one build.
type LoadReport struct {
	// Ready rules compiled; Broken ones did not (they are in the snapshot,
	// never applied); Undecodable documents are ModRules that could not be
	// decoded at all (unknown fields, wrong types), so are not in it.
	Ready, Broken, Undecodable int
	// Skipped names documents that are not ModRules.
	Skipped []string
	// Errors holds one error per rule or document that failed to load.
	Errors               []error
	Read, Compile, Index time.Duration
	PublishedAt          time.Time
}

func (f *FileSource) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

// Load reads, compiles and indexes the rules and publishes the snapshot.
// Rules that fail to compile are kept in the snapshot (never applied) and
// reported in the log, the metrics and the report; documents that cannot
// be decoded as ModRules are reported too. The error is non-nil only when
// the files cannot be read or parsed at all, define a ModRule twice
// (ErrDuplicateRule) or hold no rule when AllowEmpty is false: then nothing
// is published and the previous snapshot keeps serving.
func (f *FileSource) Load() (*LoadReport, error) {
	if f.Kinds == nil {
		return nil, errors.New("source: the FileSource has no Kinds")
	}
	rep := &LoadReport{}
	t0 := f.now()
	docs, err := ReadPaths(f.Paths, nil)
	if err != nil {
		f.Metrics.SnapshotFailed()
		return nil, err
	}
	t1 := f.now()
	res := LoadRules(docs, f.Kinds)
	if len(res.Duplicates) > 0 {
		// Serving either definition could drop a Reject rule unseen.
		f.Metrics.SnapshotFailed()
		return nil, errors.Join(res.Duplicates...)
	}
	t2 := f.now()
	snap := engine.NewSnapshot(res.Rules)
	t3 := f.now()
	rep.Read, rep.Compile, rep.Index = t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
	rep.Skipped, rep.Errors = res.Skipped, res.Errors
	rep.Broken = len(snap.Broken())
	rep.Ready = snap.Len() - rep.Broken
	rep.Undecodable = len(res.Errors) - rep.Broken
	if snap.Len() == 0 && len(res.Errors) == 0 && !f.AllowEmpty {
		f.Metrics.SnapshotFailed()
		return rep, fmt.Errorf("%w in %v", ErrNoRules, f.Paths)
	}
	if snap.Len() == 0 && len(res.Errors) == 0 {
		f.Log.Info("WARNING: no rule found; serving with no rules (add rules and reload)", "paths", f.Paths)
	}
	for _, s := range res.Skipped {
		f.Log.Info("skipped a document of no kind served", "document", s)
	}
	for _, e := range res.Errors {
		f.Log.Error(e, "rule failed to load; it is kept, reported, and never applied")
	}
	for _, d := range res.Deprecated {
		f.Log.Info("WARNING: a rule of a kind's former name", "rule", d)
	}
	// The metrics describe the snapshot before it serves (and turns
	// /readyz ready): whoever sees it published finds its build recorded.
	broken := make([]metrics.RuleRef, 0, rep.Broken)
	for _, r := range snap.Broken() {
		broken = append(broken, metrics.RuleRef{Kind: r.Info().Kind, Rule: r.Info().Key})
	}
	f.Metrics.SnapshotBuild(rep.Read, rep.Compile, rep.Index)
	rep.PublishedAt = f.now()
	f.Metrics.SnapshotPublished(rep.PublishedAt, rep.Ready, rep.Undecodable, broken)
	for _, o := range f.Kinds.Observers() {
		o.Published(snap)
	}
	f.Store.Publish(snap)
	f.Log.Info("rule snapshot published", "ready", rep.Ready, "broken", rep.Broken, "undecodable", rep.Undecodable,
		"read", rep.Read.String(), "compile", rep.Compile.String(), "index", rep.Index.String())
	return rep, nil
}
