// Package scheme builds the runtime.Scheme every client of this controller
// uses: the core Kubernetes types, Karpenter's karpenter.sh/v1 NodePool and
// NodeClaim (the API contract this controller is written against), and our
// own noderotation.io/v1alpha1 RotationPolicy.
package scheme

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// KarpenterV1 is the group/version whose nodepools and nodeclaims the
// controller reads and writes (the compatibility contract:
// docs/design.md#the-problem).
var KarpenterV1 = schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}

// New returns a fresh scheme with every type the controller handles.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding core types to scheme: %w", err)
	}
	s.AddKnownTypes(KarpenterV1, &karpv1.NodePool{}, &karpv1.NodePoolList{}, &karpv1.NodeClaim{}, &karpv1.NodeClaimList{})
	metav1.AddToGroupVersion(s, KarpenterV1)
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("adding noderotation.io types to scheme: %w", err)
	}
	return s, nil
}
