package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine/builtin"
	"github.com/hub-agents/hub/hub/gitx"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/view"
	"github.com/hub-agents/hub/internal/micros"
)

// stepMaxUSD is what a narration may cost when the caller names no bound.
const stepMaxUSD = 0.05

// stepWait is how long Step waits for the account when the caller names no bound.
const stepWait = 10 * time.Minute

// Step starts a read job on the step engine at the work tree as it is, and
// waits for its account. The work tree is taken as a commit of its own
// (gitx.WorkTreeCommit: no ref, index or file of the user's changes) when it
// has uncommitted changes, so the check runs on what the step left, in a
// checkout of hub's, with the project's dependencies made ready as for any job.
func (s *Server) Step(ctx context.Context, p protocol.StepParams) (*protocol.StepResult, error) {
	switch {
	case strings.TrimSpace(p.Claim) == "":
		return nil, invalid("claim", "say what the step did, as statements hub can check (\"Fixed the loader. The tests pass.\")", "claim is empty")
	case strings.TrimSpace(p.Repo) == "":
		return nil, invalid("repo", "pass the repository the step worked in", "repo is empty")
	case !filepath.IsAbs(p.Repo):
		return nil, invalid("repo", "pass an absolute path", "repo %q is not an absolute path", p.Repo)
	case p.TimeoutS < 0 || p.TimeoutS > 3600:
		return nil, invalid("timeout_s", "pass 1 to 3600 seconds, or leave it out for 600", "timeout_s %d is out of range", p.TimeoutS)
	}
	out, err := gitx.Git(ctx, p.Repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, invalid("repo", "pass a directory inside a git repository", "%s is not in a git repository: %v", p.Repo, err)
	}
	top := strings.TrimSpace(string(out))
	since := p.Since
	if since == "" {
		since = "HEAD"
	}
	out, err = gitx.Git(ctx, top, "rev-parse", "--verify", "--end-of-options", since+"^{commit}")
	if err != nil {
		return nil, invalid("since", "pass a commit of the repository (a SHA, a branch, HEAD~3), or leave it out for HEAD", "since %q is not a commit of %s", since, top)
	}
	sinceSHA := strings.TrimSpace(string(out))
	base, err := gitx.Head(ctx, top)
	if err != nil {
		return nil, invalid("repo", "make a first commit, then ask again", "%s has no commit yet: %v", top, err)
	}
	if st, err := gitx.Git(ctx, top, "status", "--porcelain", "--untracked-files=normal"); err != nil {
		return nil, internal(err)
	} else if len(strings.TrimSpace(string(st))) > 0 {
		if base, err = gitx.WorkTreeCommit(ctx, top, builtin.StepSnapshot, gitx.HubIdentity); err != nil {
			return nil, internal(err)
		}
	}
	title := strings.TrimSpace(p.Title)
	if title == "" { // the claim's first sentence
		title = view.FirstLine(p.Claim, 60)
		if i := strings.IndexAny(title, ".!?"); i > 0 {
			title = title[:i]
		}
	}
	prof, err := s.stepProfile(p.Profile)
	if err != nil {
		return nil, err
	}
	maxUSD := stepMaxUSD
	if p.MaxUSD != nil {
		maxUSD = *p.MaxUSD
	}
	r, err := s.JobStart(ctx, protocol.StartParams{Task: builtin.StepTask(title, sinceSHA, p.Claim), Repo: top, Base: base,
		Kind: protocol.KindRead, Engine: builtin.StepName, Profile: prof, Verify: p.Check, MaxUSD: &maxUSD})
	if err != nil {
		return nil, err
	}
	wait := stepWait
	if p.TimeoutS > 0 {
		wait = time.Duration(p.TimeoutS) * time.Second
	}
	w, err := s.JobWait(ctx, protocol.WaitParams{IDs: []string{r.ID}, TimeoutS: wait.Seconds()})
	if err != nil {
		return nil, err
	}
	j, err := s.st.Job(ctx, r.ID)
	if err != nil {
		return nil, internal(err)
	}
	res := &protocol.StepResult{ID: j.ID, State: j.State, Cost: w.Jobs[0].Cost}
	switch {
	case j.State == protocol.StateSucceeded:
		res.Text = s.secrets().String(j.Summary)
		res.Disagree = strings.Contains(j.Summary, builtin.StepDisagree)
	case j.State.Terminal():
		res.Text = "the step could not be narrated: " + s.secrets().String(j.Error)
	default:
		res.Text = "still narrating after " + wait.String() + "; hub result " + j.ID + " has the account once it ends"
	}
	return res, nil
}

// stepProfile is the profile that narrates a step: the one named, else the
// cheapest priced profile whose key (or login) is there — a local model or
// a subscription costs nothing per call — (input weighted as a
// narration reads it: a diff in, a few lines out). A scripted profile plays
// its script, so it narrates only when named.
func (s *Server) stepProfile(name string) (string, error) {
	if name != "" {
		return name, nil // the step engine's Check says what is wrong with it
	}
	st := s.profiles()
	ps, def, err := st.List()
	if err != nil {
		return "", profileErr(err)
	}
	prices, err := model.Prices(filepath.Join(s.o.ConfigDir, "prices.json"))
	if err != nil {
		return "", internal(err)
	}
	best, bestCost := "", micros.Micros(-1)
	for _, p := range ps {
		if p.Provider == profile.Scripted || p.Provider == profile.Gemini {
			continue // a script, or an API the built-in client does not speak
		}
		if _, _, err := st.Key(p); err != nil {
			continue
		}
		cost := micros.Micros(0) // a local model, or a subscription (calls cost nothing more)
		if p.Provider != profile.Ollama && !p.LogsIn() {
			pr, ok := prices.Lookup(p.Model)
			if !ok {
				continue
			}
			cost = pr.InputPerM*16 + pr.OutputPerM
		}
		if bestCost < 0 || cost < bestCost || cost == bestCost && p.Name == def {
			best, bestCost = p.Name, cost
		}
	}
	if best == "" {
		if def != "" {
			return def, nil // unpriced: its cost is unknown and the whole bound is charged
		}
		return "", invalid("profile", "name a profile, or set one up: hub profile set NAME --provider openai --model MODEL",
			"no profile can narrate: none has a price and its key, and there is no default")
	}
	return best, nil
}
