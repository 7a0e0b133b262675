package chart

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/noderotation/node-rotation-controller/internal/inspect"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var (
	withMonitoring = renderOpts{apiVersions: []string{monitoringAPI}}
	selector       = map[string]string{"app.kubernetes.io/name": "node-rotation-controller", "app.kubernetes.io/instance": releaseName}
	// defaultKinds is what an install with the default values creates.
	defaultKinds = []string{
		"ClusterRole/nrc", "ClusterRoleBinding/nrc", "Deployment/nrc", "PodDisruptionBudget/nrc",
		"PriorityClass/node-rotation-placeholder", "Role/nrc", "RoleBinding/nrc", "Service/nrc-metrics", "ServiceAccount/nrc",
	}
)

func controller(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	return d.Spec.Template.Spec.Containers[0]
}

func hasArg(c corev1.Container, arg string) bool { return slices.Contains(c.Args, arg) }

// criticalAddonsOnly is the toleration tolerateCriticalAddonsOnly adds.
var criticalAddonsOnly = corev1.Toleration{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}

func TestDefaults(t *testing.T) {
	c := loadChart(t)
	r := mustRender(t, c, renderOpts{})
	if got := r.kinds(); !slices.Equal(got, defaultKinds) {
		t.Errorf("objects = %v, want %v", got, defaultKinds)
	}
	for _, o := range r.objects {
		if ns := o.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s/%s in namespace %q, want the release namespace", gvkOf(o).Kind, o.GetName(), ns)
		}
		if o.GetLabels()["app.kubernetes.io/instance"] != releaseName || o.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s/%s lacks the chart's labels: %v", gvkOf(o).Kind, o.GetName(), o.GetLabels())
		}
	}

	d := find[*appsv1.Deployment](t, r)
	ctr := controller(t, d)
	wantArgs := []string{
		"-namespace=" + namespace, "-placeholder-priority-class=node-rotation-placeholder", "-prepull-image=" + ctr.Image,
		"-metrics-bind-address=:8443", "-metrics-secure=true", "-metrics-auth=true",
		"-health-probe-bind-address=:8081", "-leader-elect=true", "-log-format=json", "-v=0",
		"-workers=10", "-kube-api-qps=50", "-kube-api-burst=100",
	}
	if !slices.Equal(ctr.Args, wantArgs) {
		t.Errorf("args = %q, want %q", ctr.Args, wantArgs)
	}
	// the runtime's memory limit follows the container's (cmd/.../limits.go)
	if len(ctr.Env) != 1 || ctr.Env[0].Name != "NRC_MEMORY_LIMIT" || ctr.Env[0].ValueFrom == nil ||
		ctr.Env[0].ValueFrom.ResourceFieldRef == nil || ctr.Env[0].ValueFrom.ResourceFieldRef.Resource != "limits.memory" ||
		ctr.Env[0].ValueFrom.ResourceFieldRef.Divisor.String() != "1" {
		t.Errorf("env = %+v, want NRC_MEMORY_LIMIT from limits.memory in bytes", ctr.Env)
	}
	if ctr.Image != "ghcr.io/noderotation/node-rotation-controller:0.1.0" || ctr.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image = %s (%s)", ctr.Image, ctr.ImagePullPolicy)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
	}
	if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, selector) {
		t.Errorf("selector = %v, want %v (immutable: never change it)", d.Spec.Selector.MatchLabels, selector)
	}
	if !labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the Pod labels %v do not match the selector", d.Spec.Template.Labels)
	}
	ps := d.Spec.Template.Spec
	if ps.ServiceAccountName != releaseName || ps.PriorityClassName != "system-cluster-critical" {
		t.Errorf("serviceAccountName %q, priorityClassName %q", ps.ServiceAccountName, ps.PriorityClassName)
	}
	wantPodSC := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if !reflect.DeepEqual(ps.SecurityContext, wantPodSC) {
		t.Errorf("pod securityContext = %+v, want %+v", ps.SecurityContext, wantPodSC)
	}
	wantSC := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if !reflect.DeepEqual(ctr.SecurityContext, wantSC) {
		t.Errorf("container securityContext = %+v, want %+v", ctr.SecurityContext, wantSC)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	if !reflect.DeepEqual(ctr.Resources, wantRes) {
		t.Errorf("resources = %v, want %v", ctr.Resources, wantRes)
	}
	if !reflect.DeepEqual(ps.Affinity, defaultAffinity("preferred", true)) {
		t.Errorf("affinity = %+v, want the default", ps.Affinity)
	}
	if len(ps.NodeSelector)+len(ps.TopologySpreadConstraints)+len(ps.ImagePullSecrets) != 0 {
		t.Errorf("nodeSelector, topologySpreadConstraints or imagePullSecrets set by default")
	}
	if !reflect.DeepEqual(ps.Tolerations, []corev1.Toleration{criticalAddonsOnly}) {
		t.Errorf("tolerations = %+v, want only CriticalAddonsOnly", ps.Tolerations)
	}
	ports := map[string]int32{}
	for _, p := range ctr.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !reflect.DeepEqual(ports, map[string]int32{"metrics": 8443, "probes": 8081}) {
		t.Errorf("container ports = %v", ports)
	}
	if ctr.ReadinessProbe.HTTPGet.Path != "/readyz" || ctr.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %s, liveness %s", ctr.ReadinessProbe.HTTPGet.Path, ctr.LivenessProbe.HTTPGet.Path)
	}

	svc := find[*corev1.Service](t, r)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 || svc.Spec.Ports[0].TargetPort != intstr.FromString("metrics") {
		t.Errorf("metrics Service ports = %+v", svc.Spec.Ports)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, selector) {
		t.Errorf("Service selector = %v", svc.Spec.Selector)
	}

	pdb := find[*policyv1.PodDisruptionBudget](t, r)
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
		t.Errorf("PDB = %+v, want maxUnavailable 1", pdb.Spec)
	}
	if !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, selector) {
		t.Errorf("PDB selector = %v", pdb.Spec.Selector.MatchLabels)
	}

	pc := find[*schedulingv1.PriorityClass](t, r)
	if pc.Value != -10 || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever || pc.GlobalDefault {
		t.Errorf("PriorityClass = value %d, preemptionPolicy %v, globalDefault %v", pc.Value, pc.PreemptionPolicy, pc.GlobalDefault)
	}

	containsAll(t, "NOTES.txt", r.notes,
		"release nrc in namespace node-rotation-system", "kubectl get rotpol", "PriorityClass node-rotation-placeholder (value -10",
		"kubectl -n node-rotation-system get lease node-rotation-controller", "logs",
		"port-forward service/nrc-metrics 8443", "curl -k https://localhost:8443/metrics", "Uninstall")
	if strings.Contains(r.notes, "NOT installed") {
		t.Errorf("NOTES.txt warns with nothing optional enabled:\n%s", r.notes)
	}
}

