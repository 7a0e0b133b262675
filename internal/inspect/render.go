package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Formats are the output formats of status and explain.
var Formats = []string{"table", "wide", "json", "yaml"}

// encode writes v as json or yaml; false when format is neither.
func encode(w io.Writer, v any, format string) (bool, error) {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, fmt.Errorf("rendering yaml: %w", err)
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}

// CheckFormat reports an unknown output format.
func CheckFormat(format string) error {
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
}

// RenderStatus writes one row per pool; a pool that cannot be decided gets
// a line below the table saying why.
func RenderStatus(w io.Writer, pools []*PoolStatus, format string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if ok, err := encode(w, pools, format); ok {
		return err
	}
	wide := format == "wide"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "NODEPOOL\tPOLICY\tWINDOW\tGATE\tIN-FLIGHT\tCAND/BACKOFF/NOT-DUE\tNEXT\tFORECAST\tEXPIRED-7D"
	if wide {
		head += "\tPOLICY-READY\tCLAIMS\tROTATION\tWINDOW-MACHINE\tSURGE-NODE"
	}
	fmt.Fprintln(tw, head)
	var problems []string
	for _, p := range pools {
		row := []string{p.NodePool, policyCell(p), windowCell(p, wide), gateCell(p), inFlightCell(p),
			fmt.Sprintf("%d/%d/%d", p.Census.Candidates, p.Census.InBackoff, p.Census.NotDue), nextCell(p), forecastCell(p), fmt.Sprint(p.ExpiredUnrotated)}
		if wide {
			rotation, surge := wideRotationCells(p)
			row = append(row, orDash(p.PolicyReady), fmt.Sprint(p.Census.Total), rotation, orDash(p.Transitions[windowMachine]), surge)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		if p.Problem != "" {
			problems = append(problems, p.NodePool+": "+p.Problem)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	return nil
}

func policyCell(p *PoolStatus) string {
	var s string
	switch p.Governance {
	case governed:
		s = p.Policy
	case conflict:
		s = "conflict: " + strings.Join(p.Conflict, ",")
	case invalid:
		s = "invalid: " + p.Policy
	default:
		return "<none>"
	}
	switch {
	case p.Governance == governed && !p.Feasible:
		s += " (infeasible)"
	case p.Governance == governed && p.Coverage != nil && !p.Coverage.Covered:
		s += " (uncovered)"
	}
	return s
}

func windowCell(p *PoolStatus, wide bool) string {
	w := p.Window
	switch {
	case w == nil:
		return "-"
	case w.Open && w.Closes.IsZero():
		return "open 24/7"
	case w.Open && wide && w.Next != nil:
		return "open, closes " + when(p.Now, w.Closes, w.Zone, wide) + "; next " + w.Next.String()
	case w.Open:
		return "open, closes " + when(p.Now, w.Closes, w.Zone, wide)
	case w.NextOpen.IsZero():
		return "never opens"
	}
	return "closed, opens " + when(p.Now, w.NextOpen, w.Zone, wide)
}

// when is an instant relative to now ("in 2d3h"); wide adds the wall time
// in the window's zone ("Sat 02:00 Europe/Berlin, in 2d3h").
func when(now, t time.Time, zone string, wide bool) string {
	rel := relative(now, t)
	if !wide || zone == "" {
		return rel
	}
	if loc, err := time.LoadLocation(zone); err == nil {
		t = t.In(loc)
	}
	return t.Format("Mon 15:04 ") + zone + ", " + rel
}

// holds are the idle transitions that start nothing whatever the gates
// say, in the words of the GATE column.
var holds = map[string]string{
	engine.UsesTransition("idle.static-pool"):           "static pool",
	engine.UsesTransition("idle.infeasible"):            "infeasible",
	engine.UsesTransition("idle.insufficient-headroom"): "no headroom",
	repairStranded: "repairing stranded",
	readopt:        "re-adopting",
}

func gateCell(p *PoolStatus) string {
	if h, ok := holds[p.Transitions[rotationMachine]]; ok {
		return h
	}
	switch {
	case p.Gate == "":
		return "-"
	case p.Gate == gateWindowEnding && p.WindowLeft != "":
		return p.Gate + " (" + p.WindowLeft + ")"
	case p.Gate == gateOpen || p.GateUntil.IsZero():
		return p.Gate
	}
	return p.Gate + " (" + schedule.Approx(p.GateUntil.Sub(p.Now)) + ")"
}

// wideRotationCells are -o wide's ROTATION and SURGE-NODE: the rotation
// machine's transition and the surge node of the rotation in flight; with
// several in flight (docs/design.md#throughput), each one's, in slot order,
// comma-separated.
func wideRotationCells(p *PoolStatus) (rotation, surge string) {
	if len(p.Rotations) <= 1 {
		surge = "-"
		if p.InFlight != nil && p.InFlight.SurgeNode != "" {
			surge = p.InFlight.SurgeNode
		}
		return orDash(p.Transitions[rotationMachine]), surge
	}
	phases, nodes := make([]string, len(p.Rotations)), make([]string, len(p.Rotations))
	for i, f := range p.Rotations {
		phases[i], nodes[i] = orDash(f.Phase), orDash(f.SurgeNode)
	}
	return strings.Join(phases, ","), strings.Join(nodes, ",")
}

func inFlightCell(p *PoolStatus) string {
	if p.MaxUnavailable <= 1 && len(p.Rotations) <= 1 {
		return rotationCell(p, p.InFlight)
	}
	// several at once: "2/3 a pending for 3m, b draining for 6m" (each
	// one's phase in -o wide's ROTATION and in -o json)
	cells := make([]string, len(p.Rotations))
	for i, f := range p.Rotations {
		cells[i] = f.NodeClaim + " " + orDash(f.State)
		if !f.StartedAt.IsZero() {
			cells[i] += " for " + schedule.Approx(p.Now.Sub(f.StartedAt))
		}
	}
	s := fmt.Sprintf("%d/%d", len(p.Rotations), p.MaxUnavailable)
	if len(cells) > 0 {
		s += " " + strings.Join(cells, ", ")
	}
	return s
}

func rotationCell(p *PoolStatus, f *InFlight) string {
	if f == nil {
		return "-"
	}
	s := f.NodeClaim + " " + orDash(f.State)
	if f.Phase != "" {
		s += " (" + f.Phase + ")"
	}
	if !f.StartedAt.IsZero() {
		s += " for " + schedule.Approx(p.Now.Sub(f.StartedAt))
	}
	return s
}

func nextCell(p *PoolStatus) string {
	n := p.Next
	if n == nil {
		return "-"
	}
	s := n.NodeClaim
	if n.Kind != "surge" {
		s += " [" + n.Kind + "]"
	}
	if !n.Deadline.IsZero() {
		s += " (expires " + relative(p.Now, n.Deadline)
		if n.ExpiresFirst {
			s += ", before its forecast rotation"
		}
		s += ")"
	}
	return s
}

func forecastCell(p *PoolStatus) string {
	f := p.Forecast
	switch {
	case p.Blocked != "":
		return "never: " + p.Blocked
	case f == nil || f.Rotations == 0:
		return "-"
	case f.Beyond:
		return fmt.Sprintf("%d: not within a year", f.Rotations)
	}
	return fmt.Sprintf("%d done in %s (%d %s)", f.Rotations, schedule.Approx(f.Done.Sub(p.Now)), f.Occurrences, plural(f.Occurrences, "window", "windows"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// relative says "in 2d3h" or "3m ago".
func relative(now, t time.Time) string {
	if d := t.Sub(now); d >= 0 {
		return "in " + schedule.Approx(d)
	}
	return schedule.Approx(now.Sub(t)) + " ago"
}

// RenderPool writes a pool's explanation: its status, then each machine's
// transition now with the facts it read and the steps it would run.
func RenderPool(w io.Writer, ex *PoolExplanation, format string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if ok, err := encode(w, ex, format); ok {
		return err
	}
	st := ex.Status
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	c := st.Census
	rows := [][2]string{
		{"NodePool", st.NodePool},
		{"Policy", policyCell(st) + " (" + st.Governance + ")"},
		{"Window", windowCell(st, true)},
		{"Start gate", gateCell(st)},
	}
	if st.GateWhy != "" {
		rows = append(rows, [2]string{"", st.GateWhy})
	}
	if st.MaxUnavailable > 1 || len(st.Rotations) > 1 {
		rows = append(rows, [2]string{"Slots", slotsCell(st)})
	}
	rows = append(rows, [][2]string{
		{"In flight", inFlightCell(st)},
		{"Claims", fmt.Sprintf("%d: %d candidates, %d in backoff, %d in flight, %d not due, %d skipped, %d opted out, %d not ready, %d deleting, %d expired, %d without deadline",
			c.Total, c.Candidates, c.InBackoff, c.InFlight, c.NotDue, c.Skipped, c.OptedOut, c.NotReady, c.Deleting, c.Expired, c.NoDeadline)},
		{"Next", nextCell(st)},
		{"Forecast", forecastCell(st)},
	}...)
	if st.Coverage != nil {
		rows = append(rows, [2]string{"Coverage", st.Coverage.Sentence()})
	}
	rows = append(rows, [2]string{"Expired unrotated", fmt.Sprintf("%d in the last 7 days", st.ExpiredUnrotated)})
	if st.Problem != "" {
		rows = append(rows, [2]string{"Problem", st.Problem})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	type shown struct {
		label string
		engine.Decision
	}
	var decisions []shown
	for _, d := range ex.Decisions {
		if d.Machine == rotationMachine && len(ex.Slots) > 0 {
			for _, sd := range ex.Slots { // each slot's instead of the first's
				label := fmt.Sprintf("%s machine, slot %d (%s)", sd.Machine, sd.Slot, orDash(sd.NodeClaim))
				if sd.NodeClaim == "" {
					label = fmt.Sprintf("%s machine, slot %d (free)", sd.Machine, sd.Slot)
				}
				decisions = append(decisions, shown{label, sd.Decision})
			}
			continue
		}
		decisions = append(decisions, shown{d.Machine + " machine", d})
	}
	for _, sd := range decisions {
		d := sd.Decision
		if d.Undecided != nil {
			fmt.Fprintf(w, "\n%s: undecided (%s): it takes no step until fixed: %v\n", sd.label, orDash(d.From), d.Undecided)
		} else {
			fmt.Fprintf(w, "\n%s: %s (%s → %s), the table's requeue %s\n", sd.label, d.Transition, d.From, orDash(d.To), schedule.FormatDuration(d.Requeue))
		}
		facts := make([]string, len(d.Facts))
		for i, f := range d.Facts {
			facts[i] = fmt.Sprintf("%s=%v", f.Name, f.Value)
		}
		fmt.Fprintf(w, "  facts read: %s\n", strings.Join(facts, " "))
		if len(d.Steps) == 0 {
			fmt.Fprintln(w, "  steps: none")
			continue
		}
		fmt.Fprintln(w, "  steps:")
		for _, s := range d.Steps {
			fmt.Fprintf(w, "    - %s%s\n", s.Action, stepArgs(s.Args))
		}
	}
	return nil
}

func stepArgs(args map[string]any) string {
	if len(args) == 0 {
		return ""
	}
	b, err := json.Marshal(args) // sorted keys: stable output
	if err != nil {
		return fmt.Sprintf(" %v", args)
	}
	return " " + string(b)
}

// RenderClaim writes a claim's explanation.
func RenderClaim(w io.Writer, ex *ClaimExplanation, format string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if ok, err := encode(w, ex, format); ok {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	now := time.Now()
	pool := orDash(ex.NodePool)
	if ex.Pool != nil {
		now = ex.Pool.Now
		pool += " (policy " + policyCell(ex.Pool) + ")"
	}
	at := func(t time.Time) string {
		return stamp(t) + " (" + relative(now, t) + ")"
	}
	rows := [][2]string{{"NodeClaim", ex.NodeClaim}, {"NodePool", pool}, {"Class", ex.Class}, {"Why", ex.Reason}}
	if !ex.Deadline.IsZero() {
		rows = append(rows, [2]string{"Expires", at(ex.Deadline) + ", Karpenter's expireAfter"})
	}
	if !ex.DueFrom.IsZero() {
		rows = append(rows, [2]string{"Due from", at(ex.DueFrom)})
	}
	if ex.ShortLead {
		rows = append(rows, [2]string{"Short lead", "its own expireAfter leaves less than the schedule's lead: taken first, best-effort"})
	}
	if !ex.RetryAt.IsZero() {
		rows = append(rows, [2]string{"Retry from", at(ex.RetryAt) + ", retry-count " + orDash(ex.RetryCount)})
	}
	if ex.Place > 0 {
		rows = append(rows, [2]string{"Place", fmt.Sprintf("%d among the eligible claims", ex.Place)})
	}
	if !ex.ExpectedStart.IsZero() {
		rows = append(rows, [2]string{"Forecast start", at(ex.ExpectedStart)})
	}
	if !ex.EarliestStart.IsZero() {
		rows = append(rows, [2]string{"Earliest start", at(ex.EarliestStart) + ", the first open window once it is eligible"})
	}
	if ex.Occurrence != nil {
		rows = append(rows, [2]string{"Occurrence", ex.Occurrence.String() + ", the window it is expected to rotate in"})
	}
	if ex.Pool != nil {
		if f := ex.Pool.rotation(ex.NodeClaim); f != nil {
			rows = append(rows, prePullRows(f.PrePull)...)
		}
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// slotsCell says how many rotations the pool may run at once, which slots
// are in flight, and which one the next start takes or why none is free
// (docs/design.md#throughput).
func slotsCell(p *PoolStatus) string {
	s := fmt.Sprintf("%d at once (maxUnavailable), %d in flight", p.MaxUnavailable, len(p.Rotations))
	if p.FreeSlot != 0 {
		return s + fmt.Sprintf("; slot %d is free: the next start takes it", p.FreeSlot)
	}
	return s + ": no slot is free, no rotation starts until one ends"
}
