package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
)

// quotaSource is where the engine's quota signals are read.
const quotaSource = "codex session rollout"

// Codex (0.169.0) reads its rate limits from the headers of every model
// response (x-codex-primary-used-percent, x-codex-primary-window-minutes,
// x-codex-primary-reset-at in unix seconds, the same for secondary; another
// metered limit as x-codex-<name>-primary-…) and records them in the
// session's rollout, $CODEX_HOME/sessions/YYYY/MM/DD/rollout-….jsonl, with
// each turn's token count:
//
//	{"timestamp":"2026-12-02T23:29:59.002Z","type":"event_msg","payload":{"type":"token_count",
//	 "info":{…},"rate_limits":{"limit_id":"codex","limit_name":null,
//	 "primary":{"used_percent":42.5,"window_minutes":300,"resets_at":1796257796},
//	 "secondary":{"used_percent":12.0,"window_minutes":10080,"resets_at":1796513396},
//	 "credits":null,"plan_type":null,"rate_limit_reached_type":null}}}
//
// It does so whatever the credentials, an API key included. One token
// count carries one limit's snapshot; a window the response said nothing
// of is null.

// LocalQuota reads at most rolloutsRead rollouts, newest first, looking
// for one that recorded rate limits, and of each at most its last tailRead
// bytes (a token count follows every turn, so the latest are at the end).
const (
	rolloutsRead = 10
	tailRead     = 2 << 20
)

// freshFor is how old a reading may be and still be the provider's word
// just now.
const freshFor = 10 * time.Minute

// UserHome is the user's own Codex home: $CODEX_HOME, else ~/.codex.
func UserHome() (string, error) {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".codex"), nil
}

// LocalQuota reads the rate limits Codex last recorded under codexHome (a
// job's private CODEX_HOME, or the user's own: it is only read): from the
// newest session rollout that recorded any, each window's latest reading,
// read at the time Codex wrote it down. A window is named for its length
// (5h, weekly, …; primary or secondary when it has none), prefixed by its
// limit ("codex_other:1h") for a limit other than Codex's own. No sessions
// folder, or no rollout with rate limits, is no signal and no error.
func LocalQuota(codexHome string, now time.Time) ([]protocol.QuotaSignal, error) {
	files, err := rollouts(filepath.Join(codexHome, "sessions"))
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		if i == rolloutsRead {
			break
		}
		sigs, err := readRollout(f.path, f.mod, now)
		if err != nil {
			return nil, err
		}
		if len(sigs) > 0 {
			return sigs, nil
		}
	}
	return nil, nil
}

type rollout struct {
	path string
	mod  time.Time
}

