package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/auditor"
	"github.com/modwright/modwright/internal/controller"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/generator"
	"github.com/modwright/modwright/internal/graphapi"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/metrics"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/pages"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
	"github.com/modwright/modwright/internal/translate"
	"github.com/modwright/modwright/internal/webhook"
)

// operatorOptions are serve's flags for the in-cluster operator.
type operatorOptions struct {
	kubeconfig       string
	namespace        string
	serviceName      string
	certSecret       string
	certManagement   string
	certTTL          time.Duration
	mutatingConfig   string
	validatingConfig string
	dragnetWebhook   string
	dragnetPolicy    string
	targetResources  []string
	metricsAddr      string
	probeAddr        string
	leaderElect      bool
	leaderElectionID string
	// Policies' context: apiCall reads and ConfigMap watches.
	apiCallTimeout  time.Duration
	apiCallMaxBytes int64
	apiCallCacheTTL time.Duration
	apiCallPOST     bool
	ruleReader      string
	configMapIdle   time.Duration
	contextCMs      bool
	contextRoles    bool
	crdSchemas      bool
	// kinitiras' kinds, and their http references' client.
	kinitiras bool
	// kyverno: serve Kyverno's ClusterPolicy and Policy, with the
	// PolicyExceptions of kyvernoExceptionNS.
	kyverno            bool
	kyvernoExceptionNS []string
	// kyvernoCEL: serve Kyverno's CEL policies (policies.kyverno.io).
	kyvernoCEL bool
	// generateResources are the resources whose generated objects are
	// watched, to keep synchronized ones as their rules make them.
	generateResources []string
	// generateRecoverAfter: the age of a record of generate work at which
	// the leader takes it up.
	generateRecoverAfter time.Duration
	gatekeeper           bool
	kinitirasPaths       bool
	kinitirasHosts       []string
	kinitirasHTTPTime    time.Duration
	kinitirasHTTPBytes   int64
	kinitirasHTTPTTL     time.Duration
	// Image data (Kyverno's image.GetMetadata) from registries.
	imageRegistries []string
	imagePullSecret []string
	imageTimeout    time.Duration
	imageTTL        time.Duration
	// The relationship graph and the rule packs deriving its edges.
	graph bool
	// compileNative installs the rules that translate exactly as admission
	// policies and takes them out of the webhook.
	compileNative bool
	// placement: which of the rules that translate run in the API server.
	placement     string
	rulePacks     []string
	openshiftPack string
	regoTimeout   time.Duration
	// The background scan (docs/audit.md).
	audit           bool
	auditInterval   time.Duration
	auditReports    string
	auditMaxResults int
	auditViolations int
	auditQPS        float64
	auditPageSize   int64
	// auditPolicies: the cluster's ValidatingAdmissionPolicies are
	// audited too.
	auditPolicies bool
	// restConfig, when set (the sandbox), is used instead of --kubeconfig.
	restConfig *rest.Config
}

// Names the deploy/ bundle and Helm chart use; the flags' defaults.
const (
	defaultNamespace      = "modwright-system"
	defaultServiceName    = "modwright-webhook"
	defaultCertSecret     = "modwright-webhook-cert"
	defaultWebhookConfigs = "modwright"
	defaultDragnetWebhook = "dragnet.modwright.io"
)

