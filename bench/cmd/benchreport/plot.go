package main

// Plots for docs/benchmarks/*.svg: a small, dependency-free horizontal
// grouped bar chart. The output is a pure function of the chart value (no
// map iteration, fixed float formatting), so a regenerated file only changes
// when the numbers do.

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bar is one bar in a group: a median with its spread.
type bar struct {
	Series string  // e.g. "hub" or "floor: git worktree add" — one colour per distinct series, with a legend
	P50    float64 // bar length
	Lo, Hi float64 // whisker (e.g. min–max or p10–p90); equal to P50 for none
}

// group is one labelled cluster of bars, one per series.
type group struct {
	Label string // e.g. "100 files"
	Bars  []bar
}

// chart is a horizontal grouped bar chart; SVG renders it.
//
// Series get colours in order of first appearance (groups top to bottom,
// bars in order), and the legend lists them in that order; a series named ""
// gets a colour but no legend entry. Groups without bars are skipped.
// Non-finite numbers count as 0. A bar with Lo == Hi == 0 has no whisker (so
// bar{Series: s, P50: v} needs no spread), and a whisker is widened to
// include P50. The linear axis starts at 0 and draws negative values as
// empty bars; the log axis draws values <= 0 as the smallest positive value.
// Value labels always print the value as given.
type chart struct {
	Title  string
	Unit   string // axis unit, e.g. "ms", "bytes"
	Log    bool   // log10 value axis (for figures spanning decades)
	Groups []group
	Note   string // optional one-line caption under the chart
}

const (
	chartWidth     = 760.0
	chartPad       = 16.0
	chartBarH      = 14.0
	chartBarGap    = 3.0
	chartGroupGap  = 14.0
	chartMaxLabelW = 200.0 // group label column, px
	chartFont      = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
	chartInk       = "#222222"
	chartMuted     = "#555555"
	chartGrid      = "#e3e3e3"
)

// chartPalette is Okabe–Ito, ordered so the first colours contrast best on
// white; it repeats after eight series.
var chartPalette = [...]string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442"}

// chartBar is a bar after sanitising, with its place in the drawing.
type chartBar struct {
	bar
	colour  int
	whisker bool
}

