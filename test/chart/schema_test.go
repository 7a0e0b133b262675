package chart

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Each value is refused by values.schema.json, so `helm install` and `helm
// template` stop before rendering anything, naming the value.
func TestSchemaRefusesBadValues(t *testing.T) {
	c := loadChart(t)
	for _, tc := range []struct{ set, path string }{
		{"replicaCount=two", "/replicaCount"},
		{"replicaCount=0", "/replicaCount"},
		{"metrics.port=abc", "/metrics/port"},
		{"metrics.port=70000", "/metrics/port"},
		{"metrics.port=-1", "/metrics/port"},
		{"metrics.port=8081", "/metrics/port"}, // the probes' port
		{"metrics.secure=maybe", "/metrics/secure"},
		{"logFormat=xml", "/logFormat"},
		{"logVerbosity=loud", "/logVerbosity"},
		{"logVerbosity=-1", "/logVerbosity"},
		{"maxConcurrentRotations=-1", "/maxConcurrentRotations"},
		{"maxConcurrentRotations=some", "/maxConcurrentRotations"},
		{"placeholderPriorityClass.value=1000", "/placeholderPriorityClass/value"},
		{"placeholderPriorityClass.value=0", "/placeholderPriorityClass/value"},
		{"placeholderPriorityClass.value=-1.5", "/placeholderPriorityClass/value"},
		{"placeholderPriorityClass.name=Not_A_Name", "/placeholderPriorityClass/name"},
		{"placeholderPriorityClass.name=", "/placeholderPriorityClass/name"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"image.repository=", "/image/repository"},
		{"serviceAccount.create=yes", "/serviceAccount/create"},
		{"defaultAffinity.spreadReplicas=always", "/defaultAffinity/spreadReplicas"},
		{"podDisruptionBudget.maxUnavailable=0", "/podDisruptionBudget/maxUnavailable"},
		{"podDisruptionBudget.maxUnavailable=half", "/podDisruptionBudget/maxUnavailable"},
		{"prometheusRule.completionRange=4 hours", "/prometheusRule/completionRange"},
		{"prometheusRule.fallingBehindRange=", "/prometheusRule/fallingBehindRange"},
		{"serviceMonitor.interval=30", "/serviceMonitor/interval"},
		{"nodeSelector.role=1", "/nodeSelector/role"},
		{"tolerations=NoSchedule", "/tolerations"},
		// Unknown keys, at the top, nested, and in a Kubernetes object.
		{"replicas=2", "additional properties 'replicas'"},
		{"metrics.tls=true", "additional properties 'tls'"},
		{"image.name=x", "additional properties 'name'"},
		{"placeholderPriorityClass.preemptionPolicy=Never", "additional properties 'preemptionPolicy'"},
		{"podSecurityContext.runAsUsr=1", "additional properties 'runAsUsr'"},
		{"securityContext.readOnlyRootFileSystem=true", "additional properties 'readOnlyRootFileSystem'"},
		{"tolerations[0].keys=x", "additional properties 'keys'"},
		{"affinity.nodeAfinity.x=y", "additional properties 'nodeAfinity'"},
		{"resources.request.cpu=1", "additional properties 'request'"},
		{"imagePullSecrets[0].nam=x", "additional properties 'nam'"},
		// The extension points.
		{"nameOverride=Not_A_Name", "/nameOverride"},
		{"fullnameOverride=" + strings.Repeat("a", 56), "/fullnameOverride"},
		{"commonLabels.team=1", "/commonLabels/team"},
		{"image.digest=latest", "/image/digest"},
		{"image.digest=sha256:abc", "/image/digest"},
		{"extraArgs[0]=v=2", "/extraArgs/0"},
		{"extraArgs=-v=2", "/extraArgs"},
		{"env[0].value=x", "missing property 'name'"},
		{"env[0].name=A,env[0].valueFrm.x=y", "additional properties 'valueFrm'"},
		{"extraVolumes[0].name=ca,extraVolumes[0].configmap.name=x", "additional properties 'configmap'"},
		{"extraVolumeMounts[0].name=ca,extraVolumeMounts[0].mountpath=/x", "missing property 'mountPath'"},
		{"extraVolumeMounts[0].name=ca,extraVolumeMounts[0].mountPath=/x,extraVolumeMounts[0].readOnly=sure", "/extraVolumeMounts/0/readOnly"},
		{"serviceMonitor.relabelings[0].target_label=x", "additional properties 'target_label'"},
		{"serviceMonitor.metricRelabelings[0].sourceLabels=__name__", "/serviceMonitor/metricRelabelings/0/sourceLabels"},
		{"metrics.certSecret=Not_A_Secret", "/metrics/certSecret"},
		{"serviceMonitor.relabelings[0].action=Delete", "/serviceMonitor/relabelings/0/action"},
		{"serviceMonitor.metricRelabelings[0].sourceLabels[0]=1", "/serviceMonitor/metricRelabelings/0/sourceLabels/0"},
		{"metrics.auth=sometimes", "/metrics/auth"},
		{"tolerateCriticalAddonsOnly=maybe", "/tolerateCriticalAddonsOnly"},
	} {
		_, err := render(t, c, setValues(t, tc.set), renderOpts{})
		switch {
		case err == nil:
			t.Errorf("--set %s: accepted", tc.set)
		case !strings.Contains(err.Error(), "values don't meet the specifications of the schema"):
			t.Errorf("--set %s: refused, but not by the schema: %v", tc.set, err)
		case !strings.Contains(err.Error(), tc.path):
			t.Errorf("--set %s: the error does not name %s: %v", tc.set, tc.path, err)
		}
	}
}

