//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// The throughput benchmark (make bench-throughput, docs/performance.md
// "Several rotations of a pool at once on real Karpenter"; never in CI:
// label bench): the world of the e2e of several
// rotations at once — twelve 4-core nodes, 24 replicas of 1.5 cores behind
// a PDB of maxUnavailable 1 — rotated whole one at a time, then whole
// again four at a time, on the same cluster in one run. It reports each
// phase's wall time against the provision+drain floor Karpenter and kwok
// set (placeholder created → surge node Ready, plus the old claim's
// deletionTimestamp → gone), each rotation's overhead over its floor, and
// the controller's API requests and CPU per rotation. A measurement: it
// fails only when a phase does not rotate the pool.
var _ = Describe("throughput benchmark: a twelve-node pool one at a time, then four at a time", Label("bench"), Ordered, func() {
	ctx := context.Background()
	pool := fixtures.RotationPool("bench-throughput")
	pool.Spec.Limits[corev1.ResourceCPU] = resource.MustParse("80")
	// the pool's own budget lets four be disrupted at once, as the
	// four-at-a-time phase needs (Karpenter's default 10% of 12 is 2;
	// docs/design.md#disruption-budget)
	pool.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "4"}}
	s := newScenario("bench-throughput", pool, 24, 1)
	var (
		ctrl    *controller
		results []phaseResult
	)

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("bench")
		Eventually(func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ctrl.metricsPort))
			if err == nil {
				resp.Body.Close()
			}
			return err
		}).WithTimeout(time.Minute).Should(Succeed(), "the controller serves its metrics")
		s.govern(ctx, "720h", nil) // governed, paused: no node is that old
	})

	for _, n := range []int{1, 4} {
		It(fmt.Sprintf("rotates every node of the pool, %d at a time", n), func() {
			results = append(results, s.phase(ctx, ctrl, n))
		})
	}

	AfterAll(func() {
		report := benchReport(results)
		GinkgoWriter.Print(report)
		AddReportEntry("throughput", report)
		if path := os.Getenv("NRC_BENCH_REPORT"); path != "" {
			Expect(os.WriteFile(path, []byte(report), 0o644)).To(Succeed())
		}
	})
})

// phaseResult is one phase: n at a time over the pool's claims.
type phaseResult struct {
	n, rotations         int
	wall                 time.Duration
	floors, overheads    []time.Duration
	reads, writes, other float64 // API requests the controller sent
	cpu                  float64 // the controller's CPU seconds
}

// phase rotates every claim the pool has now, n at a time, and measures.
func (s *scenario) phase(ctx context.Context, ctrl *controller, n int) phaseResult {
	var claims []string
	for _, c := range claimsOf(ctx, s.name) {
		claims = append(claims, c.Name)
	}
	since := s.lastRV()
	reads0, writes0, other0 := ctrl.requests()
	cpu0 := cpuSeconds(ctrl.Pid())
	start := time.Now()
	// 45 s: the claims are all older, the surge nodes come due only after
	// the phase's own claims, which are older and so picked first
	s.updatePolicy(ctx, func(p *v1alpha1.RotationPolicy) {
		p.Spec.AgeThreshold = "45s"
		p.Spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt(n))
	})
	for _, name := range claims {
		Eventually(gone(ctx, name)).WithTimeout(20*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "NodeClaim %s rotated away", name)
	}
	wall := time.Since(start)
	reads1, writes1, other1 := ctrl.requests()
	cpu1 := cpuSeconds(ctrl.Pid())
	s.pause(ctx, 4*time.Minute)
	Eventually(func() int { return healthyPods(ctx, s.name, s.app) }).WithTimeout(2 * time.Minute).Should(Equal(int(s.replicas)))

	r := phaseResult{n: n, rotations: len(claims), wall: wall, reads: reads1 - reads0, writes: writes1 - writes0, other: other1 - other0, cpu: cpu1 - cpu0}
	rotations := rotationsOf(s.rec, s.name)
	for _, claim := range claims {
		rot := rotations[claim]
		Expect(rot).NotTo(BeNil(), "the rotation of %s recorded", claim)
		floor, ok := s.floorOf(claim, rot, since)
		Expect(ok).To(BeTrue(), "the floor of %s's rotation measured", claim)
		r.floors = append(r.floors, floor)
		r.overheads = append(r.overheads, s.seen(rot.endRV).Sub(s.seen(rot.startRV))-floor)
	}
	GinkgoWriter.Printf("%d at a time: %d claims in %s\n", n, len(claims), wall.Round(time.Second))
	return r
}

