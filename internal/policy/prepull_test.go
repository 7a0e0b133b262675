package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func TestPrePullDefaultsAndBound(t *testing.T) {
	p, err := prePull(v1alpha1.PrePullSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Timeout != DefaultPrePullTimeout || p.MaxImages != DefaultPrePullMaxImages || p.Enabled || p.UsePullSecrets {
		t.Fatalf("defaults = %+v", p)
	}
	if p.InWindow() != 0 {
		t.Fatalf("a disabled phase adds %s to a rotation, want nothing", p.InWindow())
	}
	p.Enabled, p.Timeout = true, 7*time.Minute
	if p.InWindow() != 7*time.Minute {
		t.Fatalf("an enabled phase adds %s, want its timeout 7m", p.InWindow())
	}
}

func TestPrePullErrorsNameTheField(t *testing.T) {
	_, err := prePull(v1alpha1.PrePullSpec{Enabled: true, Timeout: "0s", MaxImages: 101, ExcludeImages: []string{"ok/*", "[unclosed", ""}, UsePullSecrets: true})
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		`spec.prePull.timeout: "0s" must be greater than 0`,
		"spec.prePull.maxImages: 101 is outside 1 to 100",
		`spec.prePull.excludeImages[1]: "[unclosed" is not a glob`,
		`spec.prePull.excludeImages[2]: "" is not a glob`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "excludeImages[0]") {
		t.Errorf("a valid glob reported: %v", err)
	}
	if p, err := prePull(v1alpha1.PrePullSpec{Enabled: true, UsePullSecrets: true}); err != nil || !p.UsePullSecrets {
		t.Errorf("usePullSecrets: %+v %v, want it taken", p, err)
	}
	if _, err := prePull(v1alpha1.PrePullSpec{MaxImages: -1}); err == nil || !strings.Contains(err.Error(), "spec.prePull.maxImages: -1") {
		t.Errorf("maxImages -1: %v", err)
	}
}

func TestResolveCarriesThePrePullBoundIntoTheTiming(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"}},
		PrePull:            v1alpha1.PrePullSpec{Timeout: "4m", MaxImages: 5, ExcludeImages: []string{"a/*"}},
	}
	s, err := Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	if s.PrePull.Timeout != 4*time.Minute || s.PrePull.MaxImages != 5 || s.PrePull.Enabled || len(s.PrePull.Exclude) != 1 {
		t.Fatalf("PrePull = %+v", s.PrePull)
	}
	if s.PrePullTimeout != 0 {
		t.Fatalf("a disabled phase lengthens t_rot by %s", s.PrePullTimeout)
	}
	spec.PrePull.Enabled = true
	if s, err = Resolve(spec); err != nil || !s.PrePull.Enabled || s.PrePullTimeout != 4*time.Minute {
		t.Fatalf("an enabled phase: %v, lengthens t_rot by %s, want its timeout 4m", err, s.PrePullTimeout)
	}
	// usePullSecrets is carried as asked: the controller honours it only
	// when installed to (observe.Observer.PullSecretsAllowed)
	spec.PrePull.UsePullSecrets = true
	if s, err = Resolve(spec); err != nil || !s.PrePull.UsePullSecrets {
		t.Fatalf("usePullSecrets: %v, %+v", err, s.PrePull)
	}
}
