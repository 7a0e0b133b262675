package admission

import (
	"strings"
	"testing"
)

func policy(spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "noderotation.io/v1alpha1", "kind": "RotationPolicy", "metadata": map[string]any{"name": "p"}, "spec": spec}
}

func window() []any {
	return []any{map[string]any{"timezone": "UTC", "days": []any{"Sat"}, "start": "02:00", "end": "06:00"}}
}

// The CRD's defaults apply to an admitted policy; what the CRD refuses is
// refused with the API server's wording.
func TestAdmit(t *testing.T) {
	got, err := Admit(policy(map[string]any{"maintenanceWindows": window()}))
	if err != nil {
		t.Fatal(err)
	}
	spec := got["spec"].(map[string]any)
	if spec["minRotationChances"] != int64(2) || spec["ageThreshold"] != "auto" {
		t.Errorf("defaults not applied: %v", spec)
	}
	for _, c := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"a version the CRD does not serve", func() map[string]any {
			p := policy(map[string]any{"maintenanceWindows": window()})
			p["apiVersion"] = "noderotation.io/v1"
			return p
		}(), `no matches for kind "RotationPolicy" in version "noderotation.io/v1"`},
		{"the schema's minimum", policy(map[string]any{"maintenanceWindows": window(), "minRotationChances": 0}),
			`RotationPolicy.noderotation.io "p" is invalid: spec.minRotationChances: Invalid value: 0: spec.minRotationChances in body should be greater than or equal to 1`},
		{"a CEL rule", policy(map[string]any{"maintenanceWindows": window(), "surge": map[string]any{"maxUnavailable": "150%"}}),
			`spec.surge.maxUnavailable: Invalid value: "150%": maxUnavailable must be an integer of at least 1`},
		{"an unknown field", policy(map[string]any{"maintenanceWindows": window(), "window": 1}), `strict decoding error: unknown field "spec.window"`},
		{"a required field", policy(map[string]any{}), "spec.maintenanceWindows: Required value"},
		{"an unknown metadata field", func() map[string]any {
			p := policy(map[string]any{"maintenanceWindows": window(), "window": 1})
			p["metadata"].(map[string]any)["labelz"] = map[string]any{"a": "b"}
			return p
		}(), `strict decoding error: unknown field "metadata.labelz", unknown field "spec.window"`},
	} {
		if _, err := Admit(c.obj); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