func addOperatorFlags(f interface {
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	StringVar(*string, string, string, string)
	StringVarP(*string, string, string, string, string)
	StringArrayVar(*[]string, string, []string, string)
	BoolVar(*bool, string, bool, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	Int64Var(*int64, string, int64, string)
}, o *operatorOptions) {
	f.DurationVar(&o.apiCallTimeout, "api-call-timeout", 5*time.Second, "upper bound of one apiCall context read (ModwrightPolicies)")
	f.Int64Var(&o.apiCallMaxBytes, "api-call-max-bytes", 2<<20, "largest apiCall response read (ModwrightPolicies); larger is an error")
	f.DurationVar(&o.apiCallCacheTTL, "api-call-cache-ttl", 5*time.Second, "how long an apiCall response is reused for the same method, path and body (0: never)")
	f.BoolVar(&o.apiCallPOST, "api-call-allow-post", false, "let ModwrightPolicies' apiCall entries POST (SubjectAccessReview-style calls); off: only GET")
	f.StringVar(&o.ruleReader, "rule-reader-service-account", cluster.DefaultRuleReader, "service account, in a namespaced rule's own namespace, whose rights its reads have (apiCall and configMap entries, kinitiras k8s and owner references; a SubjectAccessReview before each read; docs/security.md)")
	f.DurationVar(&o.configMapIdle, "configmap-idle", 10*time.Minute, "how long a ConfigMap no ModwrightPolicy read stays watched")
	f.BoolVar(&o.contextCMs, "policy-context-configmaps", true, "serve ModwrightPolicies' configMap context entries (needs get, list, watch on configmaps)")
	f.BoolVar(&o.contextRoles, "policy-context-roles", true, "serve request.roles and request.clusterRoles (needs get, list, watch on rolebindings and clusterrolebindings)")
	f.BoolVar(&o.crdSchemas, "policy-crd-schemas", true, "type the self of ModwrightPolicies' scoped CEL validations of custom resources by their CRDs' schemas, as apply --crd does (needs get, list, watch on customresourcedefinitions); off: dynamically typed")
	f.BoolVar(&o.kyverno, "kyverno", false, "serve Kyverno's ClusterPolicy and Policy (kyverno.io/v1; their CRDs must be installed, Kyverno's or the chart's; the operator waits for them)")
	f.BoolVar(&o.kyvernoCEL, "kyverno-cel", false, "serve Kyverno's CEL policies: ValidatingPolicy, MutatingPolicy and their Namespaced variants (policies.kyverno.io/v1; their CRDs must be installed, Kyverno's or the chart's; the operator waits for them)")
	f.BoolVar(&o.gatekeeper, "gatekeeper", false, "serve Gatekeeper's policies: ConstraintTemplates (templates.gatekeeper.sh; the operator installs each template's constraint CRD and writes the template's status) with their constraints, and the mutators (mutations.gatekeeper.sh Assign, AssignMetadata, ModifySet, AssignImage); the templates' and mutators' CRDs must be installed, Gatekeeper's; the operator waits for them")
	f.DurationVar(&o.generateRecoverAfter, "generate-recover-after", generator.DefaultStaleAfter, "age at which the leader takes up the record of generate work (a GenerateRequest in --namespace) that the replica which queued it did not finish: it stopped")
	f.StringArrayVar(&o.generateResources, "generate-resource", nil, "a resource (VERSION/RESOURCE for the core group, GROUP/VERSION/RESOURCE) whose objects generate rules synchronize: watched, so that one deleted or changed is made again as its rule says (repeatable; the operator needs get, list, watch, create, update, patch, delete on it, as for every resource generate rules write)")
	f.StringArrayVar(&o.kyvernoExceptionNS, "kyverno-exception-namespace", nil, "namespace whose Kyverno PolicyExceptions (kyverno.io/v2; policies.kyverno.io/v1 for the CEL policies) the policies honour (repeatable; none by default: as Kyverno's --exceptionNamespace, an exception lets objects through, so only namespaces its authors are trusted with)")
	f.BoolVar(&o.kinitiras, "kinitiras", true, "serve kinitiras' OverridePolicy, ClusterOverridePolicy and ClusterValidatePolicy (their CRDs must be installed; the operator waits for them)")
	f.BoolVar(&o.kinitirasPaths, "kinitiras-paths", false, "serve kinitiras' policies on kinitiras' own webhook paths (/mutate: override policies, /validate: validate policies), for webhook configurations with kinitiras' object selector; the dragnet then leaves them out")
	f.StringArrayVar(&o.kinitirasHosts, "kinitiras-http-hosts", nil, "hosts (host or host:port) kinitiras' http references and Kyverno's apiCall.service calls may reach (repeatable); none by default: such a call lets policy authors make the operator call URLs")
	f.StringArrayVar(&o.kinitirasHosts, "kyverno-service-hosts", nil, "the same list as --kinitiras-http-hosts, by the name Kyverno's users look for (apiCall.service calls share the kinitiras-http bounds)")
	f.DurationVar(&o.kinitirasHTTPTime, "kinitiras-http-timeout", time.Second, "upper bound of one kinitiras http reference request")
	f.Int64Var(&o.kinitirasHTTPBytes, "kinitiras-http-max-bytes", 1<<20, "largest kinitiras http reference response; larger is an error")
	f.DurationVar(&o.kinitirasHTTPTTL, "kinitiras-http-cache-ttl", time.Second, "how long a kinitiras http reference response is reused for the same request (a token: until it expires)")
	f.StringArrayVar(&o.imageRegistries, "image-registries", nil, "registries (host or host:port as images name them; index.docker.io for Docker Hub) Kyverno's image.GetMetadata reads image data from (repeatable); none: any registry, though never at a loopback, link-local or metadata address unless listed")
	f.StringArrayVar(&o.imagePullSecret, "image-pull-secrets", nil, "Secrets of the operator's namespace (type kubernetes.io/dockerconfigjson) whose credentials Kyverno's image.GetMetadata reads private registries with, as Kyverno's --imagePullSecrets (repeatable; needs get on them); none: anonymous")
	f.DurationVar(&o.imageTimeout, "image-data-timeout", 10*time.Second, "upper bound of reading one image's manifest and config from its registry")
	f.DurationVar(&o.imageTTL, "image-data-cache-ttl", 5*time.Minute, "how long an image's data is reused (a tag may move to another digest within it)")
	f.BoolVar(&o.compileNative, "compile-native", false, "run the ModRules, ModwrightPolicies and (with --kyverno-cel) Kyverno's ValidatingPolicies and MutatingPolicies that translate exactly (modwright compile) in the API server as admission policies the leader installs (needs create, update, patch, delete on validating/mutating admission policies and bindings), and take each out of the webhook once the API server holds its policy; rule statuses say where each runs (condition NativeAdmission)")
	f.StringVar(&o.placement, "compile-native-placement", "fastest", "with --compile-native: fastest keeps in the webhook the rules that run faster there (those whose requests the webhook is called for anyway, for a rule that does not translate: condition NativeAdmission False, reason WebhookFaster); native moves every rule that translates")
	f.BoolVar(&o.graph, "graph", true, "keep the relationship graph (docs/graph.md) from informers of the core kinds (needs get, list, watch on pods, services, persistentvolumeclaims, replicationcontrollers, deployments, statefulsets, daemonsets, replicasets, jobs, cronjobs, ingresses) and serve its read API on the metrics port; off: rules reading edges fail")
	f.StringArrayVar(&o.rulePacks, "rule-pack", nil, "a Rego rule pack, a directory or oci://REGISTRY/REPOSITORY:SEMVER (docs/rule-packs.md), deriving more edges (repeatable); the custom resources its modules route are watched while their CRDs exist (needs get, list, watch on customresourcedefinitions and on those resources). A pack that does not load is logged and skipped")
	f.DurationVar(&o.regoTimeout, "rego-timeout", rego.DefaultTimeout, "time budget of one evaluation of a rule pack's module, clamped to [50ms, 1s] (a warning when clamped); a module that runs longer is skipped for that object")
	f.StringVar(&o.openshiftPack, "openshift-pack", "auto", "the embedded OpenShift rule pack (Routes, DeploymentConfigs, BuildConfigs): auto loads it when the cluster serves route.openshift.io; true, false")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (empty: $KUBECONFIG, the in-cluster configuration, or ~/.kube/config)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace modwright runs in (its Secret, Service and leader-election lease)")
	f.StringVar(&o.serviceName, "service-name", defaultServiceName, "Service in front of the webhooks (the serving certificate covers its DNS names)")
	f.StringVar(&o.certSecret, "cert-secret", defaultCertSecret, "Secret holding the webhook serving certificate (tls.crt, tls.key, ca.crt)")
	f.StringVar(&o.certManagement, "cert-management", "self", "self: generate, rotate and inject the certificate; external: cert-manager (or another tool) writes the Secret and injects the caBundle")
	f.DurationVar(&o.certTTL, "cert-ttl", 365*24*time.Hour, "lifetime of a generated serving certificate (renewed after two thirds of it)")
	f.StringVar(&o.mutatingConfig, "mutating-webhook-configuration", defaultWebhookConfigs, "MutatingWebhookConfiguration kept correct (caBundle, dragnet target resources); empty: none")
	f.StringVar(&o.validatingConfig, "validating-webhook-configuration", defaultWebhookConfigs, "ValidatingWebhookConfiguration kept correct (caBundle); empty: none")
	f.StringVar(&o.dragnetWebhook, "dragnet-webhook-name", defaultDragnetWebhook, "name of the dragnet webhook inside the MutatingWebhookConfiguration")
	f.StringVar(&o.dragnetPolicy, "dragnet-failure-policy", "Fail", "the dragnet's failure policy once a replica is ready, set once when the configuration carries modwright.io/armed: \"false\" (the chart installs it Ignore until then): Fail or Ignore")
	f.StringArrayVar(&o.targetResources, "target-resources", controller.DefaultTargetResources(), "resources the dragnet intercepts: plural names in any group, or name.group (repeatable or comma-separated)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0: off)")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz (0: off)")
	f.BoolVar(&o.audit, "audit", false, "run the background scan on the leader (docs/audit.md): the rules that validate, checked against the objects already in the cluster, the results written as wgpolicyk8s.io reports; the scanned resources are watched and a namespace whose objects change is scanned again (needs get, list and watch on the resources the rules match, and on policyreports and clusterpolicyreports get, list, create, update, delete)")
	f.DurationVar(&o.auditInterval, "audit-interval", time.Hour, "time between full background scans (a rule change also starts one)")
	f.StringVar(&o.auditReports, "audit-reports", "crd", "where the background scan's reports go: crd (wgpolicyk8s.io PolicyReports and a ClusterPolicyReport, their CRDs installed) or endpoint (kept out of etcd: served as a List at "+auditor.MemoryPath+" on the metrics port)")
	f.IntVar(&o.auditMaxResults, "audit-max-results-per-report", audit.DefaultMaxResults, "most results one report holds (fails first); its summary counts them all")
	f.IntVar(&o.auditViolations, "audit-status-violations", auditor.DefaultMaxViolations, "most violations a rule's status lists, for the kinds that list them (Gatekeeper's constraints: status.violations, as its --constraint-violations-limit); status.totalViolations counts them all")
	f.BoolVar(&o.auditPolicies, "audit-admission-policies", true, "the background scan audits the cluster's ValidatingAdmissionPolicies too (which the API server never audits), read with their bindings, the Namespaces and their params at each full scan (needs list on them)")
	f.Float64Var(&o.auditQPS, "audit-qps", 20, "most list requests per second the background scan makes to the API server")
	f.Int64Var(&o.auditPageSize, "audit-page-size", auditor.DefaultPageSize, "objects per list request of the background scan (one page is held in memory at a time)")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader for the singleton writers (status, certificates); every replica serves admission regardless")
	f.StringVar(&o.leaderElectionID, "leader-election-id", "modwright.api.kubemod.io", "name of the leader-election Lease")
}

// serviceHosts are the DNS names of a Service.
func serviceHosts(service, namespace string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		service + "." + namespace + ".svc.cluster.local",
	}
}

