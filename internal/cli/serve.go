package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/modwright/modwright/internal/certs"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/gctune"
	"github.com/modwright/modwright/internal/kinds"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/webhook"
)

type serveOptions struct {
	standalone     bool
	rules          []string
	port           int
	bindAddress    string
	certDir        string
	certHosts      []string
	clusterRules   string
	maxReviewBytes int64
	reviewTimeout  time.Duration
	maxInFlight    int
	maxMemory      int64
	failOpen       bool
	shutdownDelay  time.Duration
	pprof          bool
	gcPercent      int
	gcHeadroom     string
	gcBulkHeadroom string
	memLimitRatio  float64
	logFormat      string
	verbosity      int
	operator       operatorOptions
	// cueWorkers, cueWorkerMemory, cueTimeout: --cue-workers,
	// --cue-worker-memory, --cue-timeout.
	cueWorkers      int
	cueWorkerMemory int64
	cueTimeout      time.Duration
	// cueWorkerCommand makes a CUE worker's command (nil: this binary's
	// cue-worker command).
	cueWorkerCommand func() *exec.Cmd
}

// defaultGCPercent is --gc-percent's default: the collector lets the heap
// grow to 5 times what the last collection found live (Go's own default,
// GOGC=100, is 2 times). A review allocates about 50 KB over a live heap of
// a few MB, so at GOGC=100 a collection ran every ~60 reviews and the
// reviews that met one made the tail latency (BENCHMARKS.md); 400 costs
// about 10 MiB of RSS.
const defaultGCPercent = 400

// defaultGCHeadroom is --gc-max-headroom's default: what --gc-percent lets
// the heap grow by over a live heap of 4 MiB. The admission path's live
// heap is 5 MB with 100 ModRules and 9 MB with 1,000, and a review
// allocates about 11 KB: with 16 MiB a collection runs every ~1,500 reviews
// (1.5 s at 1,000 reviews/s), and the heap stays 16 MiB smaller than with
// 32Mi for 2% more CPU flat out with 1,000 rules (BENCHMARKS.md). A large
// live heap (a big cluster's graph) grows by no more than this either;
// --gc-bulk-headroom applies during bulk work.
const defaultGCHeadroom = "16Mi"

// defaultGCBulkHeadroom is --gc-bulk-headroom's default, the bound during
// bulk work, which builds a large live heap fast: the rules' compilation
// until ready (10,000 ModRules: 1.09-1.13 s to ready with 32Mi, 1.25-1.39 s
// with 16Mi) and a background scan (100-135 MB live with 50,000 objects;
// BENCHMARKS.md: with 32Mi the scan peaks at 244 MiB, 290 MiB with 64Mi and
// the walk 10 s shorter).
const defaultGCBulkHeadroom = "32Mi"

// defaultShutdownDelay is --shutdown-delay's default: time for the
// endpoints to drop a terminating replica and for the API server to move
// its connections (it reconnects when a replica says GOAWAY).
const defaultShutdownDelay = 5 * time.Second

// envPrefix prefixes the environment variables that set serve's flags:
// --webhook-port is MODWRIGHT_WEBHOOK_PORT.
const envPrefix = "MODWRIGHT_"

func newServeCmd(s Streams) *cobra.Command { return newServeCmdWith(s, &serveOptions{}) }

// newServeCmdWith is serve with its flags bound to o.
func newServeCmdWith(s Streams, o *serveOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [--standalone --rules PATH [--rules PATH]...] [flags]",
		Short: "Serve the admission webhooks",
		Long:  serveLong,
		Example: `  # in a cluster (deploy/ sets these flags):
  modwright serve --namespace modwright-system --cluster-rules-namespace kubemod-system

  # without a cluster:
  modwright serve --standalone --rules examples/rules --cert-dir /tmp/modwright-certs
  curl --cacert /tmp/modwright-certs/ca.crt https://localhost:9443/readyz`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return bindEnv(cmd.Flags(), os.LookupEnv)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), o, s)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// serveLong is serve's help.
