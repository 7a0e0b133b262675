//go:build e2e

package identity_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// viewer is the user --as impersonates: bound to cluster-admin by the
// test, as an operator's own identity would be bound to what status reads.
const viewer = "nrc-identity-viewer"

// plugin is rotationctl installed as a kubectl plugin would be: built as a
// release builds it (the VERSION stamp) as kubectl-noderotation, with its
// completion script, in a directory on the PATH kubectl is run with.
type plugin struct {
	path       string // PATH for kubectl: the plugin's directory, then the cluster's binaries
	kubectlBin string
	version    string
}

func (w *world) installPlugin(t *testing.T) plugin {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	must(t, err, "VERSION")
	version := strings.TrimSpace(string(raw))
	dir := t.TempDir()
	build := exec.Command("go", "build", "-ldflags", "-X github.com/noderotation/node-rotation-controller/internal/version.stamped="+version,
		"-o", filepath.Join(dir, "kubectl-noderotation"), "./cmd/rotationctl")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	must(t, err, "building kubectl-noderotation: "+string(out))
	script, err := os.ReadFile(filepath.Join(repoRoot, "cmd", "rotationctl", "kubectl_complete-noderotation"))
	must(t, err, "the completion script")
	must(t, os.WriteFile(filepath.Join(dir, "kubectl_complete-noderotation"), script, 0o755), "installing the completion script")
	bin := w.testbin(t)
	return plugin{path: dir + string(os.PathListSeparator) + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		kubectlBin: filepath.Join(bin, "kubectl"), version: version}
}

// kubectl runs the cluster's kubectl with args and the plugin's PATH, on
// which kubectl looks its plugins up.
func (p plugin) kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(p.kubectlBin, args...)
	cmd.Env = append(os.Environ(), "PATH="+p.path)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// expectPlugin: kubectl finds the plugin on the PATH; its version names
// the installed controller (the chart's label, the image by digest); its
// status honours kubectl's --context (the kubeconfig's current context is
// a dead server) and --as (an identity without rights is refused, one
// bound to cluster-admin reads the pool); kubectl completes its
// arguments through kubectl_complete-noderotation.
func (w *world) expectPlugin(t *testing.T) {
	t.Helper()
	p := w.installPlugin(t)
	out, err := p.kubectl(t, "noderotation", "version", "--kubeconfig", w.kubecfg, "--controller-namespace", namespace)
	must(t, err, "kubectl noderotation version: "+out)
	want := regexp.MustCompile(`^Client: rotationctl ` + regexp.QuoteMeta(p.version) + ` \(go.*\)\nController: ` + regexp.QuoteMeta(p.version) +
		` \(Deployment ` + namespace + `/` + release + `, image \S+:` + regexp.QuoteMeta(p.version) + `@` + imageDigest + `\)\n$`)
	if !want.MatchString(out) {
		t.Errorf("kubectl noderotation version printed\n%s\nwant it to match %s", out, want)
	}

	kc := w.twoContexts(t)
	must(t, w.admin.Create(w.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: viewer},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: viewer}}}), "binding the viewer")
	t.Cleanup(func() {
		_ = w.admin.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: viewer}})
	})
	status := []string{"noderotation", "status", pool, "--kubeconfig", kc, "--context", "good", "--controller-namespace", namespace, "--request-timeout", "20s"}
	out, err = p.kubectl(t, append(status, "--as", viewer, "-o", "custom-columns=POOL:.nodePool,POLICY:.policy")...)
	if err != nil || !regexp.MustCompile(`(?m)^POOL\s+POLICY\n`+pool+`\s+`+pool+`\n$`).MatchString(out) {
		t.Errorf("kubectl noderotation status --context good --as %s: %v\n%s", viewer, err, out)
	}
	out, err = p.kubectl(t, append(status, "--as", "nrc-identity-nobody")...)
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("kubectl noderotation status --as an identity without rights: %v\n%s", err, out)
	}
	// Without --context the kubeconfig's current one, a dead server: one line.
	out, err = p.kubectl(t, "noderotation", "status", "--kubeconfig", kc)
	if err == nil || !strings.HasPrefix(out, "rotationctl: cannot reach the cluster at https://127.0.0.1:1 (kubeconfig "+kc+", context broken): ") ||
		strings.Count(out, "\n") != 1 {
		t.Errorf("kubectl noderotation status on the broken context: %v\n%s", err, out)
	}

	out, err = p.kubectl(t, "__complete", "noderotation", "explain", "--kubeconfig", w.kubecfg, "nodepool/"+pool[:3])
	if err != nil || !strings.Contains(out, "nodepool/"+pool+"\n") {
		t.Errorf("kubectl __complete noderotation explain nodepool/%s: %v\n%s", pool[:3], err, out)
	}
	t.Logf("kubectl noderotation: version, status with --context and --as, completion: as expected")
}

// twoContexts writes a kubeconfig whose current context, broken, points at
// a port nothing listens on, and whose context good is the admin's.
func (w *world) twoContexts(t *testing.T) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(w.kubecfg)
	must(t, err, "the admin kubeconfig")
	good := admin.Contexts[admin.CurrentContext]
	kc := clientcmdapi.NewConfig()
	kc.Clusters["good"] = admin.Clusters[good.Cluster]
	kc.AuthInfos["admin"] = admin.AuthInfos[good.AuthInfo]
	kc.Clusters["broken"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	kc.Contexts["good"] = &clientcmdapi.Context{Cluster: "good", AuthInfo: "admin"}
	kc.Contexts["broken"] = &clientcmdapi.Context{Cluster: "broken", AuthInfo: "admin"}
	kc.CurrentContext = "broken"
	path := filepath.Join(t.TempDir(), "two-contexts.kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path), "writing the two-context kubeconfig")
	return path
}
