//go:build e2e

package identity_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helmConfig is the Helm SDK's view of the local cluster, as `helm
// --kubeconfig $KUBECONFIG -n nrc-identity` has.
func (w *world) helmConfig(t *testing.T) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(w.kubecfg)
	flags.Namespace = ptr.To(namespace)
	cfg := action.NewConfiguration()
	must(t, cfg.Init(flags, namespace, "secret"), "initialising the Helm SDK")
	return cfg
}

// helmInstall runs `helm install nrc-identity node-rotation-controller-<V>.tgz
// -n nrc-identity --create-namespace --server-side=<serverSide>` of the
// packaged chart (`helm package`, the Helm SDK's own, as make release
// packages it) with the identity values.
func (w *world) helmInstall(t *testing.T, serverSide bool) {
	t.Helper()
	pkg := action.NewPackage()
	pkg.Destination = t.TempDir()
	archive, err := pkg.Run("../../../charts/node-rotation-controller", nil)
	must(t, err, "helm package")
	chrt, err := loader.Load(archive)
	must(t, err, "loading the packaged chart "+archive)
	install := action.NewInstall(w.helmConfig(t))
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
	install.Timeout = 2 * time.Minute
	// `helm install` without --wait: hooks only (the chart has none)
	install.WaitStrategy = kube.HookOnlyStrategy
	install.ServerSideApply = serverSide
	vals := map[string]any{"placeholderPriorityClass": map[string]any{"name": priorityClass}, "image": map[string]any{"digest": imageDigest},
		"metrics": map[string]any{"certSecret": metricsCertSecret}}
	out, err := install.RunWithContext(w.ctx, chrt, vals)
	must(t, err, fmt.Sprintf("helm install --server-side=%v", serverSide))
	rel, ok := out.(*releasev1.Release)
	if !ok {
		t.Fatalf("helm install returned a %T, not a v1 release", out)
	}
	t.Logf("helm install --server-side=%v: release %s revision %d, status %s", serverSide, rel.Name, rel.Version, rel.Info.Status)
}

// reinstallServerSide: the chart README's word to a Helm v4 user ("Helm 4
// and an existing CRD") holds — once the chart's CRD is the one in the
// cluster, applied first with kubectl as upgradeCRDs does, Helm v4's
// default install, which applies crds/ server-side, succeeds over it:
// the release is uninstalled (helm keeps the CRD) and installed again so.
func (w *world) reinstallServerSide(t *testing.T) {
	t.Helper()
	if !w.hasField(t) {
		t.Fatal("the CRD in the cluster is not the chart's: upgradeCRDs first")
	}
	uninstall := action.NewUninstall(w.helmConfig(t))
	uninstall.WaitStrategy = kube.StatusWatcherStrategy
	uninstall.Timeout = 2 * time.Minute
	_, err := uninstall.Run(release)
	must(t, err, "helm uninstall before the server-side install")
	w.helmInstall(t, true)
	w.deployment(t)
}

// imageDigest is the digest the install pins (image.digest), as a user
// installing a release by digest would.
const imageDigest = "sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// installChart installs the chart as a user installs a release: packaged
// first (`helm package`, the Helm SDK's own, as make release packages
// it), then `helm install nrc-identity node-rotation-controller-<V>.tgz
// -n nrc-identity --create-namespace` with the placeholder PriorityClass
// renamed, the image pinned by digest and a mounted metrics certificate;
// it uninstalls it at the end. It returns the ServiceAccount the chart's
// Deployment runs as.
func (w *world) installChart(t *testing.T) string {
	t.Helper()
	// --server-side=false: objects created, an existing CRD left as it is,
	// as Helm v3 installs. Helm v4's default, server-side apply, applies the
	// chart's CRD over the older one and fails on the conflict with its
	// field manager (seen here, 2026-12-05: "Apply failed with 1 conflict:
	// conflict with \"identity.test\" ... .spec.versions"); the chart's
	// README says what a Helm v4 user does about it, and
	// reinstallServerSide holds it to that.
	w.helmInstall(t, false)
	t.Cleanup(func() {
		uninstall := action.NewUninstall(w.helmConfig(t))
		uninstall.WaitStrategy = kube.HookOnlyStrategy
		if _, err := uninstall.Run(release); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
		// helm uninstall leaves the namespace it created, and in it the
		// Lease: a later run on this cluster must create its own.
		_ = w.admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	})
	// An earlier run's Lease (its namespace still terminating, or kept):
	// this run's controller must create the Lease itself.
	_ = w.admin.Delete(w.ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "node-rotation-controller"}})
	d := w.deployment(t)
	if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, "@"+imageDigest) {
		t.Errorf("image.digest: the Deployment runs %s, want it pinned by @%s", img, imageDigest)
	}
	return d.Spec.Template.Spec.ServiceAccountName
}

func (w *world) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	list := &appsv1.DeploymentList{}
	must(t, w.admin.List(w.ctx, list, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/instance": release}), "listing the release's Deployments")
	if len(list.Items) != 1 {
		t.Fatalf("want the release's one Deployment, found %d", len(list.Items))
	}
	return &list.Items[0]
}

// deploymentArgs are the controller container's arguments as the chart
// rendered them into the cluster.
func (w *world) deploymentArgs(t *testing.T) []string {
	t.Helper()
	for _, c := range w.deployment(t).Spec.Template.Spec.Containers {
		if c.Name == "controller" || len(w.deployment(t).Spec.Template.Spec.Containers) == 1 {
			return c.Args
		}
	}
	t.Fatalf("the Deployment has no controller container")
	return nil
}

// tokenKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount sa with a bound token from the TokenRequest API, as a Pod
// of the Deployment would.
func (w *world) tokenKubeconfig(t *testing.T, sa string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(w.config)
	must(t, err, "clientset")
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(w.ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	must(t, err, "requesting a token for ServiceAccount "+sa)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: w.config.Host, CertificateAuthority: w.config.CAFile, CertificateAuthorityData: w.config.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: sa, Namespace: namespace}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "serviceaccount.kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path), "writing the ServiceAccount kubeconfig")
	return path
}

// expectLeaseReleased: a controller stopped with SIGTERM gives its Lease
// up (LeaderElectionReleaseOnCancel), so a new replica leads at once
// instead of waiting out the lease duration.
func (w *world) expectLeaseReleased(t *testing.T) {
	t.Helper()
	l := &coordinationv1.Lease{}
	must(t, w.admin.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "node-rotation-controller"}, l), "reading the leader-election Lease")
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
		t.Errorf("the Lease is still held by %q after a clean stop", h)
	}
}
