package router

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Text renders the decision for a person: the request, the ranking with
// each utility broken into its terms, every rejected engine with why and
// what would change it, and the month's money.
func (d Decision) Text() string {
	var b strings.Builder
	r := d.Request
	kind := r.Kind
	if r.ReadOnly {
		kind += " (read-only, no repo)"
	}
	fmt.Fprintf(&b, "job: %s · isolation %s · max_usd %s", kind, r.Isolation, r.MaxMicros)
	if r.Effort != "" {
		fmt.Fprintf(&b, " · effort %s", r.Effort)
	}
	if !r.Auto() {
		fmt.Fprintf(&b, " · engine %s (named)", r.Engine)
	}
	fmt.Fprintf(&b, " · mode %s\n", d.Mode)
	switch {
	case d.Chosen != "":
		fmt.Fprintf(&b, "chosen: %s", d.Chosen)
		if len(d.Candidates) > 0 && d.Candidates[0].Why != "" {
			fmt.Fprintf(&b, " (%s)", d.Candidates[0].Why)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(&b, "refused: %s\n", d.Refusal)
	}
	if d.Where != nil {
		fmt.Fprintf(&b, "where: %s\n", d.Where.Why)
	}
	for _, n := range d.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, f := range d.Fallbacks {
		fmt.Fprintf(&b, "fell back from %s: %s\n", f.Engine, f.Error)
	}
	if len(d.Candidates) > 0 {
		if d.Chosen == "" {
			b.WriteString("\nengines that could take it (utility = success × value − cost − time − quota):\n")
		} else {
			b.WriteString("\ncandidates (utility = success × value − cost − time − quota):\n")
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tengine\tutility\tsuccess × value\tcost\ttime\tquota\tbasis")
		for _, c := range d.Candidates {
			t := c.Terms
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%.2f × %s\t−%s\t−%s (%s)\t−%s\t%s\n", c.Rank, c.Engine, usdf(round(t.Utility)),
				t.Success, usdf(d.ValueUSD), usdf(t.Cost), usdf(t.Time), minutes(t.TimeS), usdf(t.Quota), t.Basis)
		}
		tw.Flush()
		var quota []string
		for _, c := range d.Candidates {
			if c.Terms.QuotaMsg != "" {
				quota = append(quota, fmt.Sprintf("  %s: %s", c.Engine, c.Terms.QuotaMsg))
			}
		}
		if len(quota) > 0 {
			b.WriteString("quota:\n" + strings.Join(quota, "\n") + "\n")
		}
	}
	if len(d.Rejected) > 0 {
		b.WriteString("\nrejected:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, r := range d.Rejected {
			line := "  " + r.Engine + "\t" + r.Reason
			if r.Fix != "" {
				line += " → " + r.Fix
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	m := d.Money
	fmt.Fprintf(&b, "\nmoney this month: %s charged + %s reserved of %s; %s left\n",
		m.ChargedMicros, m.ReservedMicros, m.CapMicros, m.Left())
	return b.String()
}

// Summary is the decision in one line, for a start result.
func (d Decision) Summary() string {
	if d.Chosen == "" {
		return "refused: " + d.Refusal
	}
	if !d.Request.Auto() {
		return "engine " + d.Chosen + " as named"
	}
	s := fmt.Sprintf("auto chose %s: utility %s", d.Chosen, usdf(round(d.Candidates[0].Terms.Utility)))
	if len(d.Candidates) > 1 {
		var next []string
		for _, c := range d.Candidates[1:] {
			next = append(next, c.Engine)
		}
		s += "; falls back to " + strings.Join(next, ", ")
	}
	if len(d.Rejected) > 0 {
		var names []string
		for _, r := range d.Rejected {
			names = append(names, r.Engine)
		}
		s += "; rejected " + strings.Join(names, ", ") + " (hub route explain says why)"
	}
	return s
}

// ChangesText renders calibration changes for a person.
func ChangesText(cs []Change) string {
	if len(cs) == 0 {
		return "no change: the history gives the same stats as routing.json has\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "engine\tkind\truns\tsuccess\ttime\tcost")
	for _, c := range cs {
		o := Stat{}
		if c.Old != nil {
			o = *c.Old
		}
		arrow := func(old, new string) string {
			if c.Old == nil {
				return new
			}
			if old == new {
				return new
			}
			return old + " → " + new
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Engine, c.Kind,
			arrow(fmt.Sprint(o.Runs), fmt.Sprint(c.New.Runs)),
			arrow(fmt.Sprintf("%.2f", o.Success), fmt.Sprintf("%.2f", c.New.Success)),
			arrow(minutes(o.DurationS), minutes(c.New.DurationS)),
			arrow(usdf(o.CostUSD), usdf(c.New.CostUSD)))
	}
	tw.Flush()
	return b.String()
}

func minutes(s float64) string {
	if s < 90 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.0fm", s/60)
}
