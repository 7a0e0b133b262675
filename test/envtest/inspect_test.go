package envtest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/inspect/inspecttest"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// agedReader serves the API server's objects, with each scripted
// NodeClaim's creation time put back: the API server sets
// creationTimestamp itself, and the scripted ages are what make claims due,
// in backoff or not due at the scripted instant. Everything else — the
// lists, the label and field selectors, the Gets — is the API server's.
type agedReader struct {
	client.Reader
	created map[string]metav1.Time
}

func (r agedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if c, ok := obj.(*karpv1.NodeClaim); ok {
		r.age(c)
	}
	return nil
}

func (r agedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*karpv1.NodeClaimList); ok {
		for i := range l.Items {
			r.age(&l.Items[i])
		}
	}
	return nil
}

func (r agedReader) age(c *karpv1.NodeClaim) {
	if t, ok := r.created[c.Name]; ok {
		c.CreationTimestamp = t
	}
}

// The unit tests of internal/inspect read the scripted cluster from a fake
// client; here the same objects live in a real API server and what status
// and explain print must be byte for byte the same golden files.
var _ = Describe("rotationctl status and explain on a real API server", Ordered, func() {
	var in *inspect.Inspector
	goldenDir := filepath.Join("..", "..", "internal", "inspect", "testdata")

	BeforeAll(func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inspecttest.Namespace}}
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		for _, o := range inspecttest.Scripted() {
			createWithStatus(ctx, o)
		}
		eng, err := table.Load()
		Expect(err).NotTo(HaveOccurred())
		in = &inspect.Inspector{
			Reader: agedReader{Reader: env.Client, created: inspecttest.CreationTimestamps()},
			Engine: eng, Namespace: inspecttest.Namespace, Clock: func() time.Time { return inspecttest.Now },
		}
		DeferCleanup(func(ctx SpecContext) {
			for _, o := range inspecttest.Scripted() {
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(Succeed())
			}
		})
	})

	It("prints every pool's status as the golden files have it, in every format", func(ctx SpecContext) {
		// other specs' pools share this API server: only the scripted ones
		var rows []*inspect.PoolStatus
		for _, n := range inspecttest.Pools() {
			st, err := in.Status(ctx, n)
			Expect(err).NotTo(HaveOccurred())
			rows = append(rows, st)
		}
		for _, format := range inspect.Formats {
			var b bytes.Buffer
			Expect(inspect.RenderStatus(&b, rows, format)).To(Succeed())
			expectGolden(filepath.Join(goldenDir, "status."+format), b.String())
		}
	})

	It("explains each scripted claim and pool as the golden files have it", func(ctx SpecContext) {
		var claims bytes.Buffer
		for _, name := range inspecttest.ExplainedClaims {
			ex, err := in.ExplainClaim(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			claims.WriteString("$ rotationctl explain nodeclaim/" + name + "\n")
			Expect(inspect.RenderClaim(&claims, ex, "table")).To(Succeed())
			claims.WriteString("\n")
		}
		expectGolden(filepath.Join(goldenDir, "explain-claims.table"), claims.String())
		var pools bytes.Buffer
		for _, name := range inspecttest.ExplainedPools {
			ex, err := in.ExplainPool(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			pools.WriteString("$ rotationctl explain nodepool/" + name + "\n")
			Expect(inspect.RenderPool(&pools, ex, "table")).To(Succeed())
			pools.WriteString("\n")
		}
		expectGolden(filepath.Join(goldenDir, "explain-pools.table"), pools.String())
	})
})

func expectGolden(path, got string) {
	GinkgoHelper()
	want, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(got).To(Equal(string(want)), "the real API server's view differs from %s", path)
}

// createWithStatus creates o and then writes the status it carries (the
// API server drops a status sent with a create).
func createWithStatus(ctx context.Context, o client.Object) {
	GinkgoHelper()
	withStatus := o.DeepCopyObject().(client.Object)
	Expect(env.Client.Create(ctx, o)).To(Succeed())
	switch s := withStatus.(type) {
	case *karpv1.NodeClaim:
		o.(*karpv1.NodeClaim).Status = s.Status
	case *corev1.Node:
		o.(*corev1.Node).Status = s.Status
	case *v1alpha1.RotationPolicy:
		if len(s.Status.Conditions) == 0 {
			return
		}
		o.(*v1alpha1.RotationPolicy).Status = s.Status
	default:
		return
	}
	Expect(env.Client.Status().Update(ctx, o)).To(Succeed())
}
