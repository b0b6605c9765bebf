package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// svgElem is one element of a parsed SVG: its name, attributes and the
// character data directly inside it.
type svgElem struct {
	name  string
	attr  map[string]string
	text  string
	title string // text of a <title> child, if any
}

// parseSVG decodes every token of b, failing the test on malformed XML.
func parseSVG(t *testing.T, b []byte) []*svgElem {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var all, stack []*svgElem
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", tok.Name.Space)
				}
			}
			e := &svgElem{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			all = append(all, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			top := stack[len(stack)-1]
			top.text += string(tok)
			if top.name == "title" && len(stack) > 1 {
				stack[len(stack)-2].title += string(tok)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return all
}

func svgClass(es []*svgElem, class string) []*svgElem {
	var out []*svgElem
	for _, e := range es {
		if e.attr["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

func svgNum(t *testing.T, e *svgElem, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attr[attr], 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", e.name, attr, e.attr[attr], err)
	}
	return v
}

// svgTexts is every piece of character data in the document.
func svgTexts(es []*svgElem) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.text)
		b.WriteString("\n")
	}
	return b.String()
}

func exampleChart() chart {
	return chart{
		Title: "Worktree readiness",
		Unit:  "ms",
		Groups: []group{
			{Label: "100 files", Bars: []bar{
				{Series: "hub", P50: 41.2, Lo: 38, Hi: 47.5},
				{Series: "floor: git worktree add", P50: 30.1, Lo: 29, Hi: 33},
			}},
			{Label: "1000 files", Bars: []bar{
				{Series: "hub", P50: 88, Lo: 80, Hi: 97},
				{Series: "floor: git worktree add", P50: 71.4, Lo: 70, Hi: 80.2},
			}},
			{Label: "5000 files", Bars: []bar{
				{Series: "hub", P50: 260, Lo: 251, Hi: 281},
				{Series: "floor: git worktree add", P50: 240, Lo: 238, Hi: 250},
				{Series: "floor: cp -r", P50: 301, Lo: 290, Hi: 330},
			}},
		},
		Note: "p50 of 15 runs; whiskers are min–max.",
	}
}

func TestChartSVGParsesAndLabels(t *testing.T) {
	c := exampleChart()
	b := c.SVG()
	es := parseSVG(t, b)
	text := svgTexts(es)
	for _, want := range []string{c.Title, c.Note, "100 files", "1000 files", "5000 files", "ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
	var legend []string
	for _, e := range svgClass(es, "legend") {
		legend = append(legend, e.text)
	}
	if want := []string{"hub", "floor: git worktree add", "floor: cp -r"}; strings.Join(legend, "|") != strings.Join(want, "|") {
		t.Errorf("legend %q, want %q", legend, want)
	}
	if n := len(svgClass(es, "swatch")); n != 3 {
		t.Errorf("%d legend swatches, want 3", n)
	}
	if n := len(svgClass(es, "bar")); n != 7 {
		t.Errorf("%d bars, want 7", n)
	}
	if n := len(svgClass(es, "whisker")); n != 7 {
		t.Errorf("%d whiskers, want 7", n)
	}
	// One colour per series, the same in every group.
	fill := map[string]string{}
	for i, e := range svgClass(es, "bar") {
		s := []string{"hub", "floor: git worktree add", "hub", "floor: git worktree add", "hub", "floor: git worktree add", "floor: cp -r"}[i]
		if f, ok := fill[s]; ok && f != e.attr["fill"] {
			t.Errorf("series %q drawn in %s and %s", s, f, e.attr["fill"])
		}
		fill[s] = e.attr["fill"]
	}
	if fill["hub"] == fill["floor: cp -r"] || fill["hub"] == fill["floor: git worktree add"] {
		t.Errorf("series share a colour: %v", fill)
	}
	// p50 printed at each bar's end, 3 significant digits.
	var values []string
	for _, e := range svgClass(es, "value") {
		values = append(values, e.text)
	}
	if got, want := strings.Join(values, "|"), "41.2 ms|30.1 ms|88 ms|71.4 ms|260 ms|240 ms|301 ms"; got != want {
		t.Errorf("values %s, want %s", got, want)
	}
	ticks := svgClass(es, "tick")
	if len(ticks) < 4 || len(ticks) > 6 {
		t.Errorf("%d ticks, want 4–6", len(ticks))
	}
	if n := len(svgClass(es, "grid")); n != len(ticks) {
		t.Errorf("%d gridlines for %d ticks", n, len(ticks))
	}
	// A white background, and everything inside the declared size.
	root := es[0]
	if root.attr["width"] != "760" {
		t.Errorf("width %q, want 760", root.attr["width"])
	}
	h := svgNum(t, root, "height")
	if es[2].name != "rect" || es[2].attr["fill"] != "#ffffff" || es[2].attr["width"] != "100%" {
		t.Errorf("no white background first: %+v", es[2])
	}
	for _, e := range es[1:] {
		for _, a := range []string{"x", "y", "x1", "x2", "y1", "y2"} {
			if v, err := strconv.ParseFloat(e.attr[a], 64); err == nil {
				lim := 760.0
				if a[0] == 'y' {
					lim = h
				}
				if v < 0 || v > lim {
					t.Errorf("<%s class=%q> %s=%v outside 0..%v", e.name, e.attr["class"], a, v, lim)
				}
			}
		}
	}
	bars := svgClass(es, "bar")
	for i, e := range svgClass(es, "value") {
		xb := svgNum(t, bars[i], "x") + svgNum(t, bars[i], "width")
		if x := svgNum(t, e, "x"); x < xb || x+float64(len(e.text))*6.6 > 760 {
			t.Errorf("value %q at x=%v, bar ends at %v", e.text, x, xb)
		}
	}
}

func TestChartSVGDeterministic(t *testing.T) {
	a := exampleChart().SVG()
	for i := 0; i < 20; i++ {
		if b := exampleChart().SVG(); !bytes.Equal(a, b) {
			t.Fatalf("render %d differs", i)
		}
	}
	c := exampleChart()
	c.Log = true
	a = c.SVG()
	if b := c.SVG(); !bytes.Equal(a, b) {
		t.Fatal("log render differs")
	}
}

func barWidths(t *testing.T, b []byte) []float64 {
	t.Helper()
	var ws []float64
	for _, e := range svgClass(parseSVG(t, b), "bar") {
		ws = append(ws, svgNum(t, e, "width"))
	}
	return ws
}

func TestChartSVGLongerBarsForLargerValues(t *testing.T) {
	vals := []float64{3, 0.5, 17, 120, 45, 1000, 999}
	for _, log := range []bool{false, true} {
		c := chart{Title: "order", Unit: "ms", Log: log}
		for i, v := range vals {
			c.Groups = append(c.Groups, group{Label: strconv.Itoa(i), Bars: []bar{{Series: "s", P50: v, Lo: v, Hi: v}}})
		}
		ws := barWidths(t, c.SVG())
		if len(ws) != len(vals) {
			t.Fatalf("log=%v: %d bars, want %d", log, len(ws), len(vals))
		}
		for i := range vals {
			if ws[i] <= 0 {
				t.Errorf("log=%v: bar %v has width %v", log, vals[i], ws[i])
			}
			for j := range vals {
				if vals[i] > vals[j] && ws[i] <= ws[j] {
					t.Errorf("log=%v: %v drawn %vpx, not longer than %v at %vpx", log, vals[i], ws[i], vals[j], ws[j])
				}
			}
		}
		// Linear bars are proportional to the value.
		if !log {
			k := ws[5] / vals[5]
			for i, v := range vals {
				if math.Abs(ws[i]-k*v) > 0.6 {
					t.Errorf("bar %v is %vpx, want %v", v, ws[i], k*v)
				}
			}
		}
	}
}

func TestChartSVGEscapesText(t *testing.T) {
	nasty := `a<b>&c "q" 'x' ]]>`
	c := chart{
		Title: "T " + nasty, Unit: "<u>", Note: "n " + nasty,
		Groups: []group{{Label: "g " + nasty, Bars: []bar{{Series: "s " + nasty, P50: 2, Lo: 1, Hi: 3}}}},
	}
	b := c.SVG()
	if bytes.Contains(b, []byte("<b>")) || bytes.Contains(b, []byte("<u>")) || bytes.Contains(b, []byte("&c")) {
		t.Errorf("unescaped text in:\n%s", b)
	}
	text := svgTexts(parseSVG(t, b))
	for _, want := range []string{"T " + nasty, "g " + nasty, "s " + nasty, "n " + nasty, "2 <u>"} {
		if !strings.Contains(text, want) {
			t.Errorf("decoded text lacks %q", want)
		}
	}
	// Control characters and broken UTF-8 neither break the XML nor the line.
	c = chart{Title: "a\x00b\nc\xff", Groups: []group{{Label: "l\tm\x1b", Bars: []bar{{P50: 1}}}}}
	parseSVG(t, c.SVG())
}

func TestChartSVGLogAxis(t *testing.T) {
	c := chart{Title: "spans decades", Unit: "bytes", Log: true, Groups: []group{
		{Label: "zero", Bars: []bar{{Series: "a", P50: 0}}},
		{Label: "negative", Bars: []bar{{Series: "a", P50: -5, Lo: -9, Hi: 2}}},
		{Label: "small", Bars: []bar{{Series: "a", P50: 0.5, Lo: 0.2, Hi: 0.9}}},
		{Label: "large", Bars: []bar{{Series: "b", P50: 50000, Lo: 0, Hi: 80000}}},
	}}
	b := c.SVG()
	if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
		t.Fatalf("non-finite coordinate in:\n%s", b)
	}
	es := parseSVG(t, b)
	if !strings.Contains(svgTexts(es), "bytes, log scale") {
		t.Error("axis does not say log scale")
	}
	ws := barWidths(t, b)
	// 0 and -5 are drawn as the smallest positive value (0.2), so no
	// longer than 0.5 and not negative; 50000 is the longest.
	if ws[0] != ws[1] || ws[0] < 0 || ws[0] >= ws[2] || ws[2] >= ws[3] {
		t.Errorf("widths %v", ws)
	}
	var values []string
	for _, e := range svgClass(es, "value") {
		values = append(values, e.text)
	}
	if got, want := strings.Join(values, "|"), "0 bytes|-5 bytes|0.5 bytes|50k bytes"; got != want {
		t.Errorf("values %s, want %s", got, want)
	}
	ticks := svgClass(es, "tick")
	if len(ticks) < 4 || len(ticks) > 6 {
		t.Errorf("%d ticks, want 4–6", len(ticks))
	}
	last := -1.0
	for _, e := range ticks {
		if x := svgNum(t, e, "x"); x <= last {
			t.Errorf("ticks not ascending: %v after %v", x, last)
		} else {
			last = x
		}
	}
	// Log ticks are evenly spaced per decade: 10× apart, equal distance.
	if c := (chart{Log: true, Groups: []group{{Label: "x", Bars: []bar{{P50: 1}, {P50: 1e6}}}}}); true {
		ts := svgClass(parseSVG(t, c.SVG()), "tick")
		var xs []float64
		for _, e := range ts {
			xs = append(xs, svgNum(t, e, "x"))
		}
		for i := 2; i < len(xs); i++ {
			if d0, d1 := xs[1]-xs[0], xs[i]-xs[i-1]; math.Abs(d0-d1) > 0.15 {
				t.Errorf("uneven log ticks at %v", xs)
			}
		}
	}
}

func TestChartSVGEdgeCases(t *testing.T) {
	long := strings.Repeat("very long label ", 20) + "END"
	cases := map[string]chart{
		"single bar":      {Title: "one", Groups: []group{{Label: "only", Bars: []bar{{Series: "hub", P50: 7}}}}},
		"all equal":       {Unit: "ms", Groups: []group{{Label: "a", Bars: []bar{{Series: "x", P50: 5, Lo: 5, Hi: 5}, {Series: "y", P50: 5, Lo: 5, Hi: 5}}}}},
		"all equal log":   {Log: true, Groups: []group{{Label: "a", Bars: []bar{{P50: 3}, {P50: 3}}}}},
		"all zero":        {Groups: []group{{Label: "a", Bars: []bar{{P50: 0}}}}},
		"all zero log":    {Log: true, Groups: []group{{Label: "a", Bars: []bar{{P50: 0}, {P50: -1}}}}},
		"no groups":       {Title: "empty"},
		"only empty":      {Groups: []group{{Label: "nothing"}, {Label: "nada", Bars: []bar{}}}},
		"non-finite":      {Groups: []group{{Label: "a", Bars: []bar{{P50: math.NaN()}, {P50: math.Inf(1), Lo: math.Inf(-1), Hi: 4}}}}},
		"tiny":            {Groups: []group{{Label: "a", Bars: []bar{{P50: 1e-9, Lo: 5e-10, Hi: 2e-9}}}}},
		"huge log":        {Log: true, Groups: []group{{Label: "a", Bars: []bar{{P50: 1e-200}, {P50: 1e250}}}}},
		"long":            {Title: long, Note: long, Unit: long, Groups: []group{{Label: long, Bars: []bar{{Series: long, P50: 123456789}}}}},
		"many series":     {Groups: []group{{Label: "a", Bars: []bar{{Series: "1", P50: 1}, {Series: "2", P50: 2}, {Series: "3", P50: 3}, {Series: "4", P50: 4}, {Series: "5", P50: 5}, {Series: "6", P50: 6}, {Series: "7", P50: 7}, {Series: "8", P50: 8}, {Series: "9", P50: 9}, {Series: "10", P50: 10}}}}},
		"reversed range":  {Groups: []group{{Label: "a", Bars: []bar{{P50: 5, Lo: 9, Hi: 1}}}}},
		"unnamed series":  {Groups: []group{{Label: "a", Bars: []bar{{P50: 1}, {P50: 2}}}}},
		"negative linear": {Groups: []group{{Label: "a", Bars: []bar{{P50: -3}, {P50: 4}}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := c.SVG()
			if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
				t.Fatalf("non-finite value in:\n%s", b)
			}
			es := parseSVG(t, b)
			for _, e := range svgClass(es, "bar") {
				if w := svgNum(t, e, "width"); w < 0 || w > 760 {
					t.Errorf("bar width %v", w)
				}
			}
			if ticks := svgClass(es, "tick"); len(svgClass(es, "bar")) > 0 && (len(ticks) < 2 || len(ticks) > 6) {
				t.Errorf("%d ticks", len(ticks))
			}
		})
	}

	// Empty groups are skipped, not drawn as a label without bars.
	es := parseSVG(t, chart{Groups: []group{{Label: "ghost"}, {Label: "real", Bars: []bar{{P50: 1}}}}}.SVG())
	if g := svgClass(es, "group"); len(g) != 1 || g[0].text != "real" {
		t.Errorf("groups %+v", g)
	}
	if text := svgTexts(parseSVG(t, cases["only empty"].SVG())); !strings.Contains(text, "no data") {
		t.Error("chart without bars does not say no data")
	}
	// No legend for a chart whose series are unnamed.
	if l := svgClass(parseSVG(t, cases["unnamed series"].SVG()), "legend"); len(l) != 0 {
		t.Errorf("legend %+v", l)
	}
	// Equal values draw equal bars; a single bar still gets an axis.
	if ws := barWidths(t, cases["all equal"].SVG()); ws[0] != ws[1] || ws[0] <= 0 {
		t.Errorf("all equal: widths %v", ws)
	}
	// Long text is cut with an ellipsis and kept whole in a tooltip.
	es = parseSVG(t, cases["long"].SVG())
	for _, class := range []string{"group", "legend", "note"} {
		e := svgClass(es, class)
		if len(e) != 1 {
			t.Fatalf("%d %s elements", len(e), class)
		}
		if !strings.HasSuffix(e[0].text, "…") || len([]rune(e[0].text)) > 120 {
			t.Errorf("%s not truncated: %q", class, e[0].text)
		}
		if e[0].title != long {
			t.Errorf("%s tooltip %q", class, e[0].title)
		}
	}
	// Ten series reuse the palette but every one is in the legend.
	if n := len(svgClass(parseSVG(t, cases["many series"].SVG()), "legend")); n != 10 {
		t.Errorf("%d legend entries, want 10", n)
	}
}

func TestChartTicks(t *testing.T) {
	nice := func(v float64) bool {
		if v == 0 {
			return true
		}
		m := v / math.Pow10(int(math.Floor(math.Log10(v)+1e-9)))
		for _, n := range []float64{1, 2, 5, 10} {
			if math.Abs(m-n) < 1e-6 {
				return true
			}
		}
		return false
	}
	for _, max := range []float64{1e-6, 0.0123, 0.9, 1, 2, 3, 4.5, 7, 9.99, 10, 12.3, 37, 99, 100, 101, 250, 499, 501, 999, 12345, 7e9} {
		s := chartLinScale(max)
		if n := len(s.ticks); n < 4 || n > 6 {
			t.Errorf("linear %v: ticks %v", max, s.ticks)
		}
		if s.hi < max || s.ticks[0] != 0 || s.ticks[len(s.ticks)-1] != s.hi {
			t.Errorf("linear %v: domain %v..%v ticks %v", max, s.lo, s.hi, s.ticks)
		}
		if step := s.ticks[1]; !nice(step) {
			t.Errorf("linear %v: step %v", max, step)
		}
	}
	for _, r := range [][2]float64{{1, 1}, {3, 4}, {1, 10}, {0.5, 50}, {3, 250}, {1, 1000}, {1, 1e6}, {0.001, 1e9}, {2e-7, 3e12}, {45, 46}} {
		s := chartLogScale(r[0], r[1])
		if n := len(s.ticks); n < 4 || n > 6 {
			t.Errorf("log %v: ticks %v", r, s.ticks)
		}
		if s.lo >= r[0] || s.hi < r[1] || s.ticks[len(s.ticks)-1] != s.hi {
			t.Errorf("log %v: domain %v..%v ticks %v", r, s.lo, s.hi, s.ticks)
		}
		for _, v := range s.ticks {
			if !nice(v) || v < s.lo {
				t.Errorf("log %v: tick %v", r, v)
			}
		}
	}
}

func TestChartNum(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1", 12.3: "12.3", 12.34: "12.3", 12.36: "12.4", 100: "100", 0.5: "0.5",
		0.01234: "0.0123", 1234: "1.23k", 1000: "1k", 999.6: "1k", 999.4: "999", 45678: "45.7k",
		1.5e6: "1.5M", 2e9: "2G", -12.3: "-12.3", 0.000123: "0.000123", 1.23e-5: "1.23e-05",
		0.30000000000000004: "0.3", 1.5e20: "1.5e+20",
	} {
		if got := chartNum(v); got != want {
			t.Errorf("chartNum(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestPlotWriteExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := exampleChart()
	c.Log = true
	p := filepath.Join(dir, "readiness.svg")
	if err := os.WriteFile(p, c.SVG(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, c.SVG()) {
		t.Error("file differs from a fresh render")
	}
	if !bytes.HasPrefix(b, []byte("<svg ")) || !bytes.HasSuffix(b, []byte("</svg>\n")) {
		t.Errorf("not a standalone SVG: %.40q … %q", b, b[len(b)-10:])
	}
	parseSVG(t, b)
}