// defaultAffinity is the affinity the chart builds from defaultAffinity.
func defaultAffinity(spread string, avoidKarpenter bool) *corev1.Affinity {
	a := &corev1.Affinity{}
	if avoidKarpenter {
		a.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpDoesNotExist},
			}}},
		}}
	}
	term := corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
	switch spread {
	case "required":
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
	case "preferred":
		a.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}}
	}
	if a.NodeAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return a
}

func TestAffinity(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		sets []string
		want *corev1.Affinity
	}{
		{[]string{"defaultAffinity.spreadReplicas=required"}, defaultAffinity("required", true)},
		{[]string{"defaultAffinity.spreadReplicas=none"}, defaultAffinity("none", true)},
		{[]string{"defaultAffinity.avoidKarpenterNodes=false"}, defaultAffinity("preferred", false)},
		{[]string{"defaultAffinity.avoidKarpenterNodes=false", "defaultAffinity.spreadReplicas=none"}, nil},
		// A non-empty affinity replaces the default wholesale.
		{[]string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]=system"},
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"system"}},
				}}},
			}}}},
	} {
		d := find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}, tc.sets...))
		if got := d.Spec.Template.Spec.Affinity; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--set %v: affinity = %+v, want %+v", tc.sets, got, tc.want)
		}
	}
}