const serveLong = `serve answers Kubernetes admission reviews with rules: ModRules,
ModwrightPolicies, ClusterModwrightPolicies and kinitiras' policies.

Without --standalone it is the in-cluster operator (see docs/operator.md):
rules come from the API server through informers and are compiled once
per generation into the serving snapshot, swapped atomically; every replica
serves from its own snapshot. It serves, on --webhook-port (TLS 1.2+):
  /dragnet-mutate       the mutating webhook every targeted object goes through
                        (the rules' mutations)
  /dragnet-validate     the validating webhook it goes through (the rules'
                        validations, on the final object)
  /dragnet-webhook      both at once (KubeMod's path)
  /podbinding-webhook   records a bound Pod's node (ref.kubemod.io/nodename)
                        when it is annotated ref.kubemod.io/inject-node-ref: "true"
  /validate-rule        refuses rules that do not compile, with field errors
plus /metrics and the relationship graph's read API (/api/v1alpha1/resources/,
docs/graph.md) on --metrics-bind-address and /healthz, /readyz on
--health-probe-bind-address (ready once the caches of every rule kind, of Namespaces and Nodes
and the graph's informers have synced, the first snapshot is published and a
serving certificate exists). The graph (--graph) is fed by informers of the
core kinds and of the custom resources the --rule-pack packs name. The elected
leader writes the rules' status (observedGeneration, a Ready condition,
Warning events for rules that do not compile), keeps a CA and
serving certificate in --cert-secret (renewed before expiry) and keeps the
caBundle and the dragnet's --target-resources of the named webhook
configurations correct, re-applying them when something overwrites them.
With --cert-management external, cert-manager provides the Secret and the
caBundle instead.

With --standalone it needs no Kubernetes API at all: rules come from files and
directories (read as 'modwright apply --rules' reads them), and the dragnet is
served over HTTPS (TLS 1.2+, HTTP/2), speaking AdmissionReview
admission.k8s.io/v1 (and v1beta1), at three paths:
  /dragnet-webhook   every rule, mutations and validations (KubeMod's path)
  /dragnet-mutate    mutations alone: point a MutatingWebhookConfiguration here
  /dragnet-validate  validations alone: point a ValidatingWebhookConfiguration
                     here, so that they see the final object (after every
                     mutating webhook and admission policy)
with the CA from <cert-dir>/ca.crt as caBundle. The server also serves /healthz, /readyz (ready
once the rules are loaded) and /metrics (Prometheus).

When --cert-dir holds no usable tls.crt/tls.key, a CA and a serving certificate
for localhost, 127.0.0.1, ::1, the host name and every --cert-host are created
there (ca.crt, ca.key, tls.crt, tls.key), and renewed 30 days before they
expire. A certificate provisioned by someone else (no ca.key beside it) is used
as it is and never overwritten; it is re-read when the files change.

Rules that do not compile are kept, logged and counted in the metric
modwright_rule_broken; the others serve. Paths without any rule serve no
rules (with a warning in the log); paths that cannot be read stop the start.
Send SIGHUP to reload the rules: a reload that cannot read the files keeps the previous rules serving.

On SIGTERM (or SIGINT) serve stops in steps: /readyz fails at once; the
webhooks are still served for --shutdown-delay (5s), while the Service's
endpoints drop the replica and the API server moves its connections; then the
server stops listening, tells HTTP/2 clients to go away and waits for the
reviews in flight, which finish with their own deadlines (a shutdown never
cancels them), for at most --review-timeout plus 5 seconds; then it exits.
In a cluster, terminationGracePeriodSeconds must exceed --shutdown-delay plus
the webhook's timeoutSeconds plus 5 seconds (the Helm chart checks it).

Connections are bounded: request headers must arrive within 10 seconds, a
whole request within --review-timeout and its answer within 5 seconds more;
idle connections are closed after 90 seconds, and an HTTP/2 connection carries
at most 100 concurrent streams (the API server opens another when one is full).

A review that cannot be evaluated (deadline, undecodable object, internal
error) is denied with code 500 so that no rule is silently skipped; use
--fail-open to admit it unchanged with a warning instead.

The garbage collector runs when the heap has grown by --gc-percent percent
over what the last collection found live (runtime/debug.SetGCPercent): 400 by
default, where Go's default is 100, for fewer collections and a shorter
latency tail. --gc-max-headroom (16Mi) bounds how much the heap grows between
two collections, lowering the percent while the live heap is over 4 MiB (1,000
rules: 9 MB; the relationship graph of a big cluster: far more), and
--gc-bulk-headroom (32Mi) during bulk work, which builds a large live heap
fast: until the rules are ready, and while a background scan runs. When the
GOGC environment variable is set, Go's own setting applies and the three flags
are ignored; the log says which applies.

In a container with a memory limit, the Go memory limit (GOMEMLIMIT, a soft
limit: the collector works harder as the heap nears it) is derived from it:
--memory-limit-ratio (0.9) of what the container's limit (its cgroup's) leaves
beside the CUE workers (--cue-workers x (--cue-worker-memory + 16 MiB)). The
review memory budget is half of it (--max-review-memory). When the GOMEMLIMIT
environment variable is set, it applies instead; --memory-limit-ratio=0 sets
none. The log says which applies.

Every flag can also be set from the environment: MODWRIGHT_ followed by the
flag name in upper case with - as _ (MODWRIGHT_WEBHOOK_PORT=8443); repeatable
flags take a comma-separated list. Flags given on the command line win.
`

