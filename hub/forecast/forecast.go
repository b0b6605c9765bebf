// Package forecast predicts, while jobs run and after they end, which
// files each live job touched and where its work would conflict: with its
// target branch as it is now, and with every other live job of its
// repository. The daemon runs a Round every few seconds, and at once when a
// job's work changes hands.
package forecast

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/job"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
	"github.com/rs/zerolog"
)

// maxEnded bounds the ended jobs a round looks at, per repository:
// the newest ones not landed, whose branch still holds work.
const maxEnded = 50

// maxTouched bounds the touched files a forecast keeps (status and
// every job/changed carry it).
const maxTouched = 100

// fresh is how long after its end a job is forecast even when
// nothing runs beside it (it has a forecast from then on).
const fresh = time.Hour

// maxCache bounds each of the forecaster's maps: past it they start
// afresh (snapshots of running work trees keep adding keys).
const maxCache = 4096

// Forecaster works out each live job's forecast: the files it touched, how
// far its target moved, and the conflicts predicted with the target and
// with every other live job of its repository, read through a scratch
// object store that borrows the repository's objects (nothing of the
// repository, its work trees or hub's indexes changes). It remembers what
// it learnt of commits, which never change: a snapshot is a commit keyed by
// its content, so a work tree that did not change costs one `git add -A`
// and nothing more. Store, Paths, Log, Now and Changed are required.
type Forecaster struct {
	Store   *store.Store
	Paths   config.Paths
	Log     zerolog.Logger
	Now     func() time.Time
	Changed func() // a predicted conflict changed: a job's record did

	round     sync.Mutex // one round at a time: the loop's, or one a reader asked for
	mu        sync.Mutex
	touched   map[[2]string][]string // (base, commit) → paths
	conflicts map[[2]string][]string // (ours, theirs) → conflicted paths
	snaps     map[string]snap        // running job → its last snapshot
}

// snap is a running job's last snapshot, and what it cost.
type snap struct {
	at     time.Time
	took   time.Duration
	commit string
}

// snapshotShare bounds the time snapshots take: a job is snapshot again
// only once snapshotShare times its last snapshot's cost has passed (so at
// most a twentieth of a core per running job on a big work tree; every
// round on a small one). A journal is no sign of the work tree changing:
// a plain command edits files without a word.
const snapshotShare = 20

// snapshotGap bounds the wait between two snapshots of a running job
// whatever the last one cost: a snapshot's cost is wall time, and on a
// loaded machine a small tree's can take seconds, which with
// snapshotShare alone kept a job's first change (made just after a
// snapshot of its untouched tree) out of the forecast for a minute.
const snapshotGap = 10 * time.Second

// New is a Forecaster that knows nothing yet.
func New(st *store.Store, paths config.Paths, log zerolog.Logger, now func() time.Time, changed func()) *Forecaster {
	return &Forecaster{Store: st, Paths: paths, Log: log, Now: now, Changed: changed,
		touched: map[[2]string][]string{}, conflicts: map[[2]string][]string{}, snaps: map[string]snap{}}
}

// side is one live job as the forecast sees it: the commit that holds its
// work (its branch tip once ended, a snapshot of its work tree while it
// runs) and the paths it touched.
type side struct {
	j       *store.Job
	commit  string
	touched []string
}

// Round works out the forecast of every live job, repository by
// repository, and stores those that changed (with a conflict event when
// the predicted conflicts did).
func (s *Forecaster) Round(ctx context.Context) {
	s.round.Lock()
	defer s.round.Unlock()
	live, err := s.Store.ListJobs(ctx, []protocol.State{protocol.StateRunning, protocol.StateNeedsInput, protocol.StateVerifying}, "", 0)
	if err != nil {
		return
	}
	ended, err := s.Store.ListJobs(ctx, []protocol.State{protocol.StateSucceeded, protocol.StateFailed, protocol.StateCancelled, protocol.StateTimedOut}, "", 0)
	if err != nil {
		return
	}
	byRepo := map[string][]*store.Job{}
	perRepo := map[string]int{}
	for _, j := range live {
		if j.Kind == protocol.KindWrite && j.Repo != "" {
			byRepo[j.Repo] = append(byRepo[j.Repo], j)
		}
	}
	for _, j := range ended { // newest first
		if j.Kind != protocol.KindWrite || j.Repo == "" || len(j.Landed) > 0 || j.HeadSHA == "" || j.HeadSHA == j.BaseSHA {
			continue
		}
		if len(byRepo[j.Repo]) == 0 && len(j.Forecast) == 0 && s.Now().Sub(j.EndedAt) > fresh {
			// Nothing runs beside it and it never had a forecast: an old
			// job, left alone until work starts in its repository again.
			continue
		}
		if perRepo[j.Repo] < maxEnded {
			perRepo[j.Repo]++
			byRepo[j.Repo] = append(byRepo[j.Repo], j)
		}
	}
	keep := map[string]bool{}
	for top, jobs := range byRepo {
		if ctx.Err() != nil {
			return
		}
		keep[storeName(top)] = true
		s.repo(ctx, top, jobs)
	}
	// A repository with nothing left to forecast gives its store back.
	if ents, err := os.ReadDir(s.Paths.ForecastDir()); err == nil {
		for _, e := range ents {
			if !keep[e.Name()] {
				_ = os.RemoveAll(filepath.Join(s.Paths.ForecastDir(), e.Name()))
			}
		}
	}
}