// podKnobs sets every Pod-level knob at once; TestPodKnobs checks what it
// renders and TestServerSideDryRun that the API server accepts it.
var podKnobs = []string{
	"image.repository=registry.example/nrc", "image.tag=dev", "image.pullPolicy=Always",
	"imagePullSecrets[0].name=regcred", "replicaCount=1", "priorityClassName=",
	"nodeSelector.role=system", "tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "tolerations[0].effect=NoSchedule",
	"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
	"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
	"podLabels.team=platform", "podAnnotations.example\\.com/owner=platform",
	"podSecurityContext.runAsUser=null", "podSecurityContext.fsGroup=65532", "securityContext.readOnlyRootFilesystem=false",
	"resources.limits.cpu=1", "placeholderImage=mirror.example/pause:3.10", "logFormat=text", "logVerbosity=1",
	"podDisruptionBudget.maxUnavailable=50%", "maxConcurrentRotations=3", "placeholderHostnamePreference=false",
	"prePull.usePullSecrets=true",
}

func TestPodKnobs(t *testing.T) {
	c := loadChart(t)
	r := mustRender(t, c, renderOpts{}, podKnobs...)
	d := find[*appsv1.Deployment](t, r)
	ctr := controller(t, d)
	ps := d.Spec.Template.Spec
	checks := []struct {
		what string
		ok   bool
	}{
		{"image", ctr.Image == "registry.example/nrc:dev" && ctr.ImagePullPolicy == corev1.PullAlways},
		{"imagePullSecrets", reflect.DeepEqual(ps.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}})},
		{"replicas", *d.Spec.Replicas == 1},
		{"priorityClassName empty", ps.PriorityClassName == ""},
		{"nodeSelector", reflect.DeepEqual(ps.NodeSelector, map[string]string{"role": "system"})},
		{"tolerations, after CriticalAddonsOnly", reflect.DeepEqual(ps.Tolerations, []corev1.Toleration{criticalAddonsOnly, {Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}})},
		{"topologySpreadConstraints, spreading the replicas without a labelSelector", len(ps.TopologySpreadConstraints) == 1 &&
			ps.TopologySpreadConstraints[0].TopologyKey == "topology.kubernetes.io/zone" &&
			reflect.DeepEqual(ps.TopologySpreadConstraints[0].LabelSelector, &metav1.LabelSelector{MatchLabels: selector})},
		{"podLabels", d.Spec.Template.Labels["team"] == "platform" && d.Spec.Template.Labels["app.kubernetes.io/instance"] == releaseName},
		{"podAnnotations", d.Spec.Template.Annotations["example.com/owner"] == "platform"},
		{"podSecurityContext: a null removes a default, the rest stays", ps.SecurityContext.RunAsUser == nil && *ps.SecurityContext.FSGroup == 65532 && *ps.SecurityContext.RunAsNonRoot},
		{"securityContext merged", !*ctr.SecurityContext.ReadOnlyRootFilesystem && !*ctr.SecurityContext.AllowPrivilegeEscalation},
		{"resources merged", ctr.Resources.Limits.Cpu().String() == "1" && ctr.Resources.Limits.Memory().String() == "256Mi"},
		{"placeholderImage", hasArg(ctr, "-placeholder-image=mirror.example/pause:3.10")},
		{"the pre-pull no-op comes from the image the chart runs", hasArg(ctr, "-prepull-image="+ctr.Image)},
		{"and is pulled with the controller's own imagePullSecrets", hasArg(ctr, "-prepull-image-pull-secrets=regcred")},
		{"logFormat, logVerbosity", hasArg(ctr, "-log-format=text") && hasArg(ctr, "-v=1")},
		{"maxConcurrentRotations", hasArg(ctr, "-max-concurrent-rotations=3")},
		{"placeholderHostnamePreference", hasArg(ctr, "-placeholder-hostname-preference=false")},
		{"prePull.usePullSecrets", hasArg(ctr, "-prepull-use-pull-secrets=true")},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not as set", ch.what)
		}
	}
	if pdb := find[*policyv1.PodDisruptionBudget](t, r); *pdb.Spec.MaxUnavailable != intstr.FromString("50%") {
		t.Errorf("PDB maxUnavailable = %v, want 50%%", pdb.Spec.MaxUnavailable)
	}
	// A constraint's own labelSelector is kept.
	d = find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}, "topologySpreadConstraints[0].maxSkew=1",
		"topologySpreadConstraints[0].topologyKey=kubernetes.io/hostname", "topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
		"topologySpreadConstraints[0].labelSelector.matchLabels.app=other"))
	if got := d.Spec.Template.Spec.TopologySpreadConstraints[0].LabelSelector; !reflect.DeepEqual(got, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}) {
		t.Errorf("a constraint's own labelSelector became %+v", got)
	}
	// Without placeholderImage the flag is not passed: the controller's
	// default; nor the hostname preference's, by default or with the key
	// absent (values kept from a release older than it: --reuse-values).
	for _, set := range [][]string{nil, {"placeholderHostnamePreference=null"}} {
		for _, a := range controller(t, find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}, set...))).Args {
			if strings.HasPrefix(a, "-placeholder-image") || strings.HasPrefix(a, "-placeholder-hostname-preference") {
				t.Errorf("values %v pass %s", set, a)
			}
		}
	}
}

