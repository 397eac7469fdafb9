package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/auditor"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
)

type auditOptions struct {
	rules, files, contexts []string
	kubeconfig             string
	qps                    float64
	skipUnknown            bool
	namespace              string
	clusterRules           string
	output                 string
	all                    bool
	maxResults             int
	quiet                  bool
	// registry gives the kinds served (nil: newRegistry); tests set it.
	registry registryFunc
	// now stamps the reports (nil: time.Now); tests set it.
	now func() time.Time
}

func newAuditCmd(s Streams) *cobra.Command {
	o := &auditOptions{}
	cmd := &cobra.Command{
		Use:   "audit --rules PATH [--rules PATH]... (-f PATH|- [-f PATH]... | --kubeconfig FILE) [flags]",
		Short: "Check existing objects against the rules, as a background scan does, and report the results",
		Long: `audit evaluates the rules of every kind that validate against objects that
already exist, as the operator's background scan does: each object as it is
(no mutation), as a CREATE with no requester. Kyverno policies with
background: false do not run; a rule's failure never stops the others.

Each rule that applies to an object gives a result: pass, fail, warn, error
or skip. Kyverno's policies report each of their rules (with the policy's
severity and category); a ModwrightPolicy its validations (fail under any
validation action, Audit included); other kinds fail when they reject or
warn, and pass when they apply without either. A ModRule Reject reports only
its failures: its match is its condition; so does each of Kubernetes'
ValidatingAdmissionPolicies in --rules (with its bindings; fail when it
denies, warns or records a validation_failure audit annotation), which the
API server itself never audits (-f only).

The objects are manifests (-f), or every object of a live cluster of the
kinds the rules match (--kubeconfig; read only, listed page by page, at most
--qps requests per second; a kind the credentials may not list is reported
and the run exits 2). Rules read their context from --context; with
--kubeconfig and no --context, from the cluster, read only: Namespaces and
Nodes, API calls (GET), objects of any kind (a namespaced rule's as its
namespace's rule reader, modwright-rules, could read them).

Output (-o): table (the default: policy, rule, result, object, message),
json or yaml (the summary and the results), or policyreport: the
wgpolicyk8s.io/v1alpha2 reports Policy Reporter and Kyverno's tools read, one
PolicyReport per namespace and a ClusterPolicyReport for cluster-scoped
objects, each capped at --max-results-per-report results (fails first), its
summary always exact, a capped report annotated modwright.io/truncated.
Passing and skipped results are counted but listed only with --all (reports
always hold them, within the cap).

A summary line ends the run on stderr, with a progress line on a terminal
while a run is long; -q silences both.

Exit status: 0 when no result is fail or error, 1 when one is, 2 for invalid
rules or input.`,
		Example: `  modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml
  modwright audit --rules examples/kyverno/require-team.yaml -f examples/kyverno/resources.yaml -o policyreport`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "rules: a file, a directory or - (repeatable)")
	f.BoolVar(&o.skipUnknown, "skip-unknown-kinds", false, "warn about documents in --rules that are not rules of a served kind, instead of failing (exit 2)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "objects to check: file, directory or - for stdin (repeatable)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "check the objects of a live cluster instead of -f (read only: get and list on the kinds the rules match)")
	f.Float64Var(&o.qps, "qps", 20, "most list requests per second made to the cluster (--kubeconfig)")
	f.StringArrayVar(&o.contexts, "context", nil, "objects the rules read (Namespaces, ConfigMaps, recorded API responses; repeatable)")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace assumed for namespaced objects that carry none")
	f.StringVar(&o.clusterRules, "cluster-rules-namespace", defaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json, yaml or policyreport")
	f.BoolVar(&o.all, "all", false, "list passing and skipped results too (table, json, yaml)")
	f.IntVar(&o.maxResults, "max-results-per-report", audit.DefaultMaxResults, "most results one report holds (-o policyreport); its summary counts them all")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary line and no progress on stderr")
	_ = cmd.MarkFlagRequired("rules")
	cmd.MarkFlagsOneRequired("filename", "kubeconfig")
	cmd.MarkFlagsMutuallyExclusive("filename", "kubeconfig")
	return cmd
}

func runAudit(ctx context.Context, o *auditOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if !slices.Contains([]string{"table", "json", "yaml", "policyreport"}, o.output) {
		return usageError("--output must be table, json, yaml or policyreport, not %q", o.output)
	}
	if o.maxResults <= 0 {
		return usageError("--max-results-per-report must be positive, not %d", o.maxResults)
	}
	if err := checkStdin(o.rules, o.files, nil, o.contexts); err != nil {
		return err
	}
	snap, policies, err := loadRules(o.rules, s, o.registry.kinds(o.clusterRules), ruleLoading{policies: true, skipUnknown: o.skipUnknown})
	if err != nil {
		return err
	}
	resolver, err := resolverFor(o.contexts, s)
	if err != nil {
		return err
	}
	vaps, err := audit.NewAdmissionPolicies(policies, contextObjects(resolver), o.namespace)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	report := audit.NewReport(o.maxResults)
	var listed []audit.Result
	add := func(res []audit.Result) {
		for _, r := range res {
			report.Add(r)
			if o.all || (r.Result != audit.Pass && r.Result != audit.Skip) {
				listed = append(listed, r)
			}
		}
	}
	var objects int
	var unlisted []string
	if o.kubeconfig != "" {
		objects, unlisted, err = auditCluster(ctx, o, s, snap, resolver, policies, contextObjects(resolver), add)
	} else {
		objects, err = auditFiles(ctx, o, s, audit.NewScanner(snap, engineOptions(resolver, nil)), vaps, add)
	}
	if err != nil {
		return err
	}
	sum := report.Summary()
	if err := writeAudit(s.Out, o, listed, sum, report); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if !o.quiet {
		fmt.Fprintln(s.Err, auditSummary(objects, snap.Len()+vaps.Len(), sum, o.output != "policyreport", o.all))
	}
	if len(unlisted) > 0 {
		return &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: could not list %s (their objects are not audited)", strings.Join(unlisted, ", "))}
	}
	if sum[audit.Fail]+sum[audit.Error] > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// auditFiles scans the objects of -f (with vaps: Kubernetes'
// admission policies in --rules too).
func auditFiles(ctx context.Context, o *auditOptions, s Streams, scanner *audit.Scanner, vaps *audit.AdmissionPolicies, add func([]audit.Result)) (int, error) {
	objs, err := source.ReadPaths(o.files, s.In)
	if err != nil {
		return 0, &ExitError{Code: 2, Err: err}
	}
	prog := newProgress(s.Err, "audit", len(objs), o.quiet)
	defer prog.clear()
	for i := range objs {
		a := newAdmission(objs[i].Object, o.namespace)
		res, err := scanner.Scan(ctx, a.obj, a.ns)
		if err != nil {
			prog.clear()
			return 0, evaluationError(&objs[i], err)
		}
		add(res)
		add(vaps.Check(ctx, a.obj, a.ns))
		prog.step(i + 1)
	}
	return len(objs), nil
}

// auditCluster scans the objects of a live cluster, read only: every
// object of the kinds the rules and Kubernetes' admission policies in
// policies can match, listed page by page (the policies read the
// cluster's Namespaces, listed first, and the params among objects); the
// resources the credentials may not list are returned (their objects are
// not audited: the run exits 2 after its results).
func auditCluster(ctx context.Context, o *auditOptions, s Streams, snap *engine.Snapshot, resolver engine.ObjectReader, policies *admissionpolicy.Set, objects []map[string]any, add func([]audit.Result)) (int, []string, error) {
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return 0, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	cfg.QPS, cfg.Burst = float32(o.qps), max(1, int(2*o.qps))
	readers := engineOptions(resolver, nil)
	if resolver == nil {
		if readers, err = clusterReaders(cfg); err != nil {
			return 0, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: %w", err)}
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	var vaps *audit.AdmissionPolicies
	if names, _ := policies.ValidatingPolicies(); len(names) > 0 {
		nss, err := auditor.ListObjects(ctx, dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}), auditor.MaxPolicyObjects)
		if err != nil {
			return 0, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: the admission policies' namespaces: %w", err)}
		}
		if vaps, err = audit.NewAdmissionPolicies(policies, append(nss, objects...), o.namespace); err != nil {
			return 0, nil, &ExitError{Code: 2, Err: err}
		}
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(s.Err, nil))
	w, err := auditor.New(auditor.Options{Client: dyn, Discovery: disc, Readers: readers, Policies: vaps, Log: log}).Walk(ctx, snap, add)
	if err != nil {
		return w.Objects, nil, &ExitError{Code: 2, Err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	return w.Objects, w.Unlisted, nil
}

// clusterReaders are what rules read of a live cluster when --context
// gives nothing: Namespaces and Nodes, API calls (GET only), objects of any
// kind (a namespaced rule's as its namespace's rule reader could read
// them, asked of the API server), read with the credentials of cfg,
// uncached but for API calls (a few seconds).
func clusterReaders(cfg *rest.Config) (engine.Options, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return engine.Options{}, err
	}
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return engine.Options{}, err
	}
	authz := &cluster.Authorizer{Reviews: clients.AuthorizationV1().SubjectAccessReviews()}
	return engine.Options{
		Objects:    &cluster.Resolver{Reader: c},
		API:        &cluster.APIClient{REST: clients.Discovery().RESTClient(), TTL: 10 * time.Second, Authorizer: authz},
		Kinds:      &cluster.Kinds{Reader: c, Mapper: c.RESTMapper()},
		Authorizer: authz,
		RuleReader: cluster.DefaultRuleReader,
	}, nil
}

func writeAudit(w io.Writer, o *auditOptions, listed []audit.Result, sum map[audit.Status]int, report *audit.Report) error {
	switch o.output {
	case "policyreport":
		now := time.Now
		if o.now != nil {
			now = o.now
		}
		objs := report.Objects(now().UTC())
		out := make([]any, len(objs))
		for i, r := range objs {
			out[i] = r
		}
		return write(w, "yaml", out, nil)
	case "json", "yaml":
		summary := map[string]int{}
		for _, st := range audit.Statuses {
			summary[string(st)] = sum[st]
		}
		if listed == nil {
			listed = []audit.Result{}
		}
		v := struct {
			Summary map[string]int `json:"summary"`
			Results []audit.Result `json:"results"`
		}{summary, listed}
		if o.output == "json" {
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "    ")
			return enc.Encode(v)
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if len(listed) == 0 {
		return nil
	}
	rows := make([][]any, len(listed))
	for i, r := range listed {
		rows[i] = []any{r.Policy, r.Rule, string(r.Result), r.Resource.String(), r.Message}
	}
	return printTable(w, []string{"POLICY", "RULE", "RESULT", "OBJECT", "MESSAGE"}, rows)
}

// auditSummary is the run's last line on stderr.
func auditSummary(objects, rules int, sum map[audit.Status]int, listing, all bool) string {
	total := 0
	parts := make([]string, len(audit.Statuses))
	for i, st := range audit.Statuses {
		total += sum[st]
		parts[i] = fmt.Sprintf("%d %s", sum[st], st)
	}
	line := fmt.Sprintf("audit: %s, %s: %s: %s", plural(objects, "object"), plural(rules, "rule"),
		plural(total, "result"), strings.Join(parts, ", "))
	if listing && !all && sum[audit.Pass]+sum[audit.Skip] > 0 {
		line += " (pass and skip not listed: --all lists them)"
	}
	return line
}
