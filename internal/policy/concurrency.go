package policy

import (
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// DefaultMaxUnavailableCap bounds maxUnavailable "auto" when the policy
// sets no cap: a tenth of the pool, as AKS surges and Karpenter's own
// default disruption budget.
var DefaultMaxUnavailableCap = schedule.Amount{Percent: 10}

// percent is the CRD's percentage: 1% to 100%.
var percent = regexp.MustCompile(`^([1-9][0-9]?|100)%$`)

// concurrency parses spec.surge.maxUnavailable and maxUnavailableCap.
// Admission checks the same (the CRD's rules); an error here is a policy
// stored before the rules existed, or a file given to rotationctl.
func concurrency(value, limit *intstr.IntOrString) (schedule.Concurrency, error) {
	var c schedule.Concurrency
	var err error
	switch {
	case value == nil || value.Type == intstr.String && value.StrVal == "auto":
		// absent is the CRD's default, auto (a file given to rotationctl
		// is defaulted as admission defaults it; this is the same)
		c.Auto = true
	default:
		c.Amount, err = amount("spec.surge.maxUnavailable", value, `, or "auto"`)
	}
	if err != nil {
		return c, err
	}
	c.Cap = DefaultMaxUnavailableCap
	if limit != nil {
		c.Cap, err = amount("spec.surge.maxUnavailableCap", limit, "")
	}
	return c, err
}

func amount(field string, v *intstr.IntOrString, or string) (schedule.Amount, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return schedule.Amount{}, fmt.Errorf("%s: %d must be at least 1", field, v.IntVal)
		}
		return schedule.Amount{Count: int(v.IntVal)}, nil
	}
	if !percent.MatchString(v.StrVal) {
		return schedule.Amount{}, fmt.Errorf("%s: %q must be an integer of at least 1, a percentage from 1%% to 100%% such as \"10%%\"%s", field, v.StrVal, or)
	}
	p, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return schedule.Amount{Percent: p}, nil
}