func TestSchemaAcceptsGoodValues(t *testing.T) {
	c := loadChart(t)
	for _, set := range [][]string{
		{"metrics.port=0"},
		{"metrics.port=9443", "metrics.secure=false", "metrics.auth=true"},
		{"replicaCount=3", "logVerbosity=2", "logFormat=text"},
		{"placeholderPriorityClass.value=-2147483648"},
		{"podDisruptionBudget.maxUnavailable=50%"},
		{"podSecurityContext.runAsUser=null"}, // a null drops a default key
		{"serviceMonitor.enabled=true", "serviceMonitor.interval=1m30s", "serviceMonitor.scrapeTimeout=10s"},
		{"prometheusRule.completionRange=1d12h", "prometheusRule.fallingBehindRange=2w"},
		{"global.imageRegistry=example"}, // a parent chart's globals
		{"image.tag=sha-abc", "image.pullPolicy=Never", "priorityClassName="},
		{"resources.requests.cpu=0.5", "resources.limits=null"},
		{"nameOverride=nrc", "fullnameOverride=node-rotation", "commonLabels.team=platform", "image.digest=" + digest, "image.tag=0.1.0"},
		{"extraArgs[0]=--v=2", "env[0].name=A", "env[0].valueFrom.fieldRef.fieldPath=spec.nodeName"},
		{"extraVolumes[0].name=ca", "extraVolumes[0].secret.secretName=ca", "extraVolumeMounts[0].name=ca", "extraVolumeMounts[0].mountPath=/ca"},
		{"serviceMonitor.relabelings[0].action=labeldrop", "serviceMonitor.relabelings[0].regex=pod", "serviceMonitor.metricRelabelings[0].modulus=2"},
		{"metrics.certSecret=nrc-metrics.tls", "metrics.auth=false", "tolerateCriticalAddonsOnly=false"},
	} {
		if _, err := render(t, c, setValues(t, set...), renderOpts{}); err != nil {
			t.Errorf("--set %v: %v", set, err)
		}
	}
}

// The schema and values.yaml describe the same keys: every value has a
// schema, every schema property (but Helm's global) is a value, and every
// object of the chart's own refuses unknown keys.
func TestSchemaCoversEveryValue(t *testing.T) {
	var values map[string]any
	raw, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	s := readSchema(t)
	if s["additionalProperties"] != false {
		t.Error("the schema's root admits unknown keys")
	}
	var walk func(path string, v any, node map[string]any)
	walk = func(path string, v any, node map[string]any) {
		if node == nil {
			t.Errorf("value %s has no schema", path)
			return
		}
		m, isMap := v.(map[string]any)
		props, hasProps := node["properties"].(map[string]any)
		if !isMap || !hasProps {
			return
		}
		if node["additionalProperties"] != false {
			t.Errorf("%s: the schema admits unknown keys (additionalProperties is not false)", path)
		}
		if _, kube := kubeTypes[strings.TrimPrefix(path, ".")]; kube {
			return // a Kubernetes object: its keys are checked against the Go type
		}
		for k := range props {
			if _, ok := m[k]; !ok && !(path == "" && k == "global") {
				t.Errorf("the schema has %s.%s, which values.yaml does not", path, k)
			}
		}
		for k, sub := range m {
			p, _ := props[k].(map[string]any)
			walk(path+"."+k, sub, p)
		}
	}
	walk("", values, s)
}

// kubeTypes are the values passed through to the Pod spec: the schema lists
// each one's fields (unknown ones refused), exactly those of the Go type.
var kubeTypes = map[string]reflect.Type{
	"tolerations":                      reflect.TypeFor[corev1.Toleration](),
	"affinity":                         reflect.TypeFor[corev1.Affinity](),
	"topologySpreadConstraints":        reflect.TypeFor[corev1.TopologySpreadConstraint](),
	"podSecurityContext":               reflect.TypeFor[corev1.PodSecurityContext](),
	"securityContext":                  reflect.TypeFor[corev1.SecurityContext](),
	"resources":                        reflect.TypeFor[corev1.ResourceRequirements](),
	"imagePullSecrets":                 reflect.TypeFor[corev1.LocalObjectReference](),
	"env":                              reflect.TypeFor[corev1.EnvVar](),
	"extraVolumes":                     reflect.TypeFor[corev1.Volume](),
	"extraVolumeMounts":                reflect.TypeFor[corev1.VolumeMount](),
	"serviceMonitor.relabelings":       reflect.TypeFor[monitoringv1.RelabelConfig](),
	"serviceMonitor.metricRelabelings": reflect.TypeFor[monitoringv1.RelabelConfig](),
}

func TestSchemaKubernetesFieldsMatchTheGoTypes(t *testing.T) {
	for key, typ := range kubeTypes {
		node := readSchema(t)
		for _, k := range strings.Split(key, ".") {
			node = node["properties"].(map[string]any)[k].(map[string]any)
		}
		if items, ok := node["items"].(map[string]any); ok {
			node = items
		}
		if node["additionalProperties"] != false {
			t.Errorf("%s: the schema admits unknown fields", key)
		}
		var got []string
		for k := range node["properties"].(map[string]any) {
			got = append(got, k)
		}
		sort.Strings(got)
		if want := jsonFields(typ); !slices.Equal(got, want) {
			t.Errorf("%s: the schema lists %v, %s has %v", key, got, typ, want)
		}
	}
}

// jsonFields are the JSON keys of typ, those of its inlined structs (a
// Volume's VolumeSource) among them: an embedded struct without a JSON
// name is inlined by encoding/json, whether its tag says `json:",inline"`
// (k8s.io/api before v0.37) or `json:""` (from v0.37).
func jsonFields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && (f.Anonymous || strings.Contains(opts, "inline")):
			out = append(out, jsonFields(f.Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func readSchema(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(chartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	return s
}
