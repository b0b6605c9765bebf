package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// The built-in worker's model profiles. The rules live in agent/profile;
// these handlers only translate. A key passes through here once, on its way
// to the env file: it is never returned, journaled or logged.

func (s *Server) profiles() profile.Store { return profile.Store{Dir: s.o.ConfigDir} }

func profileInfo(st profile.Store, p profile.Profile, def string) protocol.ProfileInfo {
	in := protocol.ProfileInfo{Name: p.Name, Provider: p.Provider, BaseURL: p.BaseURL, Model: p.Model, Fallbacks: p.Fallbacks,
		KeyEnv: p.KeyName(), MaxTokens: p.MaxTokens, ContextWindow: p.ContextWindow, Script: p.Script, LoginURL: p.LoginURL, BuiltIn: p.BuiltIn,
		Default: p.Name == def}
	if _, src, err := st.Key(p); err != nil {
		in.Key = "missing"
	} else {
		in.Key = src
	}
	return in
}

func (s *Server) ProfileList(ctx context.Context, _ protocol.Empty) (*protocol.ProfileListResult, error) {
	st := s.profiles()
	ps, def, err := st.List()
	if err != nil {
		return nil, profileErr(err)
	}
	res := &protocol.ProfileListResult{Profiles: []protocol.ProfileInfo{}, Default: def, ConfigDir: st.Dir}
	for _, p := range ps {
		res.Profiles = append(res.Profiles, profileInfo(st, p, def))
	}
	return res, nil
}

func (s *Server) ProfileSet(ctx context.Context, p protocol.ProfileSetParams) (*protocol.ProfileInfo, error) {
	in := p.Profile
	pr := profile.Profile{Name: in.Name, Provider: in.Provider, BaseURL: in.BaseURL, Model: in.Model, Fallbacks: in.Fallbacks,
		KeyEnv: in.KeyEnv, MaxTokens: in.MaxTokens, ContextWindow: in.ContextWindow, Script: in.Script, LoginURL: in.LoginURL}
	if err := pr.Validate(); err != nil {
		return nil, invalid("profile", "change the profile as the message says", "%v", err)
	}
	if profile.IsBuiltIn(pr.Name) {
		return nil, invalid("profile", "pick another name", "profile %q is built in", pr.Name)
	}
	st := s.profiles()
	if strings.TrimSpace(p.Key) != "" {
		name := pr.KeyName()
		if name == "" {
			return nil, invalid("key", "leave the key out", "provider %s takes no key", pr.Provider)
		}
		// The key first: a profile is never saved pointing at a key that failed to land.
		if err := st.SetKey(name, p.Key); err != nil {
			return nil, invalid("key", "pass the key on one line", "%v", err)
		}
	}
	if err := st.Set(pr); err != nil {
		return nil, profileErr(err)
	}
	if p.MakeDefault {
		if err := st.SetDefault(pr.Name); err != nil {
			return nil, profileErr(err)
		}
	}
	got, err := st.Get(pr.Name)
	if err != nil {
		return nil, profileErr(err)
	}
	_, def, _ := st.List()
	info := profileInfo(st, got, def)
	return &info, nil
}

func (s *Server) ProfileRemove(ctx context.Context, p protocol.ProfileNameParams) (*protocol.ProfileListResult, error) {
	if err := s.profiles().Remove(p.Name); err != nil {
		return nil, profileErr(err)
	}
	return s.ProfileList(ctx, protocol.Empty{})
}

func (s *Server) ProfileDefault(ctx context.Context, p protocol.ProfileNameParams) (*protocol.ProfileListResult, error) {
	if err := s.profiles().SetDefault(p.Name); err != nil {
		return nil, profileErr(err)
	}
	return s.ProfileList(ctx, protocol.Empty{})
}

// ProviderStatus checks every profile (or the one named) side by side.
func (s *Server) ProviderStatus(ctx context.Context, p protocol.ProfileNameParams) (*protocol.ProviderStatusResult, error) {
	st := s.profiles()
	ps, def, err := st.List()
	if err != nil {
		return nil, profileErr(err)
	}
	if p.Name != "" {
		one, err := st.Get(p.Name)
		if err != nil {
			return nil, profileErr(err)
		}
		ps = []profile.Profile{one}
	}
	res := &protocol.ProviderStatusResult{Profiles: make([]protocol.ProviderStatus, len(ps))}
	base := func(pr profile.Profile) string {
		if pr.BaseURL != "" {
			return pr.BaseURL
		}
		return model.DefaultBaseURL[pr.Provider]
	}
	var wg sync.WaitGroup
	for i, pr := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := st.Check(ctx, pr, http.DefaultClient, base)
			ps := protocol.ProviderStatus{Profile: profileInfo(st, pr, def), KeySource: c.KeySource,
				Reachable: c.Reachable, Usable: c.Usable(), Detail: c.Detail, Login: c.Login}
			if l, ok := s.pendingLogin(pr.Name); ok {
				ps.Login = protocol.LoginPending
				ps.Detail += fmt.Sprintf("; a login waits for its user (its code expires in %s)", time.Duration(l.ExpiresInS)*time.Second)
			}
			res.Profiles[i] = ps
		}()
	}
	wg.Wait()
	return res, nil
}

func profileErr(err error) error {
	switch {
	case errors.Is(err, profile.ErrNoDefault):
		return invalid("name", "name a profile, or set a default with hub profile default NAME", "%v", err)
	case errors.Is(err, profile.ErrNotFound):
		return rpc.Errorf(protocol.CodeNotFound, "see hub profile list", "%v", err)
	case errors.Is(err, profile.ErrBuiltIn), errors.Is(err, profile.ErrInvalid):
		return invalid("profile", "change the profile as the message says", "%v", err)
	}
	return rpc.Errorf(protocol.CodeUnavailable, "fix or remove the file the message names", "%v", err)
}
