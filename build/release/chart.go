package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
)

// chartDir is the chart in the checkout.
const chartDir = "charts/node-rotation-controller"

// digestLine is values.yaml's image.digest, empty in the source chart.
const digestLine = `  digest: ""`

// packageChart packages a copy of the chart with the image index's digest
// pinned in values.yaml (image.digest), its version and appVersion the
// release's, through the Helm SDK's own `helm package` with
// SOURCE_DATE_EPOCH's time on every entry, so it is reproducible.
func packageChart(c config, created time.Time, m *manifest) error {
	tmp, err := os.MkdirTemp("", "nrc-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(c.repoRoot, chartDir)
	dst := filepath.Join(tmp, filepath.Base(chartDir))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return fmt.Errorf("copying the chart: %w", err)
	}
	values := filepath.Join(dst, "values.yaml")
	raw, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	if n := bytes.Count(raw, []byte("\n"+digestLine)); n != 1 {
		return fmt.Errorf("values.yaml has %d lines %q, want the source chart's one", n, digestLine)
	}
	pinned := strings.Replace(string(raw), "\n"+digestLine, "\n  digest: "+m.Image.Index, 1)
	if err := os.WriteFile(values, []byte(pinned), 0o644); err != nil {
		return err
	}
	p := action.NewPackage()
	p.Version, p.AppVersion, p.Destination = c.version, c.version, c.dist
	epoch := created.UTC()
	p.SourceDateEpoch = &epoch
	path, err := p.Run(dst, nil)
	if err != nil {
		return fmt.Errorf("helm package: %w", err)
	}
	return m.add(c.dist, filepath.Base(path), "chart", "", "")
}

// crdsName is the CRDs as one file, for `kubectl apply --server-side -f URL`.
func crdsName(version string) string { return "node-rotation-controller-crds_" + version + ".yaml" }

// writeCRDs concatenates the chart's crds/ into one multi-document file.
func writeCRDs(c config, m *manifest) error {
	dir := filepath.Join(c.repoRoot, chartDir, "crds")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	name := crdsName(c.version)
	if err := os.WriteFile(filepath.Join(c.dist, name), out.Bytes(), 0o644); err != nil {
		return err
	}
	return m.add(c.dist, name, "crds", "", "")
}