// restConfig is the client configuration of --kubeconfig, else
// controller-runtime's (in-cluster, or $KUBECONFIG). Either way, unless the
// kubeconfig sets a rate, the clients have no client-side rate limit and
// rely on the API server's priority and fairness, as controller-runtime's
// configuration has them (client-go's default is 5 requests per second:
// an operator started with --kubeconfig was throttled where the same
// operator in the cluster was not). Clients that bound their own load (the
// background scan's) set their rate on a copy.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1 // as controller-runtime's GetConfig: no client-side limiter
	}
	return cfg, nil
}

// operator is one run of serve without --standalone, the in-cluster
// operator: what its phases build, in order (runOperator).
type operator struct {
	o    *serveOptions
	op   *operatorOptions
	log  logr.Logger
	cfg  *rest.Config
	kreg *kinds.Registry // the kinds served, built once
	// dragnetRules are the dragnet's rules (--target-resources).
	dragnetRules []admissionregv1.RuleWithOperations
	secret       types.NamespacedName

	graphSource  *cluster.GraphSource // nil without --graph
	extraHandler map[string]http.Handler
	auditMem     *auditor.MemoryStore // --audit-reports endpoint
	certs        *controller.CertProvider
	ws           *webhookServer
	mgr          manager.Manager
	m            *metrics.Metrics
	informers    []cache.Informer // Namespaces and Nodes
	store        *source.Store
	ruleSource   *cluster.RuleSource
	resolver     *cluster.Resolver
	// readers are what the dragnet's rules read beyond the object.
	readers   engine.Options
	served    webhook.Snapshots
	installer *controller.PolicyInstaller // nil without --compile-native
	gen       *generator.Generator        // nil without --kyverno and --kyverno-cel
	// bulk widens the collector's headroom during bulk work (--gc-bulk-headroom):
	// until the rules are ready, and while a background scan runs; nil:
	// it is not.
	bulk func() (end func())
}

