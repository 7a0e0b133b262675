//go:build e2e

package e2e_test

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// atOnceSample is what an operator's kubectl would see of a pool at one
// instant: its placeholders, and its original claims being deleted.
type atOnceSample struct {
	at                     time.Time
	placeholders, deleting int
}

// atOnce samples a pool every second until end (issue #53: the bound
// maxUnavailable promises is on these two counts, whatever the anchors
// say). A sample whose list fails is skipped, not counted as zero.
type atOnce struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	samples []atOnceSample
}

func sampleAtOnce(ctx context.Context, pool string, originals []string) *atOnce {
	old := map[string]bool{}
	for _, n := range originals {
		old[n] = true
	}
	a := &atOnce{stop: make(chan struct{})}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-tick.C:
			}
			pods, claims := &corev1.PodList{}, &karpv1.NodeClaimList{}
			if kube.List(ctx, pods, client.InNamespace(fixtures.ControllerNamespace), client.MatchingLabels{v1alpha1.LabelNodePool: pool}) != nil ||
				kube.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}) != nil {
				continue
			}
			s := atOnceSample{at: time.Now()}
			for i := range pods.Items {
				if pods.Items[i].Labels[v1alpha1.LabelSurgeFor] != "" {
					s.placeholders++
				}
			}
			for i := range claims.Items {
				if c := &claims.Items[i]; old[c.Name] && c.DeletionTimestamp != nil {
					s.deleting++
				}
			}
			a.samples = append(a.samples, s)
		}
	}()
	return a
}

// end stops the sampling and returns the samples.
func (a *atOnce) end() []atOnceSample {
	close(a.stop)
	a.wg.Wait()
	return a.samples
}