// maxStore bounds a repository's scratch store: past it, the store
// starts afresh (a work tree that keeps changing big files fills it).
const maxStore = 256 << 20

// storeName names a repository's scratch store under the forecast folder.
func storeName(top string) string {
	h := sha256.Sum256([]byte(top))
	return hex.EncodeToString(h[:8])
}

// repo works out the forecasts of jobs, the live jobs of the repository
// at top, and stores those that changed.
func (s *Forecaster) repo(ctx context.Context, top string, jobs []*store.Job) {
	repo, err := gitx.Open(top)
	if err != nil {
		return
	}
	// The store lasts from round to round: a snapshot then reads only the
	// files that changed since the last one, and an unchanged work tree
	// gives the commit the caches already know.
	sc := &gitx.Scratch{Repo: repo, Dir: filepath.Join(s.Paths.ForecastDir(), storeName(top))}
	defer func() {
		if sc.Size() > maxStore {
			// The snapshots go with the store: a job's next round makes its own again.
			_ = sc.Remove()
			s.mu.Lock()
			clear(s.snaps)
			s.mu.Unlock()
		}
	}()
	sides := s.sides(ctx, sc, repo, jobs)
	tips := map[string]string{}
	for _, a := range sides {
		s.store(ctx, a.j, s.forecastOf(ctx, sc, repo, top, tips, a, sides))
	}
}

// sides is each job's side: its branch tip once ended; while it runs, a
// snapshot of its work tree (again once snapshotShare times the last
// one's cost, or snapshotGap, has passed, whichever is shorter). The
// indexes and snapshots of jobs that no longer run go.
func (s *Forecaster) sides(ctx context.Context, sc *gitx.Scratch, repo *gitx.Repo, jobs []*store.Job) []side {
	var err error
	running := map[string]bool{}
	var sides []side
	for _, j := range jobs {
		sd := side{j: j, commit: j.HeadSHA}
		if !j.State.Terminal() {
			running["index-"+j.ID] = true
			s.mu.Lock()
			last, ok := s.snaps[j.ID]
			s.mu.Unlock()
			if ok && time.Since(last.at) < min(snapshotShare*last.took, snapshotGap) {
				sd.commit = last.commit
			} else {
				c := job.Checkout(s.Paths, j, repo)
				t0 := time.Now()
				commit, err := sc.Snapshot(ctx, c, j.BaseSHA, filepath.Join(sc.Dir, "index-"+j.ID))
				if err != nil {
					s.Log.Debug().Err(err).Str("job", j.ID).Msg("forecast: no snapshot")
					continue
				}
				sd.commit = commit
				s.mu.Lock()
				s.snaps[j.ID] = snap{at: t0, took: time.Since(t0), commit: commit}
				s.mu.Unlock()
			}
		}
		if sd.touched, err = s.touchedOf(ctx, sc, j.BaseSHA, sd.commit); err != nil {
			continue
		}
		sides = append(sides, sd)
	}
	// The indexes and snapshots of jobs that no longer run.
	if ents, err := os.ReadDir(sc.Dir); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "index-") && !running[e.Name()] {
				_ = os.Remove(filepath.Join(sc.Dir, e.Name()))
				s.mu.Lock()
				delete(s.snaps, strings.TrimPrefix(e.Name(), "index-"))
				s.mu.Unlock()
			}
		}
	}
	return sides
}