// SVG renders the chart as a standalone SVG document, 760 px wide and as
// tall as its content needs.
func (c chart) SVG() []byte {
	// Sanitise and collect what is drawn.
	type grp struct {
		label string
		bars  []chartBar
	}
	var groups []grp
	var series []string
	colourOf := map[string]int{} // lookups only; never iterated
	for _, g := range c.Groups {
		if len(g.Bars) == 0 {
			continue
		}
		gg := grp{label: chartClean(g.Label)}
		for _, b := range g.Bars {
			cb := chartBar{bar: b}
			cb.P50, cb.Lo, cb.Hi = chartFinite(b.P50), chartFinite(b.Lo), chartFinite(b.Hi)
			if cb.Lo == 0 && cb.Hi == 0 {
				cb.Lo, cb.Hi = cb.P50, cb.P50
			}
			if cb.Lo > cb.Hi {
				cb.Lo, cb.Hi = cb.Hi, cb.Lo
			}
			cb.Lo, cb.Hi = math.Min(cb.Lo, cb.P50), math.Max(cb.Hi, cb.P50)
			cb.whisker = cb.Lo < cb.Hi
			i, ok := colourOf[b.Series]
			if !ok {
				i = len(series)
				colourOf[b.Series] = i
				series = append(series, b.Series)
			}
			cb.colour = i
			gg.bars = append(gg.bars, cb)
		}
		groups = append(groups, gg)
	}
	unit := chartTrunc(chartClean(c.Unit), 16)

	// Value axis.
	minPos, maxV := math.Inf(1), 0.0
	for _, g := range groups {
		for _, b := range g.bars {
			for _, v := range [...]float64{b.P50, b.Lo, b.Hi} {
				if v > 0 && v < minPos {
					minPos = v
				}
				maxV = math.Max(maxV, v)
			}
		}
	}
	var sc chartScale
	if c.Log {
		if math.IsInf(minPos, 1) {
			minPos, maxV = 1, 1
		}
		sc = chartLogScale(minPos, maxV)
	} else {
		sc = chartLinScale(maxV)
	}
	clamp := func(v float64) float64 {
		if c.Log && v < minPos {
			return minPos
		}
		return v
	}

	valueLabel := func(v float64) string {
		if unit == "" {
			return chartNum(v)
		}
		return chartNum(v) + " " + unit
	}

	// Horizontal layout: label column, plot, room for value labels.
	labelW := 0.0
	for _, g := range groups {
		labelW = math.Max(labelW, chartTextW(g.label, 12))
	}
	labelW = math.Min(labelW, chartMaxLabelW)
	valW := 0.0
	for _, g := range groups {
		for _, b := range g.bars {
			valW = math.Max(valW, chartTextW(valueLabel(b.P50), 11))
		}
	}
	x0 := chartPad + labelW + 10
	x1 := chartWidth - chartPad - valW - 6
	// The last tick label is centred on x1; keep it inside the image.
	x1 = math.Min(x1, chartWidth-chartPad-chartTextW(chartNum(sc.hi), 11)/2)
	x1 = math.Max(x1, x0+100)
	xOf := func(v float64) float64 { return x0 + sc.frac(clamp(v))*(x1-x0) }

	var buf bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&buf, format, args...) }
	var body bytes.Buffer
	bw := func(format string, args ...any) { fmt.Fprintf(&body, format, args...) }

	// Title and legend.
	y := chartPad
	title := chartClean(c.Title)
	if title != "" {
		y += 16
		t := chartFit(title, chartWidth-2*chartPad, 16*1.05)
		bw(`<text x="%s" y="%s" font-size="16" font-weight="bold" fill="%s">%s</text>`+"\n",
			chartF(chartPad), chartF(y), chartInk, chartTitled(t, title))
		y += 10
	}
	legendRows := 0
	lx := chartPad
	for i, s := range series {
		name := chartClean(s)
		if name == "" {
			continue
		}
		t := chartFit(name, 320, 12)
		ew := 12 + 5 + chartTextW(t, 12)
		if legendRows == 0 || (lx+ew > chartWidth-chartPad && lx > chartPad) {
			if legendRows > 0 {
				y += 18
			}
			legendRows++
			lx = chartPad
		}
		bw(`<rect class="swatch" x="%s" y="%s" width="12" height="12" fill="%s"/>`+"\n",
			chartF(lx), chartF(y+2), chartPalette[i%len(chartPalette)])
		bw(`<text class="legend" x="%s" y="%s" font-size="12" fill="%s">%s</text>`+"\n",
			chartF(lx+17), chartF(y+12), chartInk, chartTitled(t, name))
		lx += ew + 16
	}
	if legendRows > 0 {
		y += 18 + 8
	}

	plotTop := y + 6
	if len(groups) == 0 {
		bw(`<text x="%s" y="%s" font-size="12" fill="%s" text-anchor="middle">no data</text>`+"\n",
			chartF(chartWidth/2), chartF(plotTop+16), chartMuted)
		y = plotTop + 16
	}

	// Bars, their whiskers and values, with group labels on the left.
	var bars bytes.Buffer
	by := plotTop + 4
	for gi, g := range groups {
		if gi > 0 {
			by += chartGroupGap
		}
		gh := float64(len(g.bars))*chartBarH + float64(len(g.bars)-1)*chartBarGap
		t := chartFit(g.label, chartMaxLabelW, 12)
		fmt.Fprintf(&bars, `<text class="group" x="%s" y="%s" font-size="12" fill="%s" text-anchor="end">%s</text>`+"\n",
			chartF(x0-10), chartF(by+gh/2+4), chartInk, chartTitled(t, g.label))
		for _, b := range g.bars {
			cy := by + chartBarH/2
			xe := xOf(b.P50)
			tip := g.label + " — "
			if s := chartClean(b.Series); s != "" {
				tip = s + ", " + tip
			}
			tip += "p50 " + valueLabel(b.P50)
			if b.whisker {
				tip += " (" + chartNum(b.Lo) + "–" + valueLabel(b.Hi) + ")"
			}
			fmt.Fprintf(&bars, `<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`+"\n",
				chartF(x0), chartF(by), chartF(xe-x0), chartF(chartBarH), chartPalette[b.colour%len(chartPalette)], chartEsc(tip))
			end := xe
			if b.whisker {
				xl, xh := xOf(b.Lo), xOf(b.Hi)
				fmt.Fprintf(&bars, `<path class="whisker" d="M%s %sH%sM%s %sV%sM%s %sV%s" stroke="%s" stroke-width="1.2" fill="none"/>`+"\n",
					chartF(xl), chartF(cy), chartF(xh),
					chartF(xl), chartF(cy-4), chartF(cy+4),
					chartF(xh), chartF(cy-4), chartF(cy+4), chartInk)
				end = math.Max(end, xh)
			}
			fmt.Fprintf(&bars, `<text class="value" x="%s" y="%s" font-size="11" fill="%s">%s</text>`+"\n",
				chartF(end+4), chartF(cy+4), chartInk, chartEsc(valueLabel(b.P50)))
			by += chartBarH + chartBarGap
		}
		by -= chartBarGap
	}

	// Axis: gridlines behind the bars, ticks and unit below.
	if len(groups) > 0 {
		plotBottom := by + 6
		for _, t := range sc.ticks {
			x := x0 + sc.frac(t)*(x1-x0)
			bw(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
				chartF(x), chartF(plotTop), chartF(x), chartF(plotBottom), chartGrid)
			bw(`<text class="tick" x="%s" y="%s" font-size="11" fill="%s" text-anchor="middle">%s</text>`+"\n",
				chartF(x), chartF(plotBottom+15), chartMuted, chartEsc(chartNum(t)))
		}
		bw(`<path class="axis" d="M%s %sV%sH%s" stroke="%s" stroke-width="1" fill="none"/>`+"\n",
			chartF(x0), chartF(plotTop), chartF(plotBottom), chartF(x1), chartMuted)
		body.Write(bars.Bytes())
		axis := unit
		if c.Log {
			if axis != "" {
				axis += ", "
			}
			axis += "log scale"
		}
		y = plotBottom + 15
		if axis != "" {
			y += 16
			bw(`<text class="unit" x="%s" y="%s" font-size="11" fill="%s" text-anchor="middle">%s</text>`+"\n",
				chartF((x0+x1)/2), chartF(y), chartMuted, chartEsc(axis))
		}
	}
	if note := chartClean(c.Note); note != "" {
		y += 20
		t := chartFit(note, chartWidth-2*chartPad, 11)
		bw(`<text class="note" x="%s" y="%s" font-size="11" font-style="italic" fill="%s">%s</text>`+"\n",
			chartF(chartPad), chartF(y), chartMuted, chartTitled(t, note))
	}
	height := math.Ceil(y + chartPad)

	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" role="img">`+"\n",
		chartF(chartWidth), chartF(height), chartF(chartWidth), chartF(height), chartEsc(chartFont))
	if title != "" {
		w("<title>%s</title>\n", chartEsc(title))
	}
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	buf.Write(body.Bytes())
	w("</svg>\n")
	return buf.Bytes()
}