// rollouts lists the rollout files under dir, the last modified first.
func rollouts(dir string) ([]rollout, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []rollout
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // a folder it cannot read holds nothing for it
		}
		name := d.Name()
		if d.Type().IsRegular() && strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, ".jsonl") {
			if fi, err := d.Info(); err == nil {
				out = append(out, rollout{path: path, mod: fi.ModTime()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("codex: read sessions: %w", err)
	}
	slices.SortFunc(out, func(a, b rollout) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(b.path, a.path)
	})
	return out, nil
}

// rolloutLine is what LocalQuota reads of a rollout's line.
type rolloutLine struct {
	Timestamp string `json:"timestamp"`
	Payload   struct {
		RateLimits *struct {
			LimitID   string      `json:"limit_id"`
			Primary   *rateWindow `json:"primary"`
			Secondary *rateWindow `json:"secondary"`
		} `json:"rate_limits"`
	} `json:"payload"`
}

type rateWindow struct {
	UsedPercent   *float64 `json:"used_percent"`
	WindowMinutes *float64 `json:"window_minutes"`
	ResetsAt      *float64 `json:"resets_at"`         // unix seconds
	ResetsIn      *float64 `json:"resets_in_seconds"` // older Codex: from the line's time
}

// reading is one window's latest reading in a rollout.
type reading struct {
	limit, slot string
	w           rateWindow
	at          time.Time
}

// readRollout returns the signals of the windows one rollout recorded,
// each as last recorded; a line it cannot read is passed over.
func readRollout(path string, mod, now time.Time) ([]protocol.QuotaSignal, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil // gone since it was listed
		}
		return nil, fmt.Errorf("codex: read %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if fi, err := f.Stat(); err == nil && fi.Size() > tailRead {
		if _, err := f.Seek(fi.Size()-tailRead, io.SeekStart); err != nil {
			return nil, fmt.Errorf("codex: read %s: %w", path, err)
		}
		br.Reset(f)
		// Start at a line's start: drop the rest of the one cut.
		for {
			if _, err := br.ReadSlice('\n'); !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
	}
	latest := map[[2]string]reading{}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line (a tool's output) is never a token count: skip it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			line = nil
		}
		if bytes.Contains(line, []byte(`"rate_limits"`)) {
			var l rolloutLine
			if json.Unmarshal(line, &l) == nil && l.Payload.RateLimits != nil {
				rl := l.Payload.RateLimits
				at, perr := time.Parse(time.RFC3339Nano, l.Timestamp)
				if perr != nil {
					at = mod
				}
				for slot, w := range map[string]*rateWindow{"primary": rl.Primary, "secondary": rl.Secondary} {
					if w != nil && w.UsedPercent != nil {
						latest[[2]string{rl.LimitID, slot}] = reading{limit: rl.LimitID, slot: slot, w: *w, at: at}
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("codex: read %s: %w", path, err)
		}
	}
	rs := make([]reading, 0, len(latest))
	for _, r := range latest {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b reading) int {
		if c := strings.Compare(limitOrder(a.limit), limitOrder(b.limit)); c != 0 {
			return c
		}
		return strings.Compare(a.slot, b.slot)
	})
	sigs := make([]protocol.QuotaSignal, 0, len(rs))
	for _, r := range rs {
		sigs = append(sigs, r.signal(now))
	}
	// Two windows of one limit and one length keep their slots' names.
	count := map[string]int{}
	for _, s := range sigs {
		count[s.Name]++
	}
	for i := range sigs {
		if count[sigs[i].Name] > 1 {
			sigs[i].Name = limitPrefix(rs[i].limit) + rs[i].slot
		}
	}
	return sigs, nil
}

// limitOrder sorts Codex's own limit first.
func limitOrder(limit string) string {
	if limit == "" || limit == "codex" {
		return ""
	}
	return "~" + limit
}

func limitPrefix(limit string) string {
	if limit == "" || limit == "codex" {
		return ""
	}
	return limit + ":"
}

func (r reading) signal(now time.Time) protocol.QuotaSignal {
	at := r.at.UTC()
	if at.After(now) {
		at = now.UTC()
	}
	used := min(max(*r.w.UsedPercent, 0), 100)
	s := protocol.QuotaSignal{Engine: Name, Name: limitPrefix(r.limit) + r.slot, UsedPct: used, Exhausted: used >= 100,
		Source: quotaSource, ReadAt: at, Confidence: protocol.ConfidenceMedium}
	if m := r.w.WindowMinutes; m != nil && *m > 0 {
		s.Name = limitPrefix(r.limit) + windowName(int64(*m))
	}
	switch {
	case r.w.ResetsAt != nil && *r.w.ResetsAt > 0 && *r.w.ResetsAt < maxResetsAt:
		s.ResetsAt = time.Unix(int64(*r.w.ResetsAt), 0).UTC()
	case r.w.ResetsIn != nil && *r.w.ResetsIn >= 0 && *r.w.ResetsIn < maxResetsIn:
		s.ResetsAt = r.at.Add(time.Duration(*r.w.ResetsIn) * time.Second).UTC().Truncate(time.Second)
	}
	if now.Sub(at) < freshFor {
		s.Confidence = protocol.ConfidenceHigh
	}
	return s
}

// windowName names a window by its length: 5h, daily, weekly, monthly,
// else in days, hours or minutes.
func windowName(minutes int64) string {
	switch {
	case minutes == 24*60:
		return "daily"
	case minutes == 7*24*60:
		return "weekly"
	case minutes >= 28*24*60 && minutes <= 31*24*60:
		return "monthly"
	case minutes%(24*60) == 0:
		return fmt.Sprintf("%dd", minutes/(24*60))
	case minutes%60 == 0:
		return fmt.Sprintf("%dh", minutes/60)
	}
	return fmt.Sprintf("%dm", minutes)
}

// run is a run of Codex whose outcome carries the rate limits Codex
// recorded in the job's own CODEX_HOME.
type run struct {
	engine.Run
	codexHome string
	log       io.Writer // the worker log (nil: none)
}

func (r run) Wait() engine.Outcome {
	o := r.Run.Wait()
	sigs, err := LocalQuota(r.codexHome, time.Now())
	if err != nil && r.log != nil {
		fmt.Fprintf(r.log, "[hub] cannot read the rate limits Codex recorded: %v\n", err)
	}
	o.Quota = append(o.Quota, sigs...)
	return o
}

// A reset time from 10000-01-01 on (Unix seconds) is not in seconds, or not
// a time at all, and JSON could not carry it; a reset over a century away
// likewise. Such a window is kept without its reset.
const (
	maxResetsAt = 253402300800
	maxResetsIn = 100 * 365 * 24 * 3600
)