// floorOf is what Karpenter and kwok took for one rotation: its
// placeholder's creation to its surge node Ready, plus the old claim's
// deletionTimestamp to its removal, as the watch saw them.
func (s *scenario) floorOf(claim string, rot *rotation, since int64) (time.Duration, bool) {
	var placeholder time.Time
	for _, r := range s.rec.Sorted() {
		if r.RV > since && r.Kind == "Pod" && recorder.Added(r) && r.Obj.GetNamespace() == fixtures.ControllerNamespace &&
			r.Obj.GetLabels()[v1alpha1.LabelSurgeFor] == claim {
			placeholder = r.Seen
			break
		}
	}
	if placeholder.IsZero() || rot.surgeReadyRV == 0 || rot.drain == 0 {
		return 0, false
	}
	return s.seen(rot.surgeReadyRV).Sub(placeholder) + rot.drain, true
}

// seen is when the watch delivered the record of resourceVersion rv.
func (s *scenario) seen(rv int64) time.Time {
	for _, r := range s.rec.Sorted() {
		if r.RV == rv {
			return r.Seen
		}
	}
	return time.Time{}
}

func (s *scenario) lastRV() int64 {
	var rv int64
	for _, r := range s.rec.Sorted() {
		rv = max(rv, r.RV)
	}
	return rv
}

// requests are the API requests the controller has sent (client-go's
// rest_client_requests_total): reads (GET, lists and watches), writes
// (POST, PUT, PATCH, DELETE), anything else.
func (c *controller) requests() (reads, writes, other float64) {
	for method, v := range c.seriesSumBy("rest_client_requests_total", "method") {
		switch method {
		case "GET":
			reads += v
		case "POST", "PUT", "PATCH", "DELETE":
			writes += v
		default:
			other += v
		}
	}
	return reads, writes, other
}

// cpuSeconds is a process's user and system CPU from /proc/PID/stat
// (utime and stime, fields 14 and 15, in USER_HZ = 100 ticks a second).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	Expect(err).NotTo(HaveOccurred())
	// the command name may hold spaces: the fields after it are split
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	var utime, stime float64
	_, err = fmt.Sscan(fields[11]+" "+fields[12], &utime, &stime)
	Expect(err).NotTo(HaveOccurred())
	return (utime + stime) / 100
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// benchReport is the run's table: each phase against its floors, then the
// targets of issue #34.
func benchReport(rs []phaseResult) string {
	var b strings.Builder
	b.WriteString("\n| at a time | rotations | wall (s) | floor median (s) | wall / (waves × floor) | overhead median / max (s) | API reads / writes per rotation | controller CPU per rotation (s) |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		waves := (r.rotations + r.n - 1) / r.n
		floor := median(r.floors)
		per := float64(r.rotations)
		fmt.Fprintf(&b, "| %d | %d | %.1f | %.2f | %.2f (%d waves) | %.2f / %.2f | %.1f / %.1f | %.3f |\n",
			r.n, r.rotations, r.wall.Seconds(), floor.Seconds(), r.wall.Seconds()/(float64(waves)*floor.Seconds()), waves,
			median(r.overheads).Seconds(), slices.Max(r.overheads).Seconds(), r.reads/per, r.writes/per, r.cpu/per)
	}
	if len(rs) == 2 {
		fmt.Fprintf(&b, "\n%d at a time is %.2f× faster than %d at a time (whole-pool wall %.1f s against %.1f s)\n",
			rs[1].n, rs[0].wall.Seconds()/rs[1].wall.Seconds(), rs[0].n, rs[1].wall.Seconds(), rs[0].wall.Seconds())
	}
	return b.String()
}

// seriesSumBy sums the series of name on the controller's metrics
// endpoint by the value of one label.
func (c *controller) seriesSumBy(name, label string) map[string]float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		_, rest, ok := strings.Cut(line, label+`="`)
		if !ok {
			continue
		}
		value, _, _ := strings.Cut(rest, `"`)
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[value] += v
		}
	}
	return out
}
