package envtest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// decodePolicies reads every YAML document of a file into a RotationPolicy.
func decodePolicies(path string) []v1alpha1.RotationPolicy {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	dec := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []v1alpha1.RotationPolicy
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var p v1alpha1.RotationPolicy
		Expect(sigsyaml.UnmarshalStrict(doc, &p)).To(Succeed(), "decoding a document of %s", path)
		out = append(out, p)
	}
}

var _ = Describe("RotationPolicy admission", func() {
	ctx := context.Background()

	It("accepts every policy in docs/examples and applies the spec's defaults", func() {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		files, err := filepath.Glob(filepath.Join(root, "docs/examples/*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(files)).To(BeNumerically(">=", 4))
		for _, f := range files {
			for _, p := range decodePolicies(f) {
				p := p
				Expect(env.Client.Create(ctx, &p)).To(Succeed(), "%s: %s", filepath.Base(f), p.Name)
				_, err := plan.LoadPolicy(f, p.Name)
				Expect(err).NotTo(HaveOccurred(), "rotationctl admits %s: %s as the API server does", filepath.Base(f), p.Name)
				got := &v1alpha1.RotationPolicy{}
				Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), got)).To(Succeed())
				Expect(got.Spec.AgeThreshold).NotTo(BeEmpty())
				Expect(got.Spec.MinRotationChances).To(BeNumerically(">=", 1))
				Expect(got.Spec.Surge.MaxUnavailable).NotTo(BeNil())
				Expect(got.Spec.Surge.MaxUnavailableCap).To(Equal(ptr.To(intstr.FromString("10%"))))
				Expect(got.Spec.Surge.ReadyTimeout).NotTo(BeEmpty())
				Expect(got.Spec.Surge.RetryBackoff).NotTo(BeEmpty())
				Expect(got.Spec.Surge.MatchNodeRequirements.Required).NotTo(BeEmpty())
				_, err = policy.Resolve(got.Spec)
				Expect(err).NotTo(HaveOccurred(), "%s resolves", p.Name)
				Expect(env.Client.Delete(ctx, got)).To(Succeed())
			}
		}
	})

	It("defaults a spec of one window to the values docs/policy.md documents", func() {
		p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: v1alpha1.RotationPolicySpec{
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "01:00", End: "05:00"}},
		}}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(ctx, p) })
		s := p.Spec
		Expect(s.AgeThreshold).To(Equal("auto"))
		Expect(s.MinRotationChances).To(BeNumerically("==", 2))
		Expect(s.Surge.ReadyTimeout).To(Equal("15m"))
		Expect(s.Surge.CooldownAfter).To(Equal("10m"))
		Expect(s.Surge.RetryBackoff).To(Equal("30m"))
		Expect(s.Surge.MaxUnavailable).To(Equal(ptr.To(intstr.FromString("auto"))), "auto: the smallest number that covers the pool, capped at 10%, unless the policy says otherwise")
		Expect(s.Surge.MaxUnavailableCap).To(Equal(ptr.To(intstr.FromString("10%"))))
		Expect(s.Surge.FailurePause).To(BeEmpty(), "unset means max(10m, cooldownAfter)")
		Expect(s.Surge.MatchNodeRequirements.Required).To(Equal(policy.DefaultRequired))
		Expect(s.PrePull.Enabled).To(BeFalse())
		Expect(s.PrePull.Timeout).To(Equal("10m"), "prePull's defaults apply where the object has the key, as a Go client writes it")
		Expect(s.PrePull.MaxImages).To(BeNumerically("==", policy.DefaultPrePullMaxImages))
	})

	It("accepts prePull.usePullSecrets (the controller honours it only when installed to)", func() {
		p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pull-secrets"}, Spec: v1alpha1.RotationPolicySpec{
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "01:00", End: "05:00"}},
			PrePull:            v1alpha1.PrePullSpec{Enabled: true, UsePullSecrets: true},
		}}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(ctx, p) })
		Expect(p.Spec.PrePull.UsePullSecrets).To(BeTrue())
	})

	It("accepts \"0\" where zero means none: cooldownAfter, failurePause", func() {
		p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "zeroes"}, Spec: v1alpha1.RotationPolicySpec{
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "01:00", End: "05:00"}},
			Surge:              v1alpha1.SurgeSpec{CooldownAfter: "0", FailurePause: "0"},
		}}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(ctx, p) })
		s, err := policy.Resolve(p.Spec)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.CooldownAfter).To(BeZero())
	})

	It("admits maxUnavailable as a count, a percentage or auto, and resolves each", func() {
		for _, c := range []struct {
			value, limit *intstr.IntOrString
			want         schedule.Concurrency
		}{
			{ptr.To(intstr.FromInt32(3)), nil, schedule.Concurrency{Amount: schedule.Amount{Count: 3}, Cap: policy.DefaultMaxUnavailableCap}},
			{ptr.To(intstr.FromString("25%")), nil, schedule.Concurrency{Amount: schedule.Amount{Percent: 25}, Cap: policy.DefaultMaxUnavailableCap}},
			{ptr.To(intstr.FromString("100%")), nil, schedule.Concurrency{Amount: schedule.Amount{Percent: 100}, Cap: policy.DefaultMaxUnavailableCap}},
			{ptr.To(intstr.FromString("auto")), ptr.To(intstr.FromInt32(5)), schedule.Concurrency{Auto: true, Cap: schedule.Amount{Count: 5}}},
			{ptr.To(intstr.FromString("auto")), ptr.To(intstr.FromString("20%")), schedule.Concurrency{Auto: true, Cap: schedule.Amount{Percent: 20}}},
		} {
			p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "concurrency"}, Spec: v1alpha1.RotationPolicySpec{
				MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "01:00", End: "05:00"}},
				Surge:              v1alpha1.SurgeSpec{MaxUnavailable: c.value, MaxUnavailableCap: c.limit},
			}}
			Expect(env.Client.Create(ctx, p)).To(Succeed(), "maxUnavailable %s, cap %v", c.value, c.limit)
			s, err := policy.Resolve(p.Spec)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Concurrency).To(Equal(c.want), "maxUnavailable %s, cap %v", c.value, c.limit)
			Expect(env.Client.Delete(ctx, p)).To(Succeed())
		}
	})

	It("admits selectors and label keys of every valid form", func() {
		p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "forms"}, Spec: v1alpha1.RotationPolicySpec{
			NodePoolSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"b"}},
				{Key: "example.com/rotate", Operator: metav1.LabelSelectorOpExists},
				{Key: "frozen", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "01:00", End: "05:00"}},
			Surge: v1alpha1.SurgeSpec{MatchNodeRequirements: v1alpha1.MatchNodeRequirements{
				Required:  []string{"topology.kubernetes.io/zone", "karpenter.k8s.aws/instance-family", "node_type.v2"},
				Preferred: []string{"kubernetes.io/arch", "a"},
			}},
		}}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(ctx, p) })
	})

	It("admits an unknown time zone, which is found at reconcile instead", func() {
		p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "mars"}, Spec: v1alpha1.RotationPolicySpec{
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "Mars/Olympus_Mons", Days: []v1alpha1.Weekday{"Mon"}, Start: "01:00", End: "02:00"}},
		}}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { _ = env.Client.Delete(ctx, p) })
		list := &v1alpha1.RotationPolicyList{}
		Expect(env.Client.List(ctx, list)).To(Succeed(), "one bad policy must not break decoding the list")
		_, err := policy.Resolve(p.Spec)
		Expect(err).To(MatchError(ContainSubstring(`spec.maintenanceWindows[0].timezone "Mars/Olympus_Mons": not a loadable IANA time zone`)))
	})

	It("refuses unknown fields in metadata and spec as the API server does under strict validation", func() {
		p := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RotationPolicy",
			"metadata": map[string]any{"name": "strict", "labelz": map[string]any{"a": "b"}},
			"spec":     map[string]any{"window": int64(1), "maintenanceWindows": []any{map[string]any{"timezone": "UTC", "days": []any{"Sat"}, "start": "02:00", "end": "06:00"}}},
		}}
		err := env.Client.Create(ctx, p.DeepCopy(), client.FieldValidation("Strict"))
		Expect(err).To(HaveOccurred())
		raw, yerr := sigsyaml.Marshal(p.Object)
		Expect(yerr).NotTo(HaveOccurred())
		path := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
		Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
		_, ours := plan.LoadPolicies(path)
		Expect(ours).To(HaveOccurred())
		for _, field := range []string{`unknown field "metadata.labelz"`, `unknown field "spec.window"`} {
			Expect(err.Error()).To(ContainSubstring(field), "the API server")
			Expect(ours.Error()).To(ContainSubstring(field), "rotationctl plan")
		}
	})

	DescribeTable("refuses a bad policy with a message naming the field",
		func(specYAML, want string) {
			// Unstructured, so a field the typed struct would omit as empty
			// (minRotationChances: 0) or send as "" reaches the API server as written.
			spec := map[string]any{}
			Expect(sigsyaml.Unmarshal([]byte(specYAML), &spec)).To(Succeed())
			// A policy needs a window to be checked further (an absent
			// required field stops validation), so every entry that is not
			// about the windows gets a valid one; `maintenanceWindows: null`
			// sends none at all.
			if w, ok := spec["maintenanceWindows"]; !ok {
				valid := map[string]any{}
				Expect(sigsyaml.Unmarshal([]byte(window(`timezone: UTC`)), &valid)).To(Succeed())
				spec["maintenanceWindows"] = valid["maintenanceWindows"]
			} else if w == nil {
				delete(spec, "maintenanceWindows")
			}
			p := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "RotationPolicy",
				"metadata": map[string]any{"generateName": "bad-"}, "spec": spec,
			}}
			// as kubectl apply sends it: strict field validation
			err := env.Client.Create(ctx, p, client.FieldValidation("Strict"))
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(want))
			// rotationctl plan, reading the same policy from a file,
			// refuses it too, in the API server's words: each cause the
			// server gives
			raw, yerr := sigsyaml.Marshal(p.Object)
			Expect(yerr).NotTo(HaveOccurred())
			path := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
			Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
			_, ours := plan.LoadPolicies(path)
			Expect(ours).To(HaveOccurred(), "rotationctl admits what the API server refuses")
			Expect(ours.Error()).To(ContainSubstring(want))
			var status *apierrors.StatusError
			Expect(errors.As(err, &status)).To(BeTrue())
			for _, c := range ptr.Deref(status.ErrStatus.Details, metav1.StatusDetails{}).Causes {
				Expect(ours.Error()).To(ContainSubstring(c.Field+": "+c.Message), "the API server's cause")
			}
		},
		Entry("an unknown field", `maintenanceWindow: []`, `strict decoding error: unknown field "spec.maintenanceWindow"`),
		Entry("a wrong type", `minRotationChances: two`, `spec.minRotationChances: Invalid value: "string": spec.minRotationChances in body must be of type integer`),
		Entry("ageThreshold not a duration", `ageThreshold: soon`, `spec.ageThreshold: Invalid value: "soon": ageThreshold must be "auto" or a Go duration`),
		Entry("ageThreshold zero", `ageThreshold: 0s`, `spec.ageThreshold: Invalid value: "0s": ageThreshold must be greater than 0`),
		Entry("minRotationChances 0", `minRotationChances: 0`, `spec.minRotationChances: Invalid value: 0: spec.minRotationChances in body should be greater than or equal to 1`),
		Entry("unknown day", window(`days: [Funday]`), `spec.maintenanceWindows[0].days[0]: Unsupported value: "Funday"`),
		Entry("day twice", window(`days: [Mon, Mon]`), `spec.maintenanceWindows[0].days[1]: Duplicate value: "Mon"`),
		Entry("no days", window(`days: []`), `spec.maintenanceWindows[0].days: Invalid value: 0: spec.maintenanceWindows[0].days in body should have at least 1 items`),
		Entry("start not HH:MM", window(`start: "2:00"`), `spec.maintenanceWindows[0].start: Invalid value: "2:00": spec.maintenanceWindows[0].start in body should match`),
		Entry("start 24:00", window(`start: "24:00"`), `spec.maintenanceWindows[0].start: Invalid value: "24:00"`),
		Entry("end past 24:00", window(`end: "24:01"`), `spec.maintenanceWindows[0].end: Invalid value: "24:01": spec.maintenanceWindows[0].end in body should match`),
		Entry("empty timezone", window(`timezone: ""`), `spec.maintenanceWindows[0].timezone: Invalid value: "": spec.maintenanceWindows[0].timezone in body should be at least 1 chars long`),
		Entry("maxUnavailable 0", `surge: {maxUnavailable: 0}`, `spec.surge.maxUnavailable: Invalid value: 0: maxUnavailable must be an integer of at least 1, a percentage from 1% to 100% such as 10%, or auto`),
		Entry("maxUnavailable negative", `surge: {maxUnavailable: -2}`, `spec.surge.maxUnavailable: Invalid value: -2: maxUnavailable must be an integer of at least 1`),
		Entry("maxUnavailable 0%", `surge: {maxUnavailable: "0%"}`, `spec.surge.maxUnavailable: Invalid value: "0%": maxUnavailable must be an integer of at least 1`),
		Entry("maxUnavailable 150%", `surge: {maxUnavailable: "150%"}`, `spec.surge.maxUnavailable: Invalid value: "150%": maxUnavailable must be an integer of at least 1`),
		Entry("maxUnavailable garbage", `surge: {maxUnavailable: all}`, `spec.surge.maxUnavailable: Invalid value: "all": maxUnavailable must be an integer of at least 1`),
		Entry("maxUnavailable a fraction", `surge: {maxUnavailable: 1.5}`, `spec.surge.maxUnavailable`),
		Entry("maxUnavailableCap auto", `surge: {maxUnavailable: auto, maxUnavailableCap: auto}`, `spec.surge.maxUnavailableCap: Invalid value: "auto": maxUnavailableCap must be an integer of at least 1 or a percentage from 1% to 100% such as 10%`),
		Entry("maxUnavailableCap 0", `surge: {maxUnavailableCap: 0}`, `spec.surge.maxUnavailableCap: Invalid value: 0: maxUnavailableCap must be an integer of at least 1`),
		Entry("readyTimeout zero", `surge: {readyTimeout: 0s}`, `spec.surge.readyTimeout: Invalid value: "0s": readyTimeout must be greater than 0`),
		Entry("retryBackoff negative", `surge: {retryBackoff: "-5m"}`, `spec.surge.retryBackoff: Invalid value: "-5m": retryBackoff must be a Go duration such as 90m`),
		Entry("retryBackoff zero", `surge: {retryBackoff: 0m}`, `spec.surge.retryBackoff: Invalid value: "0m": retryBackoff must be greater than 0`),
		Entry("cooldownAfter not a duration", `surge: {cooldownAfter: ten}`, `spec.surge.cooldownAfter: Invalid value: "ten": cooldownAfter must be a Go duration such as 90m`),
		Entry("failurePause in days", `surge: {failurePause: 1d}`, `spec.surge.failurePause: Invalid value: "1d": failurePause must be a Go duration such as 90m`),
		Entry("drainEstimate not a duration", `surge: {drainEstimate: soon}`, `spec.surge.drainEstimate: Invalid value: "soon": drainEstimate must be a Go duration such as 90m`),
		Entry("provisioningEstimate not a duration", `surge: {provisioningEstimate: 5 minutes}`, `spec.surge.provisioningEstimate: Invalid value: "5 minutes": provisioningEstimate must be a Go duration such as 90m`),
		Entry("readyTimeout not a duration", `surge: {readyTimeout: 1d}`, `spec.surge.readyTimeout: Invalid value: "1d": readyTimeout must be a Go duration such as 90m`),
		Entry("readyTimeout \"0\"", `surge: {readyTimeout: "0"}`, `spec.surge.readyTimeout: Invalid value: "0": readyTimeout must be greater than 0`),
		Entry("no maintenanceWindows", `maintenanceWindows: null`, `spec.maintenanceWindows: Required value`),
		Entry("empty maintenanceWindows", `maintenanceWindows: []`, `spec.maintenanceWindows: Invalid value: 0: spec.maintenanceWindows in body should have at least 1 items`),
		Entry("selector operator typo", `nodePoolSelector: {matchExpressions: [{key: team, operator: Equals, values: [a]}]}`, `spec.nodePoolSelector: Invalid value: matchExpressions operator must be one of In, NotIn, Exists, DoesNotExist`),
		Entry("selector In without values", `nodePoolSelector: {matchExpressions: [{key: team, operator: In}]}`, `matchExpressions with In or NotIn need at least one value`),
		Entry("selector Exists with values", `nodePoolSelector: {matchExpressions: [{key: team, operator: Exists, values: [a]}]}`, `matchExpressions with Exists or DoesNotExist take no values`),
		Entry("required key not a label key", `surge: {matchNodeRequirements: {required: ["topology.kubernetes.io/zone", "not a key"]}}`, `spec.surge.matchNodeRequirements.required: Invalid value: required entries must be label keys such as topology.kubernetes.io/zone`),
		Entry("preferred key not a label key", `surge: {matchNodeRequirements: {preferred: ["-leading-dash"]}}`, `spec.surge.matchNodeRequirements.preferred: Invalid value: preferred entries must be label keys such as topology.kubernetes.io/zone`),
		Entry("prePull timeout zero", `prePull: {timeout: 0s}`, `spec.prePull.timeout: Invalid value: "0s": timeout must be greater than 0`),
		Entry("prePull timeout not a duration", `prePull: {timeout: 1d}`, `spec.prePull.timeout: Invalid value: "1d": timeout must be a Go duration such as 10m`),
		Entry("prePull maxImages 0", `prePull: {maxImages: 0}`, `spec.prePull.maxImages: Invalid value: 0: spec.prePull.maxImages in body should be greater than or equal to 1`),
		Entry("prePull maxImages past 100", `prePull: {maxImages: 101}`, `spec.prePull.maxImages: Invalid value: 101: spec.prePull.maxImages in body should be less than or equal to 100`),
		Entry("prePull empty glob", `prePull: {excludeImages: [""]}`, `spec.prePull.excludeImages[0]: Invalid value: "": spec.prePull.excludeImages[0] in body should be at least 1 chars long`),
		Entry("prePull glob twice", `prePull: {excludeImages: ["a/*", "a/*"]}`, `spec.prePull.excludeImages[1]: Duplicate value: "a/*"`),
		Entry("window without a start", `maintenanceWindows: [{timezone: UTC, days: [Mon], end: "02:00"}]`, `spec.maintenanceWindows[0].start: Required value`),
		Entry("startCutoff not a duration", `surge: {startCutoff: 5 minutes}`, `spec.surge.startCutoff: Invalid value: "5 minutes": startCutoff must be a Go duration such as 90m`),
		Entry("blackout end before its start", `blackouts: [{start: "2026-12-24T00:00:00Z", end: "2026-12-23T00:00:00Z"}]`, `spec.blackouts[0]: Invalid value: a blackout's end must be after its start`),
		// compared as times, not as strings: 00:30+01:00 is before 00:00Z
		Entry("blackout end before its start in another zone", `blackouts: [{start: "2026-12-24T00:00:00Z", end: "2026-12-24T00:30:00+01:00"}]`, `spec.blackouts[0]: Invalid value: a blackout's end must be after its start`),
		Entry("blackout start not RFC3339", `blackouts: [{start: "Christmas", end: "2026-12-27T00:00:00Z"}]`, `spec.blackouts[0].start: Invalid value: "Christmas": spec.blackouts[0].start in body must be of type date-time`),
		Entry("blackout without an end", `blackouts: [{start: "2026-12-24T00:00:00Z"}]`, `spec.blackouts[0].end: Required value`),
	)
})

// window renders a one-entry maintenanceWindows list with one field replaced.
func window(override string) string {
	fields := map[string]string{"timezone": `timezone: UTC`, "days": `days: [Mon]`, "start": `start: "01:00"`, "end": `end: "02:00"`}
	key, _, _ := strings.Cut(override, ":")
	fields[key] = override
	return "maintenanceWindows:\n- " + strings.Join([]string{fields["timezone"], fields["days"], fields["start"], fields["end"]}, "\n  ")
}
