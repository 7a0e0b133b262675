package chart

import (
	"os"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The values every production chart takes: each renders where it should.
func TestExtensionPoints(t *testing.T) {
	c := loadChart(t)
	r := mustRender(t, c, withMonitoring,
		"fullnameOverride=rotator", "nameOverride=nrc-app", "commonLabels.team=platform", "commonLabels.cost-center=42x",
		"image.digest="+digest,
		"extraArgs[0]=-pprof-bind-address=127.0.0.1:6060", "extraArgs[1]=-v=2",
		"env[0].name=HTTPS_PROXY", "env[0].value=http://proxy:3128",
		"extraVolumes[0].name=ca", "extraVolumes[0].configMap.name=corp-ca",
		"extraVolumeMounts[0].name=ca", "extraVolumeMounts[0].mountPath=/etc/ssl/certs/corp", "extraVolumeMounts[0].readOnly=true",
		"serviceMonitor.enabled=true",
		"serviceMonitor.relabelings[0].targetLabel=cluster", "serviceMonitor.relabelings[0].replacement=prod",
		"serviceMonitor.metricRelabelings[0].sourceLabels[0]=__name__", "serviceMonitor.metricRelabelings[0].regex=go_.*",
		"serviceMonitor.metricRelabelings[0].action=drop",
		"prometheusRule.enabled=true", "grafanaDashboard.enabled=true", "tolerateCriticalAddonsOnly=false",
	)
	for _, o := range r.objects {
		kind := gvkOf(o).Kind
		l := o.GetLabels()
		if l["team"] != "platform" || l["cost-center"] != "42x" || l["app.kubernetes.io/name"] != "nrc-app" || l["app.kubernetes.io/part-of"] != "node-rotation-controller" {
			t.Errorf("%s/%s labels %v: want commonLabels, nameOverride and part-of", kind, o.GetName(), l)
		}
		if kind != "PriorityClass" && !strings.HasPrefix(o.GetName(), "rotator") {
			t.Errorf("%s/%s is not named by fullnameOverride", kind, o.GetName())
		}
	}
	d := find[*appsv1.Deployment](t, r)
	ctr := controller(t, d)
	if want := "ghcr.io/noderotation/node-rotation-controller:0.1.0@" + digest; ctr.Image != want {
		t.Errorf("image %s, want %s", ctr.Image, want)
	}
	n := len(ctr.Args)
	if n < 2 || ctr.Args[n-2] != "-pprof-bind-address=127.0.0.1:6060" || ctr.Args[n-1] != "-v=2" {
		t.Errorf("args %q: want extraArgs last, in order", ctr.Args)
	}
	if len(ctr.Env) != 2 || ctr.Env[0].Name != "NRC_MEMORY_LIMIT" || ctr.Env[1] != (corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}) {
		t.Errorf("env %+v: want NRC_MEMORY_LIMIT then HTTPS_PROXY", ctr.Env)
	}
	vols := d.Spec.Template.Spec.Volumes
	if len(vols) != 2 || vols[1].Name != "ca" || vols[1].ConfigMap == nil || vols[1].ConfigMap.Name != "corp-ca" {
		t.Errorf("volumes %+v: want tmp, then the extra one", vols)
	}
	if m := ctr.VolumeMounts; len(m) != 2 || !equality.Semantic.DeepEqual(m[1], corev1.VolumeMount{Name: "ca", MountPath: "/etc/ssl/certs/corp", ReadOnly: true}) {
		t.Errorf("mounts %+v: want /tmp, then the extra one", m)
	}
	if len(d.Spec.Template.Spec.Tolerations) != 0 {
		t.Errorf("tolerateCriticalAddonsOnly=false still tolerates %+v", d.Spec.Template.Spec.Tolerations)
	}
	pod := d.Spec.Template.Labels
	if pod["team"] != "platform" || !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(pod)) || d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "nrc-app" {
		t.Errorf("Pod labels %v, selector %v", pod, d.Spec.Selector.MatchLabels)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "rotator" {
		t.Errorf("serviceAccountName %q, want the full name", d.Spec.Template.Spec.ServiceAccountName)
	}
	if svc := find[*corev1.Service](t, r); svc.Name != "rotator-metrics" {
		t.Errorf("Service %s, want rotator-metrics", svc.Name)
	}
	sm := find[*monitoringv1.ServiceMonitor](t, r)
	ep := sm.Spec.Endpoints[0]
	if len(ep.RelabelConfigs) != 1 || ep.RelabelConfigs[0].TargetLabel != "cluster" {
		t.Errorf("relabelings %+v", ep.RelabelConfigs)
	}
	if len(ep.MetricRelabelConfigs) != 1 || ep.MetricRelabelConfigs[0].Action != "drop" || ep.MetricRelabelConfigs[0].SourceLabels[0] != "__name__" {
		t.Errorf("metricRelabelings %+v", ep.MetricRelabelConfigs)
	}
	if !labels.SelectorFromSet(sm.Spec.Selector.MatchLabels).Matches(labels.Set(find[*corev1.Service](t, r).Labels)) {
		t.Errorf("the ServiceMonitor's selector %v misses the renamed Service", sm.Spec.Selector.MatchLabels)
	}
}

