package simulate

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

//go:embed report.html.tmpl
var reportFS embed.FS

var reportTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"approx": schedule.Approx,
	"utc":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") },
}).ParseFS(reportFS, "report.html.tmpl"))

// The report's geometry, in SVG user units.
const (
	plotLeft   = 150.0 // lane names
	plotWidth  = 900.0
	laneHeight = 6.0
	axisHeight = 24.0
	histHeight = 120.0
	histBins   = 20
)

// RenderReport writes the HTML report: per pool, the windows shaded on a
// time axis with one lane per NodeClaim from its creation to its rotation
// or forced expiry, its deadline marked, and the margin histogram.
func RenderReport(w io.Writer, r *Result) error {
	return reportTemplate.Execute(w, reportView(r))
}

type reportPage struct {
	R     *Result
	Pools []poolView
}

type poolView struct {
	S                PoolSummary
	Width, Height    float64
	Windows          []box
	Ticks            []tick
	Lanes            []laneView
	Hist             []bar
	HistMax          int
	HistFrom, HistTo string
	HistW, HistH     float64
}

type box struct{ X, W float64 }

type tick struct {
	X     float64
	Label string
}

type laneView struct {
	Name, End, Title      string
	Y, X1, X2             float64
	Deadline, HasDeadline bool
	DX                    float64
	Starts                []float64
}

type bar struct {
	X, Y, W, H float64
	N          int
	Title      string
}

func reportView(r *Result) reportPage {
	page := reportPage{R: r}
	span := r.End.Sub(r.Start)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(r.Start)) / float64(span)
		return plotLeft + plotWidth*min(max(f, 0), 1)
	}
	for _, p := range r.Pools {
		v := poolView{S: p.Summary, Width: plotLeft + plotWidth + 10}
		for _, o := range p.Occurrences {
			if o.End.After(r.Start) && o.Start.Before(r.End) {
				v.Windows = append(v.Windows, box{X: x(o.Start), W: max(x(o.End)-x(o.Start), 1)})
			}
		}
		for d := time.Duration(0); d <= span; d += 7 * 24 * time.Hour {
			t := r.Start.Add(d)
			v.Ticks = append(v.Ticks, tick{X: x(t), Label: t.UTC().Format("Jan 2")})
		}
		for i, l := range p.Lanes {
			lv := laneView{Name: l.Name, End: endClass(l), Y: axisHeight + float64(i)*laneHeight + laneHeight/2, X1: x(l.Created)}
			end := r.End
			if !l.Deleted.IsZero() {
				end = l.Deleted
			}
			lv.X2 = max(x(end), lv.X1+1)
			if !l.Deadline.IsZero() && l.Deadline.Before(r.End.Add(time.Nanosecond)) && !l.Deadline.Before(r.Start) {
				lv.HasDeadline, lv.DX = true, x(l.Deadline)
			}
			for _, s := range l.Starts {
				lv.Starts = append(lv.Starts, x(s))
			}
			lv.Title = laneTitle(l)
			v.Lanes = append(v.Lanes, lv)
		}
		v.Height = axisHeight + float64(len(p.Lanes))*laneHeight + 4
		v.Hist, v.HistMax, v.HistFrom, v.HistTo = histogram(p.Lanes)
		v.HistW, v.HistH = plotWidth, histHeight
		page.Pools = append(page.Pools, v)
	}
	return page
}

func endClass(l *Lane) string {
	if l.End == EndRunning {
		return "running"
	}
	return l.End
}

func laneTitle(l *Lane) string {
	s := fmt.Sprintf("%s: created %s", l.Name, l.Created.UTC().Format(time.RFC3339))
	if !l.Deadline.IsZero() {
		s += ", forced expiry " + l.Deadline.UTC().Format(time.RFC3339)
	}
	if len(l.Starts) > 0 {
		s += fmt.Sprintf(", %d start(s), first %s", len(l.Starts), l.Starts[0].UTC().Format(time.RFC3339))
	}
	if m, ok := l.Margin(); ok {
		s += ", margin " + schedule.Approx(m)
	}
	if l.End != "" {
		s += ", " + l.End
	}
	return s
}

// histogram bins the rotated claims' margins.
func histogram(lanes []*Lane) ([]bar, int, string, string) {
	var ms []time.Duration
	for _, l := range lanes {
		if m, ok := l.Margin(); ok {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, 0, "", ""
	}
	lo, hi := ms[0], ms[0]
	for _, m := range ms {
		lo, hi = min(lo, m), max(hi, m)
	}
	width := max((hi-lo)/histBins+1, time.Minute)
	counts := make([]int, histBins)
	for _, m := range ms {
		counts[min(int((m-lo)/width), histBins-1)]++
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	bars := make([]bar, histBins)
	bw := plotWidth / histBins
	for i, c := range counts {
		h := (histHeight - 20) * float64(c) / float64(most)
		from := lo + time.Duration(i)*width
		bars[i] = bar{X: float64(i) * bw, W: bw - 2, H: h, Y: histHeight - 20 - h, N: c,
			Title: fmt.Sprintf("%d rotated with %s – %s left", c, schedule.Approx(from), schedule.Approx(from+width))}
	}
	return bars, most, schedule.Approx(lo), schedule.Approx(lo + width*histBins)
}
