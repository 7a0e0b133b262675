package prepull

import (
	"path"
	"slices"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// Options are spec.prePull's selection settings, parsed.
type Options struct {
	MaxImages      int
	Exclude        []string // path.Match globs; the policy validated them
	UsePullSecrets bool
}

// Fate is what the phase does with one image.
type Fate string

const (
	Pull         Fate = "pull"
	Present      Fate = "present"          // the surge node reports it in status.images
	Excluded     Fate = "excluded"         // an excludeImages glob matches it
	NeverPulled  Fate = "pullPolicyNever"  // its Pod never pulls it: side-loaded, or nowhere to pull from
	NeedsSecrets Fate = "needsPullSecrets" // its Pod uses imagePullSecrets; usePullSecrets is off
	OverLimit    Fate = "overLimit"        // past maxImages
	Invalid      Fate = "invalidReference" // not an image reference the phase can pull
)

// Image is one distinct image of the Pods the drain moves.
type Image struct {
	// Ref is the normalized reference (docker.io/library/nginx:1.25), or
	// the spelling itself when it does not parse.
	Ref string
	// As is the reference as the Pod (Pod, namespace/name) spells it;
	// Spellings every way the moving Pods spell it, As first.
	As, Pod   string
	Spellings []string
	// Secrets are the Pod's imagePullSecrets, in Namespace. An image that
	// several Pods run is credited to the first that needs no secrets.
	Namespace string
	Secrets   []string
	Fate      Fate
}

// Select gives every distinct image of pods (the old node's, in a stable
// order) its fate. old is the old node (nil: nothing counts as pinned);
// surgeNode the surge node, whose status.images are already there.
func Select(pods []corev1.Pod, old, surgeNode *corev1.Node, o Options) []Image {
	images := collect(pods, old)
	present := nodeImages(surgeNode)
	pulled := 0
	for i := range images {
		images[i].Fate = fate(images[i], present, o, &pulled)
	}
	return images
}

// collect lists the distinct images of the Pods the drain moves, by
// normalized reference in first-use order, with what only their uses can
// say: unparsable, or never pulled by any of its Pods.
func collect(pods []corev1.Pod, old *corev1.Node) []Image {
	var images []Image
	at := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if surge.StaysBehind(p, old) != surge.Moves {
			continue
		}
		secrets := secretNames(p)
		for _, u := range podImages(p) {
			ref, ok := normalize(u.spelled)
			img := Image{Ref: ref, As: u.spelled, Spellings: []string{u.spelled}, Pod: p.Namespace + "/" + p.Name, Namespace: p.Namespace, Secrets: secrets}
			switch {
			case !ok:
				img.Fate = Invalid
			case u.never:
				img.Fate = NeverPulled
			}
			j, seen := at[img.Ref]
			if !seen {
				at[img.Ref] = len(images)
				images = append(images, img)
				continue
			}
			if len(images[j].Secrets) > 0 && len(secrets) == 0 {
				img.Spellings = images[j].Spellings
				images[j] = img // pullable without secrets after all
			}
			if images[j].Fate == NeverPulled && img.Fate == "" {
				images[j].Fate = "" // another Pod pulls it
			}
			if !slices.Contains(images[j].Spellings, u.spelled) {
				images[j].Spellings = append(images[j].Spellings, u.spelled)
			}
		}
	}
	return images
}

// fate decides one image; pulled counts the images given Pull so far.
func fate(img Image, present map[string]bool, o Options, pulled *int) Fate {
	switch {
	case img.Fate == Invalid || img.Fate == NeverPulled:
		return img.Fate
	case present[img.Ref]:
		return Present
	case excluded(img, o.Exclude):
		return Excluded
	case len(img.Secrets) > 0 && !o.UsePullSecrets:
		return NeedsSecrets
	case *pulled >= o.MaxImages:
		return OverLimit
	}
	*pulled++
	return Pull
}

// Count is how many of images have fate f.
func Count(images []Image, f Fate) int {
	n := 0
	for _, img := range images {
		if img.Fate == f {
			n++
		}
	}
	return n
}

// imageUse is one image a Pod needs to start: a container's (never: its
// imagePullPolicy is Never) or an image volume's.
type imageUse struct {
	spelled string
	never   bool
}

// podImages are the images p needs to start, in spec order: its
// init-container and container images, then its image volumes'.
// Ephemeral containers are debugging sessions, not what the Pod needs to
// start again.
func podImages(p *corev1.Pod) []imageUse {
	var out []imageUse
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Image != "" {
				out = append(out, imageUse{spelled: c.Image, never: c.ImagePullPolicy == corev1.PullNever})
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Image != nil && v.Image.Reference != "" {
			out = append(out, imageUse{spelled: v.Image.Reference, never: v.Image.PullPolicy == corev1.PullNever})
		}
	}
	return out
}

func secretNames(p *corev1.Pod) []string {
	var out []string
	for _, s := range p.Spec.ImagePullSecrets {
		if s.Name != "" {
			out = append(out, s.Name)
		}
	}
	return out
}

// nodeImages is the set of normalized references a node reports holding.
func nodeImages(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	if n == nil {
		return out
	}
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			if ref, ok := normalize(name); ok {
				out[ref] = true
			}
		}
	}
	return out
}

// normalize is the reference as the container runtime records it (the
// kubelet's own parsing: docker.io/library/ for a bare name, :latest for
// no tag, the digest alone when both are given); the spelling itself and
// false when it does not parse.
func normalize(spelled string) (string, bool) {
	named, err := reference.ParseDockerRef(spelled)
	if err != nil {
		return spelled, false
	}
	return named.String(), true
}

// excluded: a glob matches the image normalized or as any moving Pod
// spells it — so the fate does not depend on which Pod came first.
func excluded(img Image, globs []string) bool {
	for _, g := range globs {
		for _, name := range append([]string{img.Ref}, img.Spellings...) {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
	}
	return false
}