func TestToggles(t *testing.T) {
	c := loadChart(t)
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(defaultKinds), func(k string) bool { return slices.Contains(drop, k) })
	}
	with := func(add ...string) []string {
		out := append(slices.Clone(defaultKinds), add...)
		slices.Sort(out)
		return out
	}
	everything := []string{"prometheusRule.enabled=true", "serviceMonitor.enabled=true", "grafanaDashboard.enabled=true"}
	for _, tc := range []struct {
		name  string
		sets  []string
		opts  renderOpts
		kinds []string
		notes []string
	}{
		{"monitoring on, CRDs served", everything, withMonitoring,
			with("ConfigMap/nrc-dashboard", "PrometheusRule/nrc", "ServiceMonitor/nrc"),
			[]string{"ServiceMonitor nrc.", "PrometheusRule nrc (", "ConfigMap nrc-dashboard"}},
		{"monitoring on, no CRDs: skipped, with a warning", everything, renderOpts{},
			with("ConfigMap/nrc-dashboard"),
			[]string{"NOT installed: the ServiceMonitor", "NOT installed: the PrometheusRule"}},
		{"monitoring off, CRDs served", nil, withMonitoring, defaultKinds, nil},
		{"PDB off", []string{"podDisruptionBudget.enabled=false"}, renderOpts{}, without("PodDisruptionBudget/nrc"), nil},
		{"existing PriorityClass", []string{"placeholderPriorityClass.create=false"}, renderOpts{},
			without("PriorityClass/node-rotation-placeholder"), []string{"uses the existing node-rotation-placeholder"}},
		{"existing ServiceAccount", []string{"serviceAccount.create=false", "serviceAccount.name=existing"}, renderOpts{},
			without("ServiceAccount/nrc"), []string{"ServiceAccount existing (existing, not created by this release)"}},
		{"named ServiceAccount", []string{"serviceAccount.name=nrc-sa"}, renderOpts{},
			append(without("ServiceAccount/nrc"), "ServiceAccount/nrc-sa"), nil},
		{"metrics off", []string{"metrics.port=0", "metrics.auth=true"}, withMonitoring,
			without("Service/nrc-metrics"), []string{"No metrics endpoint (metrics.port 0)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRender(t, c, tc.opts, tc.sets...)
			if tc.kinds != nil {
				if got := r.kinds(); !slices.Equal(got, tc.kinds) {
					t.Errorf("objects = %v, want %v", got, tc.kinds)
				}
			}
			containsAll(t, "NOTES.txt", r.notes, tc.notes...)
		})
	}
}

func TestRenamedPriorityClass(t *testing.T) {
	r := mustRender(t, loadChart(t), renderOpts{}, "placeholderPriorityClass.name=nrc-placeholder", "placeholderPriorityClass.value=-1000000")
	pc := find[*schedulingv1.PriorityClass](t, r)
	if pc == nil || pc.Name != "nrc-placeholder" || pc.Value != -1000000 {
		t.Fatalf("PriorityClass = %+v", pc)
	}
	if !hasArg(controller(t, find[*appsv1.Deployment](t, r)), "-placeholder-priority-class=nrc-placeholder") {
		t.Error("the Deployment does not pass the renamed PriorityClass")
	}
	r = mustRender(t, loadChart(t), renderOpts{}, "placeholderPriorityClass.create=false", "placeholderPriorityClass.name=shared")
	if !hasArg(controller(t, find[*appsv1.Deployment](t, r)), "-placeholder-priority-class=shared") {
		t.Error("the Deployment does not pass the existing PriorityClass")
	}
}

