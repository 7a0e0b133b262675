package prepull

import (
	"path"

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
	NeedsSecrets Fate = "needsPullSecrets" // its Pod uses imagePullSecrets; usePullSecrets is off
	OverLimit    Fate = "overLimit"        // past maxImages
	Invalid      Fate = "invalidReference" // not an image reference the phase can pull
)

// Image is one distinct image of the Pods the drain moves.
type Image struct {
	// Ref is the normalized reference (docker.io/library/nginx:1.25), or
	// the spelling itself when it does not parse.
	Ref string
	// As is the reference as the Pod (Pod, namespace/name) spells it.
	As, Pod string
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
	var images []Image
	at := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if surge.StaysBehind(p, old) != surge.Moves {
			continue
		}
		secrets := secretNames(p)
		for _, spelled := range podImages(p) {
			ref, ok := normalize(spelled)
			img := Image{Ref: ref, As: spelled, Pod: p.Namespace + "/" + p.Name, Namespace: p.Namespace, Secrets: secrets}
			if !ok {
				img.Fate = Invalid
			}
			j, seen := at[img.Ref]
			switch {
			case !seen:
				at[img.Ref] = len(images)
				images = append(images, img)
			case len(images[j].Secrets) > 0 && len(secrets) == 0:
				images[j] = img // pullable without secrets after all
			}
		}
	}
	present := nodeImages(surgeNode)
	pulled := 0
	for i := range images {
		images[i].Fate = fate(images[i], present, o, &pulled)
	}
	return images
}

// fate decides one image; pulled counts the images given Pull so far.
func fate(img Image, present map[string]bool, o Options, pulled *int) Fate {
	switch {
	case img.Fate == Invalid:
		return Invalid
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

// podImages are p's init-container and container images, in spec order.
// Ephemeral containers are debugging sessions, not what the Pod needs to
// start again.
func podImages(p *corev1.Pod) []string {
	var out []string
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Image != "" {
				out = append(out, c.Image)
			}
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

// excluded: a glob matches the image as spelled or normalized.
func excluded(img Image, globs []string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, img.As); ok {
			return true
		}
		if ok, _ := path.Match(g, img.Ref); ok {
			return true
		}
	}
	return false
}
