package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// Device-flow logins run here, in the daemon: the CLI and the MCP server
// only start one, show its code to the user, and wait. The device code and
// the tokens never leave agent/oauth and the token file; what goes back is
// the address and the user code, for the user's eyes.

// logins are the flows started since the daemon started, the last one per profile.
type logins struct {
	mu sync.Mutex
	m  map[string]*loginFlow
}

type loginFlow struct {
	name, provider string
	flow           *oauth.Flow
	cancel         context.CancelFunc
	done           chan struct{}
	// state and detail change once, from pending to the end (under logins.mu).
	state, detail string
}

// end sets the flow's final state unless it has one. The caller holds logins.mu.
func (f *loginFlow) end(state, detail string) bool {
	if f.state != protocol.LoginPending {
		return false
	}
	f.state, f.detail = state, detail
	f.cancel()
	close(f.done)
	return true
}

func (f *loginFlow) result() *protocol.ProfileLoginResult {
	r := &protocol.ProfileLoginResult{Name: f.name, Provider: f.provider, State: f.state, Detail: f.detail}
	if f.state == protocol.LoginPending {
		r.VerificationURI, r.UserCode = f.flow.VerificationURI, f.flow.UserCode
		r.ExpiresInS = max(0, time.Until(f.flow.ExpiresAt).Round(time.Second).Seconds())
		r.Detail = fmt.Sprintf("waiting for the user to enter the code at %s", f.flow.VerificationURI)
	}
	return r
}

// pendingLogin returns a profile's login that waits for its user, if any.
func (s *Server) pendingLogin(name string) (*protocol.ProfileLoginResult, bool) {
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	if f := s.logins.m[name]; f != nil && f.state == protocol.LoginPending {
		return f.result(), true
	}
	return nil, false
}

func (s *Server) ProfileLogin(ctx context.Context, p protocol.ProfileLoginParams) (*protocol.ProfileLoginResult, error) {
	st := s.profiles()
	pr, err := st.Get(p.Name)
	if err != nil {
		return nil, profileErr(err)
	}
	if !pr.LogsIn() {
		return nil, invalid("name", "make one with hub profile set NAME --provider copilot --model gpt-4.1, then hub profile login NAME",
			"profile %s (%s) does not log in; only %s and %s profiles do", pr.Name, pr.Provider, profile.Copilot, profile.ChatGPT)
	}
	switch {
	case p.Cancel:
		s.logins.mu.Lock()
		defer s.logins.mu.Unlock()
		f := s.logins.m[pr.Name]
		if f == nil {
			return &protocol.ProfileLoginResult{Name: pr.Name, Provider: pr.Provider, State: protocol.LoginNone,
				Detail: "no login was under way"}, nil
		}
		f.end(protocol.LoginCancelled, "the login was cancelled; nothing was stored")
		return f.result(), nil
	case p.Wait:
		return s.waitLogin(ctx, pr, p.TimeoutS), nil
	}
	return s.startLogin(ctx, st, pr)
}

func (s *Server) startLogin(ctx context.Context, st profile.Store, pr profile.Profile) (*protocol.ProfileLoginResult, error) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	fl, err := oauth.Start(sctx, nil, pr.Provider, pr.LoginURL)
	if err != nil {
		return nil, rpc.Errorf(protocol.CodeUnavailable, "check the network (and the profile's login_url), then try again",
			"start the login of %s: %v", pr.Name, err)
	}
	fctx, fcancel := context.WithDeadline(s.loginCtx, fl.ExpiresAt.Add(5*time.Second))
	f := &loginFlow{name: pr.Name, provider: pr.Provider, flow: fl, cancel: fcancel, done: make(chan struct{}), state: protocol.LoginPending}
	s.logins.mu.Lock()
	if old := s.logins.m[pr.Name]; old != nil {
		old.end(protocol.LoginReplaced, "a newer login of this profile replaced this one: follow that one's code")
	}
	s.logins.m[pr.Name] = f
	res := f.result()
	s.logins.mu.Unlock()
	go s.runLogin(fctx, st, pr, f)
	return res, nil
}

// runLogin polls until the flow ends and stores the tokens.
func (s *Server) runLogin(ctx context.Context, st profile.Store, pr profile.Profile, f *loginFlow) {
	tok, err := f.flow.Wait(ctx)
	if err == nil {
		// Stored only while this flow is still the profile's pending one.
		s.logins.mu.Lock()
		if f.state != protocol.LoginPending {
			s.logins.mu.Unlock()
			return
		}
		// Under the lock, so a newer login cannot begin meanwhile; bounded.
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = oauth.Finish(fctx, nil, st.Logins(), pr.Name, pr.LoginURL, tok)
		cancel()
		if err == nil {
			what := "GitHub Copilot"
			if pr.Provider == profile.ChatGPT {
				what = "ChatGPT"
			}
			f.end(protocol.LoginDone, fmt.Sprintf("profile %s is logged in to %s; builtin jobs with profile %s use it", pr.Name, what, pr.Name))
			s.logins.mu.Unlock()
			s.o.Log.Info().Str("profile", pr.Name).Msg("device login done")
			return
		}
		s.logins.mu.Unlock()
	}
	state, detail := protocol.LoginFailed, fmt.Sprintf("the login failed: %v; run hub profile login %s to try again", err, pr.Name)
	switch {
	case errors.Is(err, oauth.ErrDenied):
		state, detail = protocol.LoginDenied, fmt.Sprintf("the login was denied at %s; run hub profile login %s to try again", f.flow.VerificationURI, pr.Name)
	case errors.Is(err, oauth.ErrExpired), errors.Is(err, context.DeadlineExceeded):
		state, detail = protocol.LoginExpired, fmt.Sprintf("the code expired before it was entered; run hub profile login %s again and enter the new code at %s", pr.Name, f.flow.VerificationURI)
	case errors.Is(err, context.Canceled):
		state, detail = protocol.LoginCancelled, fmt.Sprintf("the daemon stopped during the login; nothing was stored: run hub profile login %s again", pr.Name)
	}
	s.logins.mu.Lock()
	f.end(state, detail)
	s.logins.mu.Unlock()
	s.o.Log.Info().Str("profile", pr.Name).Str("state", state).Msg("device login ended")
}

// waitLogin waits for the profile's last login to end (or timeoutS, or ctx).
func (s *Server) waitLogin(ctx context.Context, pr profile.Profile, timeoutS float64) *protocol.ProfileLoginResult {
	s.logins.mu.Lock()
	f := s.logins.m[pr.Name]
	s.logins.mu.Unlock()
	if f == nil {
		return &protocol.ProfileLoginResult{Name: pr.Name, Provider: pr.Provider, State: protocol.LoginNone,
			Detail: fmt.Sprintf("no login of %s is under way (the daemon may have restarted since one began); start one with hub profile login %s", pr.Name, pr.Name)}
	}
	var timeout <-chan time.Time
	if timeoutS > 0 {
		t := time.NewTimer(time.Duration(timeoutS * float64(time.Second)))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-f.done:
	case <-timeout:
	case <-ctx.Done():
	}
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	return f.result()
}

// endLogins ends every login that waits, as the daemon stops: its waiters
// hear so at once rather than hold the shutdown up.
func (s *Server) endLogins() {
	s.logins.mu.Lock()
	defer s.logins.mu.Unlock()
	for name, f := range s.logins.m {
		f.end(protocol.LoginCancelled, fmt.Sprintf("the daemon stopped during the login; nothing was stored: run hub profile login %s again", name))
	}
}