func TestServiceAccountBinding(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		sets      []string
		want      string
		annotated bool
	}{
		{nil, releaseName, false},
		{[]string{"serviceAccount.name=nrc-sa", "serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::1:role/x"}, "nrc-sa", true},
		{[]string{"serviceAccount.create=false", "serviceAccount.name=existing"}, "existing", false},
	} {
		r := mustRender(t, c, renderOpts{}, tc.sets...)
		if got := find[*appsv1.Deployment](t, r).Spec.Template.Spec.ServiceAccountName; got != tc.want {
			t.Errorf("--set %v: serviceAccountName %q, want %q", tc.sets, got, tc.want)
		}
		want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: tc.want, Namespace: namespace}}
		if crb := find[*rbacv1.ClusterRoleBinding](t, r); !reflect.DeepEqual(crb.Subjects, want) || crb.RoleRef.Name != releaseName || crb.RoleRef.Kind != "ClusterRole" {
			t.Errorf("--set %v: ClusterRoleBinding %+v", tc.sets, crb)
		}
		if rb := find[*rbacv1.RoleBinding](t, r); !reflect.DeepEqual(rb.Subjects, want) || rb.RoleRef.Name != releaseName || rb.RoleRef.Kind != "Role" {
			t.Errorf("--set %v: RoleBinding %+v", tc.sets, rb)
		}
		sa := find[*corev1.ServiceAccount](t, r)
		switch {
		case tc.want == "existing" && sa != nil:
			t.Errorf("--set %v: a ServiceAccount rendered for an existing one", tc.sets)
		case tc.want != "existing" && (sa == nil || sa.Name != tc.want):
			t.Errorf("--set %v: ServiceAccount %+v, want %s", tc.sets, sa, tc.want)
		case tc.annotated && sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/x":
			t.Errorf("--set %v: ServiceAccount annotations %v", tc.sets, sa.Annotations)
		}
	}
	if _, err := render(t, c, setValues(t, "serviceAccount.create=false"), renderOpts{}); err == nil || !strings.Contains(err.Error(), "serviceAccount.name must name an existing ServiceAccount") {
		t.Errorf("serviceAccount.create=false without a name: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	c := loadChart(t)
	monitor := func(r *rendered) monitoringv1.Endpoint {
		t.Helper()
		sm := find[*monitoringv1.ServiceMonitor](t, r)
		if sm == nil || len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("ServiceMonitor = %+v", sm)
		}
		svc := find[*corev1.Service](t, r)
		if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(svc.Labels)) ||
			!reflect.DeepEqual(sm.Spec.NamespaceSelector.MatchNames, []string{namespace}) {
			t.Errorf("the ServiceMonitor does not select the metrics Service: %+v vs %v", sm.Spec.Selector, svc.Labels)
		}
		if sm.Spec.Endpoints[0].Port != "metrics" || svc.Spec.Ports[0].Name != "metrics" {
			t.Errorf("ServiceMonitor port %q, Service port %q", sm.Spec.Endpoints[0].Port, svc.Spec.Ports[0].Name)
		}
		return sm.Spec.Endpoints[0]
	}

	// HTTPS with the self-signed certificate: TLS without verification, no token.
	ep := monitor(mustRender(t, c, withMonitoring, "serviceMonitor.enabled=true", "serviceMonitor.interval=30s", "serviceMonitor.labels.release=prom", "metrics.auth=false"))
	if ep.Scheme == nil || *ep.Scheme != "https" || ep.TLSConfig == nil || ep.TLSConfig.InsecureSkipVerify == nil || !*ep.TLSConfig.InsecureSkipVerify {
		t.Errorf("secure endpoint: scheme %v, tlsConfig %+v", ep.Scheme, ep.TLSConfig)
	}
	if ep.BearerTokenFile != "" || ep.Interval != "30s" || ep.ScrapeTimeout != "" {
		t.Errorf("secure endpoint: bearerTokenFile %q, interval %q, scrapeTimeout %q", ep.BearerTokenFile, ep.Interval, ep.ScrapeTimeout)
	}

	// -metrics-auth (the default): Prometheus sends its ServiceAccount token.
	r := mustRender(t, c, withMonitoring, "serviceMonitor.enabled=true")
	if ep := monitor(r); ep.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("auth endpoint: bearerTokenFile %q", ep.BearerTokenFile)
	}
	if !hasArg(controller(t, find[*appsv1.Deployment](t, r)), "-metrics-auth=true") {
		t.Error("metrics.auth=true does not pass -metrics-auth=true")
	}
	containsAll(t, "NOTES.txt", r.notes, `-H "Authorization: Bearer`)

	// Plain HTTP: no TLS settings.
	r = mustRender(t, c, withMonitoring, "serviceMonitor.enabled=true", "metrics.secure=false", "metrics.port=9090")
	if ep := monitor(r); ep.Scheme == nil || *ep.Scheme != "http" || ep.TLSConfig != nil {
		t.Errorf("plain endpoint: scheme %v, tlsConfig %+v", ep.Scheme, ep.TLSConfig)
	}
	ctr := controller(t, find[*appsv1.Deployment](t, r))
	if !hasArg(ctr, "-metrics-bind-address=:9090") || !hasArg(ctr, "-metrics-secure=false") || ctr.Ports[0].ContainerPort != 9090 {
		t.Errorf("metrics.port=9090: args %q, ports %+v", ctr.Args, ctr.Ports)
	}
	if svc := find[*corev1.Service](t, r); svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("Service port %d, want 9090", svc.Spec.Ports[0].Port)
	}
	containsAll(t, "NOTES.txt", r.notes, "curl http://localhost:9090/metrics")

	// metrics.port=0: the endpoint is off, and with it its port and Service.
	r = mustRender(t, c, withMonitoring, "metrics.port=0")
	ctr = controller(t, find[*appsv1.Deployment](t, r))
	if !hasArg(ctr, "-metrics-bind-address=0") || len(ctr.Ports) != 1 || ctr.Ports[0].Name != "probes" {
		t.Errorf("metrics.port=0: args %q, ports %+v", ctr.Args, ctr.Ports)
	}
	for _, a := range ctr.Args {
		if strings.HasPrefix(a, "-metrics-secure") || strings.HasPrefix(a, "-metrics-auth") {
			t.Errorf("metrics.port=0 still passes %s", a)
		}
	}
	if find[*corev1.Service](t, r) != nil {
		t.Error("metrics.port=0 renders the metrics Service")
	}
	_, err := render(t, c, setValues(t, "metrics.port=0", "serviceMonitor.enabled=true"), renderOpts{})
	if err == nil || !strings.Contains(err.Error(), "serviceMonitor.enabled needs the metrics endpoint") {
		t.Errorf("metrics.port=0 with a ServiceMonitor: %v", err)
	}
}