// generator creates the objects generate rules and GeneratingPolicies ask
// for once their reviews are allowed (--kyverno, --kyverno-cel), and keeps the synchronized ones of
// the --generate-resource resources; the leader carries out what the rules
// acting on existing objects make of them (generateExisting,
// mutateExistingOnPolicyUpdate).
func (k *operator) generator(context.Context) error {
	if !k.op.kyverno && !k.op.kyvernoCEL {
		return nil
	}
	var watch []schema.GroupVersionResource
	for _, r := range k.op.generateResources {
		parts := strings.Split(r, "/")
		switch len(parts) {
		case 2:
			watch = append(watch, schema.GroupVersionResource{Version: parts[0], Resource: parts[1]})
		case 3:
			watch = append(watch, schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]})
		default:
			return usageError("--generate-resource %q: want VERSION/RESOURCE or GROUP/VERSION/RESOURCE", r)
		}
	}
	dyn, err := dynamic.NewForConfig(k.cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	replica, _ := os.Hostname() // the pod's name
	k.gen = generator.NewGenerator(generator.Options{Client: dyn, Mapper: k.mgr.GetRESTMapper(), Watch: watch, Snapshots: k.store, Readers: k.readers,
		Log: k.log.WithName("generate"), Metrics: generator.NewMetrics(lenientRegisterer{ctrlmetrics.Registry}),
		RecordNamespace: k.op.namespace, Replica: replica})
	if err := k.mgr.Add(k.gen); err != nil {
		return err
	}
	// The work a stopped replica had queued: the leader takes up its
	// stale records.
	after := max(k.op.generateRecoverAfter, time.Second)
	if err := k.mgr.Add(&generator.Recover{Generator: k.gen, Log: k.log.WithName("generate-recover"), StaleAfter: after, Every: min(generator.DefaultRecoverEvery, after)}); err != nil {
		return err
	}
	// generateExisting, mutateExistingOnPolicyUpdate: the leader
	// evaluates the existing objects when such a rule comes or changes.
	disc, err := discovery.NewDiscoveryClientForConfig(k.cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	if err := k.mgr.Add(&generator.Existing{Generator: k.gen, Snapshots: k.store, Client: dyn, Discovery: disc, Log: k.log.WithName("generate-existing")}); err != nil {
		return err
	}
	// The synchronized objects of a deleted policy go with it (unless
	// orphanDownstreamOnPolicyDelete).
	return k.mgr.Add(&generator.Downstream{Generator: k.gen, Snapshots: k.store, Log: k.log.WithName("generate-downstream")})
}

// runOperator is serve without --standalone: the in-cluster operator.
func runOperator(ctx context.Context, o *serveOptions, log logr.Logger, bulk func() (end func())) error {
	k, err := newOperator(o, log)
	if err != nil {
		return err
	}
	k.bulk = bulk
	if err := k.graph(ctx); err != nil {
		return err
	}
	mgrCtx, stopMgr, err := k.manager(ctx)
	if err != nil {
		return err
	}
	defer stopMgr()
	defer k.ws.srv.Close() // when the manager did not start it
	cue, stopCUE, err := o.cueLanguage()
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	defer stopCUE()
	var exceptions *cluster.CompiledSet
	if k.op.kyverno && len(k.op.kyvernoExceptionNS) > 0 {
		exceptions = newKyvernoExceptionSet(k.mgr.GetCache(), k.op.kyvernoExceptionNS, k.log.WithName("kyverno-exceptions"))
		if err := k.mgr.Add(exceptions); err != nil {
			return err
		}
	}
	var celExceptions *cluster.CompiledSet
	if k.op.kyvernoCEL && len(k.op.kyvernoExceptionNS) > 0 {
		celExceptions = newKyvernoCELExceptionSet(k.mgr.GetCache(), k.op.kyvernoExceptionNS, k.log.WithName("kyverno-cel-exceptions"))
		if err := k.mgr.Add(celExceptions); err != nil {
			return err
		}
	}
	k.kreg = newClusterRegistry(o.clusterRules, clusterKinds{kinitiras: k.op.kinitiras, kyverno: k.op.kyverno, kyvernoCEL: k.op.kyvernoCEL, gatekeeper: k.op.gatekeeper}, exceptions, celExceptions, cue)
	for _, step := range []func(context.Context) error{k.contextReaders, k.compileNative, k.generator, k.webhooks, k.rules, k.backgroundScan, k.certificates, k.readiness} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	log.Info("starting the operator", "webhookPort", o.port, "namespace", k.op.namespace,
		"clusterRulesNamespace", o.clusterRules, "certManagement", k.op.certManagement, "leaderElection", k.op.leaderElect)
	if err := k.mgr.Start(mgrCtx); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	log.Info("stopped")
	return nil
}

// newOperator checks the operator's flags and reads the client
// configuration.
func newOperator(o *serveOptions, log logr.Logger) (*operator, error) {
	op := &o.operator
	if op.certManagement != "self" && op.certManagement != "external" {
		return nil, usageError("--cert-management must be self or external, not %q", op.certManagement)
	}
	if op.dragnetPolicy != "Fail" && op.dragnetPolicy != "Ignore" {
		return nil, usageError("--dragnet-failure-policy must be Fail or Ignore, not %q", op.dragnetPolicy)
	}
	if _, err := translate.ParsePlacement(op.placement); err != nil {
		return nil, usageError("--compile-native-placement: %v", err)
	}
	if !op.graph && len(op.rulePacks) > 0 {
		return nil, usageError("--rule-pack needs --graph")
	}
	if op.auditReports != "crd" && op.auditReports != "endpoint" {
		return nil, usageError("--audit-reports must be crd or endpoint, not %q", op.auditReports)
	}
	if op.audit && op.auditReports == "endpoint" && op.metricsAddr == "0" {
		return nil, usageError("--audit-reports endpoint serves the reports on the metrics port: --metrics-bind-address must not be 0")
	}
	var targets []string
	for _, t := range op.targetResources {
		targets = append(targets, splitList(t)...)
	}
	dragnetRules, err := controller.TargetRules(targets)
	if err != nil {
		return nil, usageError("--target-resources: %v", err)
	}
	cfg, err := op.restConfig, error(nil)
	if cfg == nil {
		cfg, err = restConfig(op.kubeconfig)
	}
	if err != nil {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	ctrl.SetLogger(log) // controller-runtime's internal log sink
	k := &operator{o: o, op: op, log: log, cfg: cfg, dragnetRules: dragnetRules, extraHandler: map[string]http.Handler{},
		secret: types.NamespacedName{Namespace: op.namespace, Name: op.certSecret}}
	if o.pprof {
		// On the metrics port (the operator's webhook server serves
		// admission only).
		k.extraHandler["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		k.extraHandler["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		k.extraHandler["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	if op.audit && op.auditReports == "endpoint" {
		// On the metrics port, whose handlers are fixed when the manager
		// is made.
		k.auditMem = &auditor.MemoryStore{}
		k.extraHandler[auditor.MemoryPath] = k.auditMem
	}
	return k, nil
}

// graph builds the relationship graph (--graph): its informers, the
// engine's GraphReader and the read API on the metrics port.
func (k *operator) graph(ctx context.Context) error {
	if !k.op.graph {
		return nil
	}
	dyn, err := dynamic.NewForConfig(k.cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	raw, err := pages.NewRaw(k.cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	sources := k.op.rulePacks
	if openshift, err := wantOpenShift(k.op.openshiftPack, k.cfg); err != nil {
		return err
	} else if openshift {
		sources = append(slices.Clone(sources), "builtin:"+packs.BuiltinOpenShift)
	}
	timeout, clamped := rego.ClampTimeout(k.op.regoTimeout)
	if clamped {
		k.log.Info("warning: --rego-timeout is out of [50ms, 1s]; clamped", "given", k.op.regoTimeout, "used", timeout)
	}
	g := &cluster.GraphSource{Client: dyn, Pages: raw, Packs: loadPacks(ctx, sources, timeout, k.log), Log: k.log.WithName("graph")}
	g.Metrics = metrics.NewGraph(lenientRegisterer{ctrlmetrics.Registry}, metrics.GraphStats{
		CacheHits:   func() float64 { h, _ := g.CacheStats(); return float64(h) },
		CacheMisses: func() float64 { _, m := g.CacheStats(); return float64(m) },
	})
	g.Metrics.ModulesLoaded(g.Packs.NumModules())
	k.extraHandler[graphapi.Prefix] = graphapi.Handler(g.Graph())
	k.graphSource, k.readers.Graph = g, g
	return nil
}

// manager creates the webhook server and the controller manager, and the
// informers of the related objects. The manager runs on a context of its
// own (mgrCtx), cancelled once the webhook server has drained: the
// reviews in flight need the caches (the Resolver reads Namespaces and
// Nodes from them) until the last one is answered.
func (k *operator) manager(ctx context.Context) (mgrCtx context.Context, stop context.CancelFunc, err error) {
	k.certs = &controller.CertProvider{Secret: k.secret}
	// The webhooks are served by modwright's own server, not by
	// controller-runtime's (see webhookServer).
	if k.ws, err = newWebhookServer(ctx, k.o.serverOptions(webhook.ServerOptions{
		GetCertificate: k.certs.GetCertificate,
		Log:            k.log.WithName("webhook-server"),
	})); err != nil {
		return nil, nil, &ExitError{Code: 2, Err: fmt.Errorf("webhook server: %w", err)}
	}
	mgrCtx, stop = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		select {
		case <-mgrCtx.Done():
			return
		case <-ctx.Done():
		}
		select {
		case <-k.ws.done:
		case <-time.After(k.o.shutdownDelay + k.ws.srv.DrainTimeout() + time.Second): // the manager never started it
		}
		stop()
	}()
	if k.mgr, err = ctrl.NewManager(k.cfg, k.managerOptions()); err != nil {
		stop()
		return nil, nil, &ExitError{Code: 2, Err: fmt.Errorf("creating the manager: %w", err)}
	}
	k.certs.Reader = k.mgr.GetCache()
	k.m = metrics.New(lenientRegisterer{ctrlmetrics.Registry})
	// Informers for the related objects, created now so that readiness can
	// wait for them.
	for _, obj := range []client.Object{&corev1.Namespace{}, &corev1.Node{}} {
		inf, err := k.mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			stop()
			return nil, nil, &ExitError{Code: 2, Err: fmt.Errorf("informer for %T: %w", obj, err)}
		}
		k.informers = append(k.informers, inf)
	}
	return mgrCtx, stop, nil
}

// managerOptions are the controller manager's options.
func (k *operator) managerOptions() ctrl.Options {
	op := k.op
	// The rule kinds need no Go types here: the rule source, the status
	// reconcilers and the validating webhook read rules as unstructured
	// objects through their kinds (internal/kinds).
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	byName := func(name string) fields.Selector { return fields.OneTermEqualSelector("metadata.name", name) }
	byObject := map[client.Object]cache.ByObject{
		// Only modwright's own Secret, so no cluster-wide Secret access.
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{op.namespace: {}}, Field: byName(op.certSecret)},
		// Related objects, without managedFields (rules never see them).
		&corev1.Namespace{}: {Transform: cache.TransformStripManagedFields()},
		&corev1.Node{}:      {Transform: cache.TransformStripManagedFields()},
	}
	if op.mutatingConfig != "" {
		byObject[&admissionregv1.MutatingWebhookConfiguration{}] = cache.ByObject{Field: byName(op.mutatingConfig)}
	}
	if op.validatingConfig != "" {
		byObject[&admissionregv1.ValidatingWebhookConfiguration{}] = cache.ByObject{Field: byName(op.validatingConfig)}
	}
	gracefulShutdown := k.o.shutdownDelay + k.ws.srv.DrainTimeout() + 5*time.Second
	return ctrl.Options{
		Scheme: scheme,
		Logger: k.log,
		Cache:  cache.Options{ByObject: byObject},
		// Rules are read as unstructured objects (one informer per kind):
		// the status reconcilers read them from the same cache as the
		// rule source, not live from the API server.
		Client:                        client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                       metricsserver.Options{BindAddress: op.metricsAddr, ExtraHandlers: k.extraHandler},
		HealthProbeBindAddress:        op.probeAddr,
		LeaderElection:                op.leaderElect,
		LeaderElectionID:              op.leaderElectionID,
		LeaderElectionNamespace:       op.namespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &gracefulShutdown,
		// Controller names are checked for uniqueness process-wide (for
		// their metrics); two operators in one process (the end-to-end
		// tests' replicas) share the name.
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptrTo(true)},
		WebhookServer: k.ws,
	}
}

// contextReaders builds what rules read beyond the object: related
// objects (Namespaces, Nodes, the ConfigMaps Policies read, watched one by
// one), apiCall reads, the requester's RBAC roles (indexed bindings), the
// CRDs' schemas, objects of any kind and HTTP (kinitiras' references),
// image data (Kyverno's image library), Kyverno's GlobalContextEntries,
// the authorizer of namespaced rules' reads.
func (k *operator) contextReaders(ctx context.Context) error {
	op, mgr := k.op, k.mgr
	clients, err := kubernetes.NewForConfig(k.cfg)
	if err != nil {
		return err
	}
	k.resolver = &cluster.Resolver{Reader: mgr.GetCache()}
	if op.contextCMs {
		k.resolver.ConfigMaps = &cluster.ConfigMaps{Client: clients, Idle: op.configMapIdle}
		if err := mgr.Add(manager.RunnableFunc(k.resolver.ConfigMaps.Run)); err != nil {
			return err
		}
	}
	if err := k.resolver.Watch(k.informers[0], k.informers[1]); err != nil {
		return err
	}
	k.readers.Objects = k.resolver
	if op.contextRoles {
		if err := cluster.IndexSubjects(ctx, mgr.GetFieldIndexer()); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		k.readers.Roles = &cluster.Roles{Reader: mgr.GetCache()}
	}
	if err := k.crdSchemas(); err != nil {
		return err
	}
	authz := &cluster.Authorizer{Reviews: clients.AuthorizationV1().SubjectAccessReviews()}
	k.readers.Authorizer, k.readers.RuleReader = authz, op.ruleReader
	k.readers.API = &cluster.APIClient{REST: clients.Discovery().RESTClient(), Timeout: op.apiCallTimeout, MaxBytes: op.apiCallMaxBytes, TTL: op.apiCallCacheTTL, AllowPOST: op.apiCallPOST,
		Authorizer: authz, RuleReader: op.ruleReader, Protected: op.namespace}
	k.readers.Kinds = &cluster.Kinds{Reader: mgr.GetCache(), Protected: op.namespace, Mapper: mgr.GetRESTMapper()}
	k.readers.HTTP = &cluster.HTTPClient{Hosts: op.kinitirasHosts, Timeout: op.kinitirasHTTPTime, MaxBytes: op.kinitirasHTTPBytes, TTL: op.kinitirasHTTPTTL}
	images := &cluster.Images{Registries: op.imageRegistries, Timeout: op.imageTimeout, TTL: op.imageTTL}
	if len(op.imagePullSecret) > 0 {
		images.Keychain = &cluster.PullSecrets{Reader: mgr.GetAPIReader(), Namespace: op.namespace, Names: op.imagePullSecret}
	}
	k.readers.Images = images
	if op.kyverno || op.kyvernoCEL {
		// Kyverno's GlobalContextEntries, kept by every replica.
		dyn, err := dynamic.NewForConfig(k.cfg)
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
		}
		g := &cluster.Globals{Client: dyn, Mapper: mgr.GetRESTMapper(), API: k.readers.API, HTTP: k.readers.HTTP,
			Log: k.log.WithName("global-context"), Protected: op.namespace}
		if err := mgr.Add(g); err != nil {
			return err
		}
		if err := mgr.Add(&cluster.GlobalsStatus{Globals: g, Client: dyn, Log: k.log.WithName("global-context-status")}); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("global-context", func(*http.Request) error {
			if !g.Synced() {
				return errors.New("the GlobalContextEntries have not been listed yet")
			}
			return nil
		}); err != nil {
			return err
		}
		k.readers.Globals = g
	}
	if slices.ContainsFunc(k.kreg.Kinds(), func(kd kinds.Kind) bool { _, ok := kd.(kinds.Syncing); return ok }) {
		// Gatekeeper's data.inventory, as its Config and SyncSets say.
		inv := &cluster.Inventory{Cache: mgr.GetCache(), Kinds: k.kreg, Log: k.log.WithName("inventory"), Protected: op.namespace}
		if err := mgr.Add(inv); err != nil {
			return err
		}
		k.readers.Inventory = inv
	}
	return nil
}

// crdSchemas types Policies' scoped validations of custom resources by
// the CRDs' schemas (an informer of CRDs; readiness waits for it).
func (k *operator) crdSchemas() error {
	if !k.op.crdSchemas {
		return nil
	}
	dyn, err := dynamic.NewForConfig(k.cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	s := &cluster.CRDSchemas{Client: dyn, Log: k.log.WithName("crd-schemas")}
	if err := k.mgr.Add(s); err != nil {
		return err
	}
	k.readers.Schemas = s
	return k.mgr.AddReadyzCheck("crd-schemas", func(*http.Request) error {
		if !s.Synced() {
			return errors.New("the CustomResourceDefinitions' cache has not synced yet")
		}
		return nil
	})
}

// compileNative: with --compile-native the leader installs the rules that
// translate exactly as admission policies, and the webhook serves the
// others.
func (k *operator) compileNative(context.Context) error {
	k.store = &source.Store{}
	k.served = k.store
	if !k.op.compileNative {
		return nil
	}
	placement, _ := translate.ParsePlacement(k.op.placement) // checked by newOperator
	filter := &webhook.ExcludeFilter{Source: k.store}
	k.served = filter
	k.installer = &controller.PolicyInstaller{
		Client:    k.mgr.GetClient(),
		Rules:     translate.Kinds(),
		Options:   translate.Options{ClusterRulesNamespace: k.o.clusterRules},
		Placement: placement,
		// Kyverno's CEL policies, with the exceptions the webhook honours.
		ExceptionNamespaces: k.op.kyvernoExceptionNS,
		Filter:              filter,
		Elected:             k.mgr.Elected(),
		Log:                 k.log.WithName("compile-native"),
		Served:              filter,
		Config:              k.op.mutatingConfig,
		Webhook:             k.op.dragnetWebhook,
	}
	if k.op.kyvernoCEL {
		k.installer.Rules = append(k.installer.Rules, translate.KyvernoKinds()...)
	}
	return k.mgr.Add(k.installer)
}

// operatorPaths are the webhook paths the operator serves with op and the
// kinds of kreg: the dragnet's, the kinds' own (with --kinitiras-paths),
// the pods/binding webhook's and the rules' two. The webhook
// configurations of the chart, the bundle and the sandbox call no other
// (a test checks each), and webhooks registers exactly these.
func operatorPaths(op *operatorOptions, kreg *kinds.Registry) []string {
	paths := []string{webhook.DragnetPath, webhook.MutatePath, webhook.ValidatePath,
		controller.NodeRefPath, controller.DefaultPath, controller.ValidatePath, previousValidatePath}
	if op.kinitiras && op.kinitirasPaths {
		for _, p := range kreg.Paths() {
			paths = append(paths, p.Path)
		}
	}
	return paths
}

// previousValidatePath is where releases before this one served the
// rules' validating webhook (controller.ValidatePath now). Served too, so
// that during an upgrade the replicas of the new release answer the
// webhook configuration of the old one; to be removed in a later release.
const previousValidatePath = "/validate-modrule"

// registrar records the paths registered on a webhook server.
type registrar struct {
	srv   interface{ Register(string, http.Handler) }
	paths []string
}

func (r *registrar) Register(path string, h http.Handler) {
	r.paths = append(r.paths, path)
	r.srv.Register(path, h)
}

// webhooks registers the dragnet (and, with --kinitiras-paths, the paths
// of the kinds that have their own: kinds.Registry.Paths) and the rules'
// and pods' webhooks, which go through the dragnet's codec: exactly
// operatorPaths.
func (k *operator) webhooks(context.Context) error {
	srv := &registrar{srv: k.mgr.GetWebhookServer()}
	observers := observersOf(k.kreg, lenientRegisterer{ctrlmetrics.Registry})
	if k.gen != nil {
		observers = append(observers, k.gen)
	}
	dragnetSnaps := k.served
	if k.op.kinitiras && k.op.kinitirasPaths {
		// Those paths serve their kinds, behind their peer's object
		// selector; the dragnet serves the others.
		var own []string
		for _, p := range k.kreg.Paths() {
			kinds := p.Kinds
			srv.Register(p.Path, k.o.dragnet(p.Name, &webhook.KindFilter{Source: k.store, Keep: func(kind string) bool { return slices.Contains(kinds, kind) }},
				k.readers, observers, k.log, k.m))
			own = append(own, p.Kinds...)
		}
		dragnetSnaps = &webhook.KindFilter{Source: k.served, Keep: func(kind string) bool { return !slices.Contains(own, kind) }}
		if k.installer != nil {
			k.installer.Served = dragnetSnaps
		}
	}
	registerDragnet(srv, k.o.dragnet("dragnet", dragnetSnaps, k.readers, observers, k.log, k.m))
	// Their bodies (a Binding, a rule) are small: each reads within a body
	// budget of two of the largest reviews, apart from the dragnet's.
	maxBytes := k.o.maxReviewBytes
	if maxBytes <= 0 {
		maxBytes = webhook.DefaultMaxReviewBytes
	}
	handler := func(name string, admit webhook.AdmitFunc, failOpen bool) http.Handler {
		return webhook.NewHandler(webhook.HandlerOptions{
			Name: name, Admit: admit, Log: k.log.WithName(name), Metrics: k.m, FailOpen: failOpen,
			MaxReviewBytes: maxBytes, Timeout: k.o.reviewTimeout, MaxReviewMemory: 4 * (maxBytes + 1),
		})
	}
	nodeRef := &controller.NodeRefHandler{Annotations: k.kreg.NodeAnnotations(), Reader: k.mgr.GetAPIReader(), Writer: k.mgr.GetClient(), Log: k.log.WithName("node-ref")}
	srv.Register(controller.NodeRefPath, handler("podbinding", nodeRef.Admit, true)) // never block scheduling (failurePolicy Ignore too)
	srv.Register(controller.DefaultPath, handler("default-rule", controller.DefaultHandler{Kinds: k.kreg}.Admit, false))
	validate := handler("validate-rule", controller.ValidateHandler{Kinds: k.kreg}.Admit, false)
	srv.Register(controller.ValidatePath, validate)
	srv.Register(previousValidatePath, validate) // while an upgrade rolls out

	if want := operatorPaths(k.op, k.kreg); !sameSet(srv.paths, want) {
		return fmt.Errorf("modwright bug: the operator serves %v, and operatorPaths says %v", srv.paths, want)
	}
	return nil
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// rules watches the rules of every kind into the store, keeps the graph,
// and reconciles each kind's rules' status.
func (k *operator) rules(context.Context) error {
	k.ruleSource = &cluster.RuleSource{Cache: k.mgr.GetCache(), Store: k.store, Kinds: k.kreg, Log: k.log.WithName("rules"), Metrics: k.m}
	if err := k.mgr.Add(k.ruleSource); err != nil {
		return err
	}
	id, _ := os.Hostname() // the replica, in the status written in a peer's shape
	if slices.ContainsFunc(k.kreg.Kinds(), func(kd kinds.Kind) bool { _, ok := kd.(kinds.StatusWritten); return ok }) {
		// The status of the rules whose kinds have no StatusReconciler
		// (Gatekeeper's constraints), after each compilation.
		sw := &controller.RuleStatusWriter{Client: k.mgr.GetClient(), Kinds: k.kreg.Kinds(), Source: k.ruleSource, ID: id, Log: k.log.WithName("rule-status")}
		k.ruleSource.OnChange = sw.Changed
		if err := k.mgr.Add(sw); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(k.kreg.Kinds(), func(kd kinds.Kind) bool { _, ok := kd.(kinds.Stored); return ok }) {
		// The CRDs of the kinds definitions define (Gatekeeper's
		// constraint kinds), installed by the leader.
		defs := &controller.DefinitionInstaller{Client: k.mgr.GetClient(), Reader: k.mgr.GetAPIReader(), Source: k.ruleSource, ID: id, Log: k.log.WithName("definitions")}
		k.ruleSource.OnDefinitions = defs.Changed
		if err := k.mgr.Add(defs); err != nil {
			return err
		}
	}
	if g := k.graphSource; g != nil {
		if err := k.mgr.Add(g); err != nil {
			return err
		}
		if err := k.mgr.AddReadyzCheck("graph", func(*http.Request) error {
			if !g.Synced() {
				return errors.New("the relationship graph's informers have not synced yet")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, kd := range k.kreg.Kinds() {
		_, owner := kd.(kinds.GroupOwner)
		if _, peer := kd.(kinds.StatusWritten); owner || peer {
			// Its kinds come and go with their definitions, or its
			// status has its peer's shape: the RuleStatusWriter writes it.
			continue
		}
		status := &controller.StatusReconciler{Kind: kd, Client: k.mgr.GetClient(), Recorder: k.mgr.GetEventRecorder("modwright"), Log: k.log.WithName("status")}
		if err := status.SetupWithManager(k.mgr); err != nil {
			return err
		}
	}
	return nil
}

// backgroundScan runs the background scan on the leader (--audit), with
// a client of its own whose rate limit bounds the scan's load.
func (k *operator) backgroundScan(context.Context) error {
	if !k.op.audit {
		return nil
	}
	cfg := rest.CopyConfig(k.cfg)
	cfg.QPS, cfg.Burst = float32(k.op.auditQPS), max(1, int(2*k.op.auditQPS))
	// One limiter for every client of the scan (lists, reports, metadata).
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	raw, err := pages.NewRaw(cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	m := auditor.NewMetrics(lenientRegisterer{ctrlmetrics.Registry})
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("Kubernetes client configuration: %w", err)}
	}
	var store auditor.Store = &auditor.CRDStore{Client: dyn, Metadata: auditor.MetadataClient{Client: meta}, Metrics: m}
	if k.auditMem != nil {
		store = k.auditMem
	}
	watchMeta := func(ctx context.Context, gvr schema.GroupVersionResource, rv string) (watch.Interface, error) {
		return meta.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	}
	maxViolations := k.op.auditViolations
	if maxViolations <= 0 {
		maxViolations = -1 // none listed
	}
	violations := &controller.ViolationsWriter{Client: k.mgr.GetClient(), Kinds: k.kreg.Kinds(), Log: k.log.WithName("audit")}
	var policies func(context.Context) (*audit.AdmissionPolicies, error)
	var policiesVersion func(context.Context) (string, error)
	if k.op.auditPolicies {
		policies = auditor.ClusterAdmissionPolicies(dyn, k.mgr.GetRESTMapper(), k.log.WithName("audit"))
		policiesVersion = auditor.ClusterAdmissionPoliciesVersion(dyn)
	}
	return k.mgr.Add(auditor.New(auditor.Options{Snapshots: k.store, Readers: k.readers, Client: dyn, Pages: raw, Discovery: disc, Store: store, Violations: violations, Watch: watchMeta,
		ClusterPolicies: policies, PoliciesVersion: policiesVersion, Interval: k.op.auditInterval, PageSize: k.op.auditPageSize, MaxResults: k.op.auditMaxResults, MaxViolations: maxViolations,
		DuringScan: k.bulk, Log: k.log.WithName("audit"), Metrics: m}))
}

// rulesReady reports whether the rules' first snapshot is published.
func (k *operator) rulesReady() error {
	if !k.ruleSource.Synced() {
		return errors.New("the ModRule cache has not synced or no rule snapshot is published yet")
	}
	return nil
}

// certificates keeps the serving certificate and the webhook
// configurations (caBundle, the dragnet's rules and failure policy).
func (k *operator) certificates(context.Context) error {
	op, srv := k.op, k.mgr.GetWebhookServer()
	return k.mgr.Add(&controller.CertManager{
		Client:      k.mgr.GetClient(),
		Informers:   k.mgr.GetCache(),
		Secret:      k.secret,
		Hosts:       append(serviceHosts(op.serviceName, op.namespace), k.o.certHosts...),
		Generate:    op.certManagement == "self",
		TTL:         op.certTTL,
		RenewBefore: op.certTTL / 3,
		Configs: controller.WebhookConfigs{
			Mutating: op.mutatingConfig, Validating: op.validatingConfig,
			DragnetWebhook: op.dragnetWebhook, DragnetRules: k.dragnetRules,
			DragnetFailurePolicy: admissionregv1.FailurePolicyType(op.dragnetPolicy),
		},
		Ready: func() error { return errors.Join(k.certs.Ready(), k.rulesReady(), srv.StartedChecker()(nil)) },
		Log:   k.log.WithName("certificates"),
	})
}

// startDone is what the operator does once its rules are first ready: the
// collector's headroom widened for their compilation set back, the
// start-up pages released.
func (k *operator) startDone() func() {
	end := func() {}
	if k.bulk != nil {
		end = k.bulk()
	}
	return func() {
		end()
		releaseStartPages(k.log, "ready")
	}
}

// readiness adds the health and readiness checks, and what is done once
// the rules are ready (startDone).
func (k *operator) readiness(context.Context) error {
	srv := k.mgr.GetWebhookServer()
	return errors.Join(
		k.mgr.Add(onRulesReady{ready: k.rulesReady, poll: 250 * time.Millisecond, do: k.startDone()}),
		k.mgr.AddHealthzCheck("ping", healthz.Ping),
		k.mgr.AddReadyzCheck("webhook-server", srv.StartedChecker()),
		k.mgr.AddReadyzCheck("shutdown", func(*http.Request) error {
			if k.ws.srv.Draining() {
				return errors.New("shutting down")
			}
			return nil
		}),
		k.mgr.AddReadyzCheck("certificate", func(*http.Request) error { return k.certs.Ready() }),
		k.mgr.AddReadyzCheck("rules", func(*http.Request) error { return k.rulesReady() }),
		k.mgr.AddReadyzCheck("related-objects", func(*http.Request) error {
			if !slices.ContainsFunc(k.informers, func(i cache.Informer) bool { return !i.HasSynced() }) {
				return nil
			}
			return errors.New("the Namespace and Node caches have not synced yet")
		}),
	)
}

// wantOpenShift decides --openshift-pack: auto asks the API server whether
// it serves OpenShift's route group.
func wantOpenShift(mode string, cfg *rest.Config) (bool, error) {
	switch mode {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "auto":
	default:
		return false, usageError("--openshift-pack must be auto, true or false, not %q", mode)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, &ExitError{Code: 2, Err: err}
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return false, &ExitError{Code: 2, Err: fmt.Errorf("discovering the API groups (--openshift-pack auto): %w", err)}
	}
	return slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == packs.OpenShiftGroup }), nil
}

// loadPacks loads the rule packs of dirs (directories or oci://
// references); one that does not load is logged and skipped (the graph runs on with the others). nil: none.
func loadPacks(ctx context.Context, dirs []string, timeout time.Duration, log logr.Logger) *packs.Router {
	var loaded []*packs.Pack
	for _, dir := range dirs {
		p, err := packs.Load(ctx, dir, packs.KubeAtlasVersion, timeout, packs.OCIOptions{})
		if err != nil {
			log.Error(err, "rule pack skipped", "pack", dir)
			continue
		}
		log.Info("rule pack loaded", "pack", p.Name, "version", p.Version, "modules", len(p.Modules))
		loaded = append(loaded, p)
	}
	if len(loaded) == 0 {
		return nil
	}
	return packs.NewRouter(loaded...)
}

// webhookServer runs modwright's HTTPS server (internal/webhook) as the
// manager's webhook server, in place of controller-runtime's. That one
// derives every request's context from the manager's, so a stopping
// replica cancelled its reviews in flight (denied with "modwright: context
// canceled"); it shuts down the moment the manager stops, without turning
// unready first; and it sets no read or write timeout and no HTTP/2 limit,
// with no option to (webhook.Options has only TLSOpts).
//
// The server stops when the process is told to (stop: SIGTERM), in steps
// (webhook.Server.Serve), or when the manager stops it.
type webhookServer struct {
	srv  *webhook.Server
	stop context.Context
	done chan struct{} // closed when Start returns
}

var _ ctrlwebhook.Server = (*webhookServer)(nil)

func newWebhookServer(stop context.Context, opts webhook.ServerOptions) (*webhookServer, error) {
	srv, err := webhook.NewServer(opts)
	if err != nil {
		return nil, err
	}
	return &webhookServer{srv: srv, stop: stop, done: make(chan struct{})}, nil
}

// NeedLeaderElection: every replica serves admission.
func (*webhookServer) NeedLeaderElection() bool { return false }

func (w *webhookServer) Register(path string, hook http.Handler) { w.srv.Handle(path, hook) }

func (w *webhookServer) WebhookMux() *http.ServeMux { return w.srv.Mux() }

func (w *webhookServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !w.srv.Started() {
			return errors.New("the webhook server has not been started yet")
		}
		return nil
	}
}

// Start serves until stop or ctx (the manager's) ends.
func (w *webhookServer) Start(ctx context.Context) error {
	defer close(w.done)
	sctx, cancel := context.WithCancel(w.stop)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	return w.srv.Serve(sctx)
}

// lenientRegisterer registers collectors into controller-runtime's global
// registry and tolerates a second registration (two operators in one
// process, as in the end-to-end tests): the first one's metrics are served.
type lenientRegisterer struct{ prometheus.Registerer }

func (r lenientRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	}
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// registerDragnet serves the dragnet at its three paths: every rule
// (webhook.DragnetPath, as KubeMod), mutations alone (MutatePath, the
// chart's mutating webhook) and validations alone (ValidatePath, the
// chart's validating webhook).
func registerDragnet(srv interface{ Register(string, http.Handler) }, d *webhook.Dragnet) {
	srv.Register(webhook.DragnetPath, d)
	srv.Register(webhook.MutatePath, d.Phase(engine.Mutate))
	srv.Register(webhook.ValidatePath, d.Phase(engine.Validate))
}