// metrics.certSecret: the Secret is mounted where the binary reads its
// serving certificate, and the ServiceMonitor verifies it.
func TestMetricsCertSecret(t *testing.T) {
	c := loadChart(t)
	r := mustRender(t, c, withMonitoring, "metrics.certSecret=nrc-metrics-tls", "serviceMonitor.enabled=true")
	d := find[*appsv1.Deployment](t, r)
	var vol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret.SecretName != "nrc-metrics-tls" {
		t.Fatalf("volumes %+v: no Secret volume of nrc-metrics-tls", d.Spec.Template.Spec.Volumes)
	}
	var mount *corev1.VolumeMount
	for i, m := range controller(t, d).VolumeMounts {
		if m.Name == vol.Name {
			mount = &controller(t, d).VolumeMounts[i]
		}
	}
	// The binary's directory: controller-runtime's default under TMPDIR
	// (cmd/node-rotation-controller/run.go), /tmp in the container.
	if mount == nil || mount.MountPath != MetricsCertDir || !mount.ReadOnly {
		t.Errorf("mount %+v, want read-only at %s", mount, MetricsCertDir)
	}
	ep := find[*monitoringv1.ServiceMonitor](t, r).Spec.Endpoints[0]
	tls := ep.TLSConfig
	if tls == nil || (tls.InsecureSkipVerify != nil && *tls.InsecureSkipVerify) || tls.CA.Secret == nil || tls.CA.Secret.Name != "nrc-metrics-tls" ||
		tls.CA.Secret.Key != "ca.crt" || tls.ServerName == nil || *tls.ServerName != "nrc-metrics."+namespace+".svc" {
		t.Errorf("tlsConfig %+v: want verification against ca.crt of the Secret for the Service's name", tls)
	}
	// Without it: self-signed, no mount.
	d = find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}))
	if len(d.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("default volumes %+v, want tmp alone", d.Spec.Template.Spec.Volumes)
	}
	if _, err := render(t, c, setValues(t, "metrics.certSecret=x", "metrics.secure=false"), renderOpts{}); err == nil || !strings.Contains(err.Error(), "needs metrics.secure=true") {
		t.Errorf("a certificate for plain HTTP: %v", err)
	}
}

// MetricsCertDir is where the binary looks for tls.crt and tls.key in the
// container (cmd/node-rotation-controller's TestTheChartMountsTheCertDir
// reads the chart's mount and checks it against the binary's own path).
const MetricsCertDir = "/tmp/k8s-metrics-server/serving-certs"

// commonLabels may not replace the labels the chart selects by.
func TestCommonLabelsCannotReplaceTheChartsLabels(t *testing.T) {
	for _, set := range []string{"commonLabels.app\\.kubernetes\\.io/name=x", "commonLabels.helm\\.sh/chart=x"} {
		if _, err := render(t, loadChart(t), setValues(t, set), renderOpts{}); err == nil || !strings.Contains(err.Error(), "sets the app.kubernetes.io/ and helm.sh/ labels itself") {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}

// The chart's version and appVersion are the repository's VERSION.
func TestChartVersionIsTheRelease(t *testing.T) {
	raw, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(raw))
	c := loadChart(t)
	if c.Metadata.Version != release || c.Metadata.AppVersion != release {
		t.Errorf("Chart.yaml version %s, appVersion %s; VERSION says %s", c.Metadata.Version, c.Metadata.AppVersion, release)
	}
	var values struct {
		Image struct{ Tag, Digest string }
	}
	rawValues, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(rawValues, &values); err != nil {
		t.Fatal(err)
	}
	// The source chart follows appVersion by tag: a pinned tag or digest
	// here would outlive the next VERSION.
	if values.Image.Tag != "" || values.Image.Digest != "" {
		t.Errorf("values.yaml pins image tag %q, digest %q: leave both empty in the source chart", values.Image.Tag, values.Image.Digest)
	}
}

// podLabels fill in what the chart's labels and commonLabels leave: a
// key they set is theirs (no duplicate key, no broken selector).
func TestPodLabelsUnderCommonLabels(t *testing.T) {
	r := mustRender(t, loadChart(t), renderOpts{}, "commonLabels.team=platform", "podLabels.team=other", "podLabels.tier=ops",
		"podLabels.app\\.kubernetes\\.io/name=x")
	pod := find[*appsv1.Deployment](t, r).Spec.Template.Labels
	if pod["team"] != "platform" || pod["tier"] != "ops" || pod["app.kubernetes.io/name"] != "node-rotation-controller" {
		t.Errorf("Pod labels %v: want team from commonLabels, tier from podLabels, the chart's name", pod)
	}
}

// The version label is the image's tag (what runs), appVersion by default;
// rotationctl version reports it.
func TestVersionLabelIsTheImagesTag(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct{ set, want string }{{"", "0.1.0"}, {"image.tag=0.1.1-rc.1", "0.1.1-rc.1"}} {
		var sets []string
		if tc.set != "" {
			sets = append(sets, tc.set)
		}
		d := find[*appsv1.Deployment](t, mustRender(t, c, renderOpts{}, sets...))
		if d.Labels["app.kubernetes.io/version"] != tc.want || d.Spec.Template.Labels["app.kubernetes.io/version"] != tc.want {
			t.Errorf("--set %q: version labels %q / %q, want %q", tc.set, d.Labels["app.kubernetes.io/version"], d.Spec.Template.Labels["app.kubernetes.io/version"], tc.want)
		}
	}
}

// NOTES.txt names what the values changed.
func TestNotesFollowTheValues(t *testing.T) {
	r := mustRender(t, loadChart(t), renderOpts{}, "fullnameOverride=rotator", "metrics.certSecret=nrc-tls")
	containsAll(t, "NOTES.txt", r.notes, "release nrc in namespace", "its objects named rotator", "HTTPS (the certificate of Secret nrc-tls)",
		"helm show crds <the new chart> | kubectl apply --server-side --force-conflicts -f -")
}