// The PrometheusRule carries the templated ranges (test/promql parses the
// expressions themselves).
func TestPrometheusRuleRanges(t *testing.T) {
	r := mustRender(t, loadChart(t), withMonitoring, "prometheusRule.enabled=true", "prometheusRule.completionRange=6h",
		"prometheusRule.fallingBehindRange=14d", "prometheusRule.labels.release=prom")
	pr := find[*monitoringv1.PrometheusRule](t, r)
	if pr == nil || pr.Labels["release"] != "prom" {
		t.Fatalf("PrometheusRule = %+v", pr)
	}
	n, exprs := 0, ""
	for _, g := range pr.Spec.Groups {
		for _, rule := range g.Rules {
			n++
			exprs += rule.Expr.String() + "\n"
		}
	}
	if n != 9 {
		t.Errorf("%d alerts, want 9", n)
	}
	containsAll(t, "the alert expressions", exprs, "[6h]", "[14d]")
}

// Every alert carries a description and a runbook_url into the section of
// docs/operations.md its name anchors, and takes its severity, for and
// enabled from prometheusRule.alerts.<name>.
func TestAlertsCarryRunbooksAndTheirValues(t *testing.T) {
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRender(t, loadChart(t), withMonitoring, "prometheusRule.enabled=true",
		"prometheusRule.alerts.NodeRotationDrainStuck.enabled=false",
		"prometheusRule.alerts.NodeRotationExpiredUnrotated.severity=page",
		"prometheusRule.alerts.NodeRotationExpiredUnrotated.for=5m")
	pr := find[*monitoringv1.PrometheusRule](t, r)
	if pr == nil {
		t.Fatal("no PrometheusRule")
	}
	seen := map[string]monitoringv1.Rule{}
	for _, g := range pr.Spec.Groups {
		for _, rule := range g.Rules {
			seen[rule.Alert] = rule
			const base = "https://github.com/noderotation/node-rotation-controller/blob/main/docs/operations.md#"
			url := rule.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, base)
			if !ok || anchor != "runbook-"+strings.ToLower(rule.Alert) {
				t.Errorf("%s: runbook_url %q", rule.Alert, url)
			}
			if !strings.Contains(string(ops), `<a id="`+anchor+`"></a>`) {
				t.Errorf("%s: docs/operations.md has no section %q", rule.Alert, anchor)
			}
			if rule.Annotations["description"] == "" || rule.Annotations["summary"] == "" {
				t.Errorf("%s: annotations %v", rule.Alert, rule.Annotations)
			}
		}
	}
	if _, ok := seen["NodeRotationDrainStuck"]; ok || len(seen) != 8 {
		t.Errorf("alerts %v: want the eight enabled ones", slices.Sorted(maps.Keys(seen)))
	}
	e := seen["NodeRotationExpiredUnrotated"]
	if e.Labels["severity"] != "page" || e.For == nil || string(*e.For) != "5m" {
		t.Errorf("NodeRotationExpiredUnrotated: severity %q for %v", e.Labels["severity"], e.For)
	}
	if w := seen["NodeRotationWindowWedged"]; w.For == nil || string(*w.For) != "15m" || w.Labels["severity"] != "warning" {
		t.Errorf("NodeRotationWindowWedged keeps its default for 15m: %+v", w)
	}
}