// addFlags declares serve's flags.
func (o *serveOptions) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.standalone, "standalone", false, "serve without a Kubernetes API, rules from --rules")
	f.StringArrayVar(&o.rules, "rules", nil, "rule file or directory (repeatable; required with --standalone)")
	f.IntVar(&o.port, "webhook-port", 9443, "HTTPS port of the webhooks, health, readiness and metrics (0: any free port, logged)")
	f.StringVar(&o.bindAddress, "bind-address", "", "address to listen on (empty: every interface)")
	f.StringVar(&o.certDir, "cert-dir", filepath.Join(os.TempDir(), "modwright", "serving-certs"), "directory of tls.crt and tls.key (created with a CA when missing)")
	f.StringArrayVar(&o.certHosts, "cert-host", nil, "extra DNS name or IP address for a generated serving certificate (repeatable)")
	f.StringVar(&o.clusterRules, "cluster-rules-namespace", defaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
	f.Int64Var(&o.maxReviewBytes, "max-review-bytes", webhook.DefaultMaxReviewBytes, "largest AdmissionReview body accepted (HTTP 413 above)")
	f.DurationVar(&o.reviewTimeout, "review-timeout", webhook.DefaultTimeout, "upper bound of one evaluation (the API server's own timeout applies when shorter)")
	f.IntVar(&o.maxInFlight, "max-inflight-reviews", 0, "reviews evaluated at once; the others wait, their bodies read, up to their deadline (0: 4 per CPU, at least 8)")
	f.Int64Var(&o.maxMemory, "max-review-memory", 0, "memory budget, in bytes, of the reviews being evaluated, estimated from their bodies; reviews being read may hold half as much more (0: half of the Go memory limit when one is set: GOMEMLIMIT or --memory-limit-ratio; else 256 MiB)")
	f.IntVar(&o.cueWorkers, "cue-workers", 0, "CUE programs are checked and evaluated in at most this many worker processes, each killed at its evaluation's deadline or past --cue-worker-memory (0: one per CPU, at least 2; -1: in this process, where an evaluation past its deadline runs on)")
	f.Int64Var(&o.cueWorkerMemory, "cue-worker-memory", cuelang.DefaultWorkerMemory, "heap, in bytes, a CUE worker may use; past it its evaluation fails with a limit error")
	f.DurationVar(&o.cueTimeout, "cue-timeout", cuelang.DefaultTimeout, "time one CUE evaluation may run in its worker (its review's deadline bounds it too); past it the worker is killed and the evaluation fails with a limit error")
	f.BoolVar(&o.failOpen, "fail-open", false, "admit objects unchanged (with a warning) when evaluation fails, instead of denying them")
	f.DurationVar(&o.shutdownDelay, "shutdown-delay", defaultShutdownDelay, "on SIGTERM, keep serving this long with /readyz failing (so that the API server and the Service stop sending here), then wait for the reviews in flight and exit")
	f.BoolVar(&o.pprof, "pprof", false, "serve Go profiles under /debug/pprof/ (for performance work; the operator serves them on its metrics port)")
	f.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "garbage collection target: collect when the heap has grown by this many percent (ignored when GOGC is set)")
	f.StringVar(&o.gcHeadroom, "gc-max-headroom", defaultGCHeadroom, "most the heap grows by between two collections, whatever --gc-percent allows over a large live heap (a quantity: 16Mi; 0: no bound; ignored when GOGC is set)")
	f.StringVar(&o.gcBulkHeadroom, "gc-bulk-headroom", defaultGCBulkHeadroom, "most the heap grows by between two collections during bulk work (the rules' compilation until ready, a reload, a background scan), when more than --gc-max-headroom (a quantity: 32Mi; 0: no bound; ignored when GOGC is set)")
	f.Float64Var(&o.memLimitRatio, "memory-limit-ratio", defaultMemoryLimitRatio, "the Go memory limit is this fraction of what the container's memory limit leaves beside the CUE workers (0: none; ignored when GOMEMLIMIT is set)")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	f.IntVarP(&o.verbosity, "v", "v", 0, "log verbosity: 0 logs errors, denials and rule loads; 1 adds every patch")
	addOperatorFlags(f, &o.operator)
}