// chartScale maps values onto [0, 1] along the value axis.
type chartScale struct {
	log    bool
	lo, hi float64 // domain
	ticks  []float64
}

func (s chartScale) frac(v float64) float64 {
	var f float64
	if s.log {
		if v <= 0 {
			return 0
		}
		f = (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	} else {
		f = (v - s.lo) / (s.hi - s.lo)
	}
	return math.Max(0, math.Min(1, f))
}

// chartLinScale is 0 to a round number >= max, with 4–6 ticks at a step of
// 1, 2 or 5×10^k.
func chartLinScale(max float64) chartScale {
	if max <= 0 {
		max = 1
	}
	top := int(math.Floor(math.Log10(max))) + 1
	for e := top; e >= top-3; e-- {
		for _, m := range [...]float64{5, 2, 1} {
			step := m * math.Pow10(e)
			n := int(math.Ceil(max/step - 1e-9))
			if n < 3 || n > 5 {
				continue
			}
			s := chartScale{lo: 0, hi: float64(n) * step}
			for i := 0; i <= n; i++ {
				s.ticks = append(s.ticks, float64(i)*step)
			}
			return s
		}
	}
	panic("unreachable: some step of 1, 2 or 5×10^k gives 3–5 intervals")
}

// chartLogScale spans [minPos, max] (widened to at least a decade, with a
// little room so the smallest bar shows) and ends at a tick. Ticks are
// powers of ten, every k decades, or 1 and 5, or 1, 2 and 5 times them:
// the coarsest lattice giving 4–6 ticks.
func chartLogScale(minPos, max float64) chartScale {
	const tiny, huge = 1e-150, 1e150 // keeps every lattice value finite
	max = math.Min(math.Max(max, minPos), huge)
	lo := math.Max(math.Min(minPos, max/10), tiny) / math.Pow(10, 0.1)
	type lattice struct {
		mants []float64
		k     int // decades between powers of ten
	}
	var levels []lattice
	for k := int(math.Log10(max)-math.Log10(lo)) + 1; k >= 1; k-- {
		levels = append(levels, lattice{[]float64{1}, k})
	}
	levels = append(levels, lattice{[]float64{1, 5}, 1}, lattice{[]float64{1, 2, 5}, 1})
	var best chartScale
	bestD := math.MaxInt
	for _, l := range levels {
		e0 := int(math.Floor(math.Log10(lo))) - 1
		e0 = int(math.Floor(float64(e0)/float64(l.k))) * l.k
		e1 := int(math.Ceil(math.Log10(max))) + l.k
		s := chartScale{log: true, lo: lo}
		for e := e0; e <= e1 && s.hi == 0; e += l.k {
			for _, m := range l.mants {
				v := m * math.Pow10(e)
				if v >= lo*(1-1e-9) {
					s.ticks = append(s.ticks, v)
				}
				if v >= max*(1-1e-9) {
					s.hi = v
					break
				}
			}
		}
		d := 0
		if n := len(s.ticks); n < 4 {
			d = 4 - n
		} else if n > 6 {
			d = n - 6
		}
		if d < bestD {
			best, bestD = s, d
		}
		if d == 0 {
			break
		}
	}
	return best
}

// chartNum formats v compactly: 3 significant digits, no trailing zeros,
// k/M/G/T/P from a thousand up, exponents outside 1e-3..1e18.
func chartNum(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	a := math.Abs(r)
	for _, u := range [...]struct {
		f float64
		s string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.f && a < 1e18 {
			return strconv.FormatFloat(r/u.f, 'f', -1, 64) + u.s
		}
	}
	if a < 1e-3 || a >= 1e18 {
		return strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// chartF formats a coordinate with one fixed decimal, dropping ".0".
func chartF(x float64) string {
	s := strings.TrimSuffix(strconv.FormatFloat(x, 'f', 1, 64), ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

func chartFinite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// chartClean makes s one line of valid UTF-8 without control characters.
func chartClean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// chartTextW estimates the rendered width of s in a sans-serif font.
func chartTextW(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * 0.6 * size
}

// chartFit truncates s with an ellipsis to about maxW px at size.
func chartFit(s string, maxW, size float64) string {
	return chartTrunc(s, int(maxW/(0.6*size)))
}

func chartTrunc(s string, n int) string {
	if n < 1 {
		n = 1
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:n-1]), unicode.IsSpace) + "…"
}

// chartTitled is the escaped text t, with the full text as a tooltip when t
// was shortened from it.
func chartTitled(t, full string) string {
	if t == full {
		return chartEsc(t)
	}
	return "<title>" + chartEsc(full) + "</title>" + chartEsc(t)
}

func chartEsc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
