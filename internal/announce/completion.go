package announce

import (
	"strings"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// surgeHostAtCompletion is the node the unfreeze step of this pass released
// (the old node is gone by completion, so it is the surge host).
func surgeHostAtCompletion(p *actions.Pass) string {
	res, ok := p.Last("unfreeze")
	if !ok {
		return ""
	}
	nodes := strings.Fields(res.Values["nodes"])
	if len(nodes) == 0 {
		return ""
	}
	return nodes[0]
}

func claimOnNode(o *observe.Observation, node string) *karpv1.NodeClaim {
	for i := range o.Claims {
		if o.Claims[i].Status.NodeName == node {
			return &o.Claims[i]
		}
	}
	return nil
}