// bindEnv sets every flag not given on the command line from its
// MODWRIGHT_* environment variable.
func bindEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		v, ok := lookup(name)
		if !ok {
			return
		}
		values := []string{v}
		if fl.Value.Type() == "stringArray" {
			values = strings.Split(v, ",")
		}
		for _, x := range values {
			if serr := fl.Value.Set(strings.TrimSpace(x)); serr != nil {
				err = usageError("%s=%q: %v", name, v, serr)
				return
			}
		}
		fl.Changed = true
	})
	return err
}

func newLogger(format string, verbosity int, w io.Writer) (logr.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.Level(-verbosity)}
	switch format {
	case "json":
		return logr.FromSlogHandler(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return logr.FromSlogHandler(slog.NewTextHandler(w, opts)), nil
	}
	return logr.Logger{}, usageError("--log-format must be json or text, not %q", format)
}

// applyGCPercent sets the collector's target to percent, bounded to grow
// the heap by at most headroom bytes (gctune), unless the GOGC environment
// variable is set (then the runtime has applied it already), and logs
// which applies. The tuner it returns (nil under GOGC) runs until stopped.
func applyGCPercent(percent int, headroom uint64, lookup func(string) (string, bool), log logr.Logger) *gctune.Tuner {
	if v, ok := lookup("GOGC"); ok && v != "" {
		log.Info("garbage collection: GOGC is set and applies; --gc-percent and --gc-max-headroom are ignored", "GOGC", v)
		return nil
	}
	t := gctune.Start(percent, headroom)
	log.Info("garbage collection", "gcPercent", percent, "maxHeadroomBytes", headroom)
	return t
}

// loadBulk reads and compiles the rules' files with the collector's
// headroom widened (bulk, when not nil).
func loadBulk(files *source.FileSource, bulk func() (end func())) error {
	if bulk != nil {
		defer bulk()()
	}
	_, err := files.Load()
	return err
}

// headroomBytes is a headroom flag's quantity in bytes.
func headroomBytes(flag, value string) (uint64, error) {
	q, err := resource.ParseQuantity(value)
	if err != nil || q.Sign() < 0 {
		return 0, usageError("--%s must be a quantity of bytes (16Mi, 0 for no bound), not %q", flag, value)
	}
	return uint64(q.Value()), nil
}

