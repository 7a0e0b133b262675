package policy

import (
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// The pre-pull defaults and bound (docs/policy.md).
const (
	DefaultPrePullTimeout   = 10 * time.Minute
	DefaultPrePullMaxImages = 20
	MaxPrePullImages        = 100
)

// PrePull is spec.prePull parsed (docs/design.md#pre-pull).
type PrePull struct {
	Enabled        bool
	Timeout        time.Duration
	MaxImages      int
	Exclude        []string
	UsePullSecrets bool
}

// prePull parses spec.prePull. Admission checks more (the globs' count,
// length and uniqueness) but not the globs' syntax, which only path.Match
// knows: a bad glob is reported here, naming its index, and turns the
// policy Invalid.
func prePull(in v1alpha1.PrePullSpec) (PrePull, error) {
	var errs []error
	p := PrePull{Enabled: in.Enabled, MaxImages: int(in.MaxImages), Exclude: in.ExcludeImages, UsePullSecrets: in.UsePullSecrets}
	var err error
	p.Timeout, err = positiveOr("spec.prePull.timeout", in.Timeout, DefaultPrePullTimeout)
	errs = append(errs, err)
	switch {
	case p.MaxImages == 0:
		p.MaxImages = DefaultPrePullMaxImages
	case p.MaxImages < 1 || p.MaxImages > MaxPrePullImages:
		errs = append(errs, fmt.Errorf("spec.prePull.maxImages: %d is outside 1 to %d", p.MaxImages, MaxPrePullImages))
	}
	for i, g := range p.Exclude {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs = append(errs, fmt.Errorf("spec.prePull.excludeImages[%d]: %q is not a glob (path.Match syntax, e.g. registry.internal/*/*)", i, g))
		}
	}
	return p, errors.Join(errs...)
}

// InWindow is what the phase adds to a rotation at most: its timeout when
// enabled, else nothing.
func (p PrePull) InWindow() time.Duration {
	if !p.Enabled {
		return 0
	}
	return p.Timeout
}
