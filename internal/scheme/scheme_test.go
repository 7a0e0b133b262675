package scheme

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKindsAreRegistered(t *testing.T) {
	s := newScheme(t)
	cases := []struct {
		obj  runtime.Object
		want schema.GroupVersionKind
	}{
		{&karpv1.NodePool{}, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}},
		{&karpv1.NodePoolList{}, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePoolList"}},
		{&karpv1.NodeClaim{}, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}},
		{&karpv1.NodeClaimList{}, schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaimList"}},
		{&v1alpha1.RotationPolicy{}, schema.GroupVersionKind{Group: "noderotation.io", Version: "v1alpha1", Kind: "RotationPolicy"}},
		{&v1alpha1.RotationPolicyList{}, schema.GroupVersionKind{Group: "noderotation.io", Version: "v1alpha1", Kind: "RotationPolicyList"}},
		{&corev1.Pod{}, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}},
		{&corev1.Node{}, schema.GroupVersionKind{Version: "v1", Kind: "Node"}},
		{&authorizationv1.SelfSubjectAccessReview{}, schema.GroupVersionKind{Group: "authorization.k8s.io", Version: "v1", Kind: "SelfSubjectAccessReview"}},
		{&schedulingv1.PriorityClass{}, schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}},
	}
	for _, c := range cases {
		kinds, _, err := s.ObjectKinds(c.obj)
		if err != nil || len(kinds) != 1 || kinds[0] != c.want {
			t.Errorf("%T: kinds %v, err %v; want %v", c.obj, kinds, err, c.want)
		}
	}
	if KarpenterV1 != (schema.GroupVersion{Group: "karpenter.sh", Version: "v1"}) {
		t.Errorf("KarpenterV1 = %v", KarpenterV1)
	}
	// Only v1 of Karpenter: v1beta1 is not the contract.
	if s.IsVersionRegistered(schema.GroupVersion{Group: "karpenter.sh", Version: "v1beta1"}) {
		t.Error("karpenter.sh/v1beta1 is registered")
	}
}

func TestListOptionsEncodeForKarpenter(t *testing.T) {
	// metav1.AddToGroupVersion lets a client send list options (a label
	// selector, a field selector) for karpenter.sh/v1 resources.
	codec := runtime.NewParameterCodec(newScheme(t))
	got, err := codec.EncodeParameters(&metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=general", ResourceVersion: "7"}, KarpenterV1)
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"labelSelector": {"karpenter.sh/nodepool=general"}, "resourceVersion": {"7"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parameters = %v, want %v", got, want)
	}
}

func TestDecodesManifests(t *testing.T) {
	decoder := serializer.NewCodecFactory(newScheme(t)).UniversalDeserializer()
	cases := []struct {
		manifest string
		check    func(runtime.Object) bool
	}{
		{"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: general}\nspec:\n  template:\n    spec:\n      expireAfter: 336h\n",
			func(o runtime.Object) bool {
				np, ok := o.(*karpv1.NodePool)
				return ok && np.Name == "general" && np.Spec.Template.Spec.ExpireAfter.Duration != nil && np.Spec.Template.Spec.ExpireAfter.Hours() == 336
			}},
		{"apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: general-a}\n",
			func(o runtime.Object) bool { nc, ok := o.(*karpv1.NodeClaim); return ok && nc.Name == "general-a" }},
		{"apiVersion: noderotation.io/v1alpha1\nkind: RotationPolicy\nmetadata: {name: api}\nspec:\n  minRotationChances: 3\n",
			func(o runtime.Object) bool {
				p, ok := o.(*v1alpha1.RotationPolicy)
				return ok && p.Name == "api" && p.Spec.MinRotationChances == 3
			}},
	}
	for _, c := range cases {
		obj, gvk, err := decoder.Decode([]byte(c.manifest), nil, nil)
		if err != nil || !c.check(obj) {
			t.Errorf("decoding %q: %T %v %v", c.manifest, obj, gvk, err)
		}
	}
	if _, _, err := decoder.Decode([]byte("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\n"), nil, nil); err == nil {
		t.Error("a karpenter.sh/v1beta1 NodePool decoded")
	}
}

func TestFakeClientRoundTrip(t *testing.T) {
	s := newScheme(t)
	c := fake.NewClientBuilder().WithScheme(s).Build()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", Labels: map[string]string{"workload": "api"}}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}},
		&v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "api"}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	pools := &karpv1.NodePoolList{}
	if err := c.List(ctx, pools, client.MatchingLabels{"workload": "api"}); err != nil || len(pools.Items) != 1 || pools.Items[0].Name != "general" {
		t.Errorf("listing NodePools: %v %v", pools.Items, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "api"}, &v1alpha1.RotationPolicy{}); err != nil {
		t.Errorf("getting the RotationPolicy: %v", err)
	}
}

func TestNewReturnsAFreshScheme(t *testing.T) {
	a, b := newScheme(t), newScheme(t)
	if a == b {
		t.Fatal("New returned the same scheme twice")
	}
	extra := schema.GroupVersion{Group: "example.com", Version: "v1"}
	a.AddKnownTypes(extra, &corev1.ConfigMap{})
	if b.IsVersionRegistered(extra) {
		t.Error("registering on one scheme changed the other")
	}
}