// widenForBulk widens the collector's headroom to headroom bytes until
// the function it returns is called (the auditor's DuringScan, the rules'
// first compilation); nil without a tuner (GOGC set).
func widenForBulk(t *gctune.Tuner, headroom uint64) func() (end func()) {
	if t == nil {
		return nil
	}
	return func() func() { return t.Widen(headroom) }
}

// checkServe checks serve's flags, and returns the two headrooms in bytes
// (--gc-max-headroom, --gc-bulk-headroom).
func checkServe(o *serveOptions) (headroom, bulkHeadroom uint64, err error) {
	if !o.standalone && len(o.rules) > 0 {
		return 0, 0, usageError("--rules needs --standalone (the operator reads rules from the API server)")
	}
	if o.standalone && len(o.rules) == 0 {
		return 0, 0, usageError("--standalone needs at least one --rules PATH")
	}
	if o.port < 0 || o.port > 65535 {
		return 0, 0, usageError("--webhook-port %d is not a port", o.port)
	}
	if o.shutdownDelay < 0 {
		return 0, 0, usageError("--shutdown-delay must not be negative, not %s", o.shutdownDelay)
	}
	if o.gcPercent < 1 {
		return 0, 0, usageError("--gc-percent must be at least 1, not %d (GOGC=off turns the collector off)", o.gcPercent)
	}
	if headroom, err = headroomBytes("gc-max-headroom", o.gcHeadroom); err != nil {
		return 0, 0, err
	}
	if bulkHeadroom, err = headroomBytes("gc-bulk-headroom", o.gcBulkHeadroom); err != nil {
		return 0, 0, err
	}
	if o.memLimitRatio < 0 || o.memLimitRatio > 1 || math.IsNaN(o.memLimitRatio) {
		return 0, 0, usageError("--memory-limit-ratio must be between 0 and 1, not %v", o.memLimitRatio)
	}
	return headroom, bulkHeadroom, nil
}

func runServe(ctx context.Context, o *serveOptions, s Streams) error {
	headroom, bulkHeadroom, err := checkServe(o)
	if err != nil {
		return err
	}
	log, err := newLogger(o.logFormat, o.verbosity, s.Err)
	if err != nil {
		return err
	}
	tuner := applyGCPercent(o.gcPercent, headroom, os.LookupEnv, log)
	if tuner != nil {
		defer tuner.Stop()
	}
	// Before the webhook's review budget, which is half of it.
	memoryLimit{ratio: o.memLimitRatio, reserved: cueReserved(o.cueWorkers, o.cueWorkerMemory, cuelang.DefaultMaxWorkers()),
		lookup: os.LookupEnv, container: memlimit.FromCgroup, set: debug.SetMemoryLimit}.apply(log)
	if ctx == nil {
		ctx = context.Background()
	}
	// The packages' initialization is over: most of the binary's pages it
	// read will not be read again (once more when the rules are ready).
	releaseStartPages(log, "start")
	bulk := widenForBulk(tuner, bulkHeadroom)
	if !o.standalone {
		return runOperator(ctx, o, log, bulk)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)

	hosts := append(certs.DefaultHosts(), o.certHosts...)
	if o.bindAddress != "" && net.ParseIP(o.bindAddress) != nil {
		hosts = append(hosts, o.bindAddress)
	}
	bundle, generated, err := certs.Ensure(o.certDir, certs.Options{Hosts: hosts, Now: time.Now()}, 30*24*time.Hour)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	log.Info("serving certificate", "dir", o.certDir, "generated", generated, "notAfter", bundle.NotAfter.Format(time.RFC3339),
		"caBundle", filepath.Join(o.certDir, certs.CAFile))

	cue, stopCUE, err := o.cueLanguage()
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	defer stopCUE()
	store := &source.Store{}
	kreg := newServingRegistry(o.clusterRules, cue)
	files := &source.FileSource{
		Paths:   o.rules,
		Kinds:   kreg,
		Store:   store,
		Log:     log.WithName("rules"),
		Metrics: m,
		// An empty rule directory is a legitimate start (rules arrive
		// later, with a reload); it is logged as a warning.
		AllowEmpty: true,
	}
	dragnet := o.dragnet("dragnet", store, engine.Options{}, observersOf(kreg, reg), log, m)
	srv, err := webhook.NewServer(o.serverOptions(webhook.ServerOptions{
		CertFile: filepath.Join(o.certDir, certs.CertFile),
		KeyFile:  filepath.Join(o.certDir, certs.KeyFile),
		Handlers: map[string]http.Handler{webhook.DragnetPath: dragnet,
			webhook.MutatePath: dragnet.Phase(engine.Mutate), webhook.ValidatePath: dragnet.Phase(engine.Validate)},
		Ready:    store.Ready,
		Gatherer: reg,
		Pprof:    o.pprof,
		Log:      log.WithName("server"),
	}))
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	log.Info("serving", "address", srv.Addr().String(), "webhook", webhook.DragnetPath, "standalone", true)

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := loadBulk(files, bulk); err != nil {
		_ = srv.Close() // never ready: nothing to drain
		<-served
		return &ExitError{Code: 2, Err: err}
	}
	releaseStartPages(log, "ready")
	for {
		select {
		case <-hup:
			if err := loadBulk(files, bulk); err != nil {
				log.Error(err, "reloading the rules failed; the previous rules keep serving")
			}
		case err := <-served:
			if err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("server: %w", err)}
			}
			return nil
		case <-ctx.Done():
			if err := <-served; err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("server shutdown: %w", err)}
			}
			log.Info("stopped")
			return nil
		}
	}
}