func TestKubeVersion(t *testing.T) {
	c := loadChart(t)
	if _, err := render(t, c, nil, renderOpts{kubeVersion: "v1.29.6"}); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
		t.Errorf("Kubernetes 1.29: %v, want the chart's kubeVersion refused", err)
	}
	mustRender(t, c, renderOpts{kubeVersion: "v1.31.2-eks-7f9249a"})
	// Helm 3 checks kubeVersion against the server's full version, suffix
	// and all (Helm 4, above, strips the suffix first): without the -0 a
	// provider-suffixed version reads as a pre-release and is refused.
	cons, err := semver.NewConstraint(c.Metadata.KubeVersion)
	if err != nil {
		t.Fatalf("kubeVersion %q: %v", c.Metadata.KubeVersion, err)
	}
	if eks := semver.MustParse("v1.31.2-eks-7f9249a"); !cons.Check(eks) {
		t.Errorf("kubeVersion %q refuses %s as Helm 3 checks it", c.Metadata.KubeVersion, eks.Original())
	}
}

// rotationctl status reads the cluster cap from the controller's
// Deployment (inspect.ControllerCap): the chart's Deployment carries the
// label it selects by, and the argument in a form it parses; unset, the
// argument is absent and reads as no cap.
func TestTheChartsCapIsWhatStatusReads(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct {
		set  []string
		want int
	}{{nil, 0}, {[]string{"maxConcurrentRotations=3"}, 3}} {
		d := find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}, tc.set...))
		if d.Labels["app.kubernetes.io/part-of"] != "node-rotation-controller" {
			t.Errorf("Deployment labels %v: rotationctl selects app.kubernetes.io/part-of=node-rotation-controller", d.Labels)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inspect.CapOf(unstructured.Unstructured{Object: u})
		if err != nil || got != tc.want {
			t.Errorf("%v: status reads %d, %v; want %d", tc.set, got, err, tc.want)
		}
	}
}