// forecastOf is side a's forecast: what it touched, how far its target
// moved since its base and the conflicts with that tip (tips caches the
// targets' tips for the round), and its conflicts with every other side.
func (s *Forecaster) forecastOf(ctx context.Context, sc *gitx.Scratch, repo *gitx.Repo, top string, tips map[string]string, a side, sides []side) protocol.Forecast {
	fc := protocol.Forecast{Target: a.j.Target, Touched: a.touched, At: s.Now()}
	if n := len(fc.Touched); n > maxTouched {
		fc.Touched, fc.TouchedMore = fc.Touched[:maxTouched], n-maxTouched
	}
	if fc.Target == "" {
		fc.Target = repo.BranchOf("HEAD")
	}
	// The target as it is now: a base it moved away from needs a merge.
	if fc.Target != "" {
		tip, ok := tips[fc.Target]
		if !ok {
			tip, _ = repo.Resolve("refs/heads/" + fc.Target)
			tips[fc.Target] = tip
		}
		if tip != "" && tip != a.j.BaseSHA {
			if up, err := gitx.IsAncestor(ctx, top, tip, a.j.BaseSHA); err == nil && !up {
				fc.Behind, _ = gitx.Count(ctx, top, a.j.BaseSHA, tip)
				moved, err := s.touchedOf(ctx, sc, a.j.BaseSHA, tip)
				if err == nil && gitx.Overlap(moved, a.touched) {
					if files, err := s.conflictsOf(ctx, sc, tip, a.commit); err == nil && len(files) > 0 {
						fc.Conflicts = append(fc.Conflicts, protocol.Conflict{With: "target", Branch: fc.Target, Files: files,
							Line: fmt.Sprintf("%s moved: rebase needed, conflicts in %s", fc.Target, view.PathList(files, 3))})
					}
				}
			}
		}
	}
	// Every other live job of the repository.
	for _, b := range sides {
		if b.j.ID == a.j.ID || !gitx.Overlap(a.touched, b.touched) {
			continue
		}
		ours, theirs := a.commit, b.commit
		if theirs < ours { // one merge for the pair, whichever asks
			ours, theirs = theirs, ours
		}
		files, err := s.conflictsOf(ctx, sc, ours, theirs)
		if err != nil || len(files) == 0 {
			continue
		}
		fc.Conflicts = append(fc.Conflicts, protocol.Conflict{With: b.j.ID, Branch: b.j.Branch, Files: files,
			Line: fmt.Sprintf("conflicts with %s in %s", b.j.Branch, view.PathList(files, 3))})
	}
	return fc
}

// store writes fc as job j's forecast when it says something new,
// with a conflict event when the predicted conflicts changed.
func (s *Forecaster) store(ctx context.Context, j *store.Job, fc protocol.Forecast) {
	var old protocol.Forecast
	if len(j.Forecast) > 0 {
		_ = json.Unmarshal(j.Forecast, &old)
	}
	if old.Target == fc.Target && old.Behind == fc.Behind && slices.Equal(old.Touched, fc.Touched) && old.TouchedMore == fc.TouchedMore &&
		sameConflicts(old.Conflicts, fc.Conflicts) {
		return
	}
	raw, err := json.Marshal(fc)
	if err != nil || bytes.Equal(raw, j.Forecast) {
		return
	}
	var kind protocol.EventKind
	text := ""
	if !sameConflicts(old.Conflicts, fc.Conflicts) {
		kind, text = protocol.EventConflict, view.ConflictLine(&fc)
		if text == "" {
			text = "no conflicts predicted now"
		}
	}
	if _, err := s.Store.SetForecast(ctx, j.ID, raw, kind, text, fc, s.Now()); err != nil {
		s.Log.Debug().Err(err).Str("job", j.ID).Msg("forecast: store")
		return
	}
	if kind != "" {
		s.Changed()
	}
}

func sameConflicts(a, b []protocol.Conflict) bool {
	return slices.EqualFunc(a, b, func(x, y protocol.Conflict) bool {
		return x.With == y.With && slices.Equal(x.Files, y.Files)
	})
}

func (s *Forecaster) touchedOf(ctx context.Context, sc *gitx.Scratch, base, commit string) ([]string, error) {
	key := [2]string{base, commit}
	s.mu.Lock()
	t, ok := s.touched[key]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := sc.Touched(ctx, base, commit)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.touched) > maxCache {
		clear(s.touched)
	}
	s.touched[key] = t
	s.mu.Unlock()
	return t, nil
}

func (s *Forecaster) conflictsOf(ctx context.Context, sc *gitx.Scratch, ours, theirs string) ([]string, error) {
	key := [2]string{ours, theirs}
	s.mu.Lock()
	c, ok := s.conflicts[key]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := sc.Conflicts(ctx, ours, theirs)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.conflicts) > maxCache {
		clear(s.conflicts)
	}
	s.conflicts[key] = c
	s.mu.Unlock()
	return c, nil
}