// serverOptions completes so with the listen address, the timeouts and
// the shutdown delay serve's flags set. A request's body cannot usefully
// arrive after the review's deadline, so --review-timeout bounds the
// reading of a request; the answer must be written 5 seconds after that,
// and a stopping server waits that long (DrainTimeout) for the reviews in
// flight.
func (o *serveOptions) serverOptions(so webhook.ServerOptions) webhook.ServerOptions {
	so.Addr = net.JoinHostPort(o.bindAddress, strconv.Itoa(o.port))
	timeout := o.reviewTimeout
	if timeout <= 0 {
		timeout = webhook.DefaultTimeout
	}
	so.ReadTimeout = timeout
	so.WriteTimeout = timeout + 5*time.Second
	so.ShutdownDelay = o.shutdownDelay
	return so
}

// dragnet is the dragnet handler as serve's flags configure it; resolver
// serves syntheticRefs (nil: none).
// observersOf registers the kinds' own metrics with reg and returns their
// observers, as the dragnet takes them.
func observersOf(kreg *kinds.Registry, reg prometheus.Registerer) []webhook.Observer {
	var out []webhook.Observer
	for _, ob := range kreg.Observers() {
		reg.MustRegister(ob.Collectors()...)
		out = append(out, ob)
	}
	return out
}

func (o *serveOptions) dragnet(name string, store webhook.Snapshots, readers engine.Options, observers []webhook.Observer, log logr.Logger, m *metrics.Metrics) *webhook.Dragnet {
	d := webhook.NewDragnet(webhook.Options{
		Name:            name,
		Engine:          readers,
		Observers:       observers,
		Snapshots:       store,
		Log:             log.WithName(name),
		Metrics:         m,
		MaxReviewBytes:  o.maxReviewBytes,
		Timeout:         o.reviewTimeout,
		MaxInFlight:     o.maxInFlight,
		MaxReviewMemory: o.maxMemory,
		FailOpen:        o.failOpen,
	})
	eval, bodies := d.MemoryBudget()
	log.Info("review admission", "maxReviewMemory", eval, "bodyMemory", bodies, "maxReviewBytes", o.maxReviewBytes)
	return d
}
