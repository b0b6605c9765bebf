package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hub-agents/hub/hub/protocol"
)

type profilesIn struct {
	Action      string   `json:"action,omitempty" jsonschema:"list|status|set|remove|default|login"`
	Name        string   `json:"name,omitempty"`
	Provider    string   `json:"provider,omitempty" jsonschema:"openai|anthropic|ollama"`
	BaseURL     string   `json:"base_url,omitempty"`
	Model       string   `json:"model,omitempty"`
	Fallbacks   []string `json:"fallbacks,omitempty"`
	KeyEnv      string   `json:"key_env,omitempty"`
	MakeDefault bool     `json:"make_default,omitempty"`
}

// profilesOut is what every action returns: the profiles as they are now.
type profilesOut struct {
	Profiles []protocol.ProfileInfo    `json:"profiles"`
	Default  string                    `json:"default,omitempty"`
	Status   []protocol.ProviderStatus `json:"status,omitempty"`
}

// keyRequest is the id of the elicitation that asks the user for a key;
// loginRequest the one that shows the user a login's code.
const (
	keyRequest   = "api_key"
	loginRequest = "login"
)

func addProfiles(s *Server) {
	addTool(s, &mcp.Tool{
		Name:        "profiles",
		Description: "Worker model profiles; change only as your user asks.",
		Annotations: annotate("", protocol.DaemonSpec.ProfileList, protocol.DaemonSpec.ProfileSet, protocol.DaemonSpec.ProfileRemove, protocol.DaemonSpec.ProfileDefault, protocol.DaemonSpec.ProviderStatus, protocol.DaemonSpec.ProfileLogin),
	}, s.profilesTool)
}

func (s *Server) profilesTool(ctx context.Context, req *mcp.CallToolRequest, in profilesIn) (*mcp.CallToolResult, *profilesOut, error) {
	out := &profilesOut{}
	switch in.Action {
	case "", "list":
	case "status":
		st, err := s.daemon().ProviderStatus(ctx, protocol.ProfileNameParams{Name: in.Name})
		if err != nil {
			return nil, nil, err
		}
		out.Status = st.Profiles
	case "remove", "default":
		if in.Name == "" {
			return nil, nil, &toolErr{"name is required for " + in.Action + ". Pass the profile's name (action list shows them)."}
		}
		p, call := protocol.ProfileNameParams{Name: in.Name}, s.daemon().ProfileRemove
		if in.Action == "default" {
			call = s.daemon().ProfileDefault
		}
		if _, err := call(ctx, p); err != nil {
			return nil, nil, err
		}
	case "set":
		res, err := s.setProfile(ctx, req, in)
		if res != nil || err != nil {
			return res, nil, err
		}
	case "login":
		res, err := s.login(ctx, req, in.Name)
		return res, nil, err
	default:
		return nil, nil, &toolErr{fmt.Sprintf("unknown action %q. Use list, status, set, remove, default or login.", in.Action)}
	}
	list, err := s.daemon().ProfileList(ctx, protocol.Empty{})
	if err != nil {
		return nil, nil, err
	}
	out.Profiles, out.Default = list.Profiles, list.Default
	return text("%s", profilesText(out)), out, nil
}

// setProfile saves the profile. When the provider needs a key and none is
// there, it asks the user through elicitation (a multi-round-trip input
// request), so the key goes from the user to hub without entering the
// model's context. A non-nil result is to be returned as is.
func (s *Server) setProfile(ctx context.Context, req *mcp.CallToolRequest, in profilesIn) (*mcp.CallToolResult, error) {
	p := protocol.ProfileSetParams{MakeDefault: in.MakeDefault, Profile: protocol.ProfileInfo{Name: in.Name, Provider: in.Provider,
		BaseURL: in.BaseURL, Model: in.Model, Fallbacks: in.Fallbacks, KeyEnv: in.KeyEnv}}
	if r, ok := req.Params.InputResponses[keyRequest]; ok {
		er, _ := r.(*mcp.ElicitResult)
		if er == nil || er.Action != "accept" {
			return nil, &toolErr{"The user did not give a key, so nothing was saved. Ask them whether to try again, or to run `hub profile set " + in.Name + " --key-stdin` in a terminal."}
		}
		key, _ := er.Content["key"].(string)
		if strings.TrimSpace(key) == "" {
			return nil, &toolErr{"The key the user gave is empty, so nothing was saved."}
		}
		p.Key = key
	}
	saved, err := s.daemon().ProfileSet(ctx, p)
	if err != nil {
		return nil, err
	}
	if saved.Key != "missing" || p.Key != "" {
		return nil, nil
	}
	if saved.KeyEnv == "" { // a copilot or chatgpt profile: it logs in, it takes no key
		return text("Profile %s is saved and needs a login: call profiles with action=login name=%s (it shows the user a code to enter; never ask them for a token here).",
			saved.Name, saved.Name), nil
	}
	if !canElicit(req) {
		return text("Profile %s is saved but has no key (%s). Your client cannot ask the user for it: ask them to run `hub profile set %s --key-stdin` in a terminal, or to export %s where hub runs. Never ask them to paste the key here.",
			saved.Name, saved.KeyEnv, saved.Name, saved.KeyEnv), nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{keyRequest: &mcp.ElicitParams{
		Message: fmt.Sprintf("hub: the API key for profile %q (%s, stored as %s in hub's env file, mode 0600)", saved.Name, saved.Provider, saved.KeyEnv),
		RequestedSchema: map[string]any{"type": "object", "required": []string{"key"}, "properties": map[string]any{
			"key": map[string]any{"type": "string", "title": "API key", "description": "kept in hub's env file; never shown to the model"}}},
	}}}, nil
}

// login logs a copilot or chatgpt profile in. The daemon runs the device
// flow; the address and the code go to the user through elicitation and
// never into the result (the model's context). Once the user says they
// entered it, the answer is the login's state.
func (s *Server) login(ctx context.Context, req *mcp.CallToolRequest, name string) (*mcp.CallToolResult, error) {
	if name == "" {
		return nil, &toolErr{"name is required for login. Pass the copilot or chatgpt profile's name (action list shows them)."}
	}
	if r, ok := req.Params.InputResponses[loginRequest]; ok {
		if er, _ := r.(*mcp.ElicitResult); er == nil || er.Action != "accept" {
			if _, err := s.daemon().ProfileLogin(ctx, protocol.ProfileLoginParams{Name: name, Cancel: true}); err != nil {
				return nil, err
			}
			return nil, &toolErr{"The user did not complete the login, so it was cancelled and nothing was stored. Ask whether to try again, or to run `hub profile login " + name + "` in a terminal."}
		}
		res, err := s.daemon().ProfileLogin(ctx, protocol.ProfileLoginParams{Name: name, Wait: true, TimeoutS: 20})
		if err != nil {
			return nil, err
		}
		switch res.State {
		case protocol.LoginDone:
			return text("%s", res.Detail), nil
		case protocol.LoginPending:
			return text("The login of %s still waits for the provider; hub keeps polling until the code expires. Check with profiles action=status name=%s.", name, name), nil
		}
		return nil, &toolErr{fmt.Sprintf("Login %s: %s", res.State, res.Detail)}
	}
	if !canElicit(req) {
		return nil, &toolErr{"Your client cannot show the user a login code. Ask them to run `hub profile login " + name + "` in a terminal, then check with profiles action=status."}
	}
	res, err := s.daemon().ProfileLogin(ctx, protocol.ProfileLoginParams{Name: name})
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{loginRequest: &mcp.ElicitParams{
		Message: fmt.Sprintf("hub: to log profile %q in (%s), open %s in a browser and enter the code %s (it expires in %s). Accept once you have entered it; decline to cancel.",
			res.Name, res.Provider, res.VerificationURI, res.UserCode, time.Duration(res.ExpiresInS)*time.Second),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}}}, nil
}

// canElicit says whether the client declared elicitation.
func canElicit(req *mcp.CallToolRequest) bool {
	ip := req.Session.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

func profilesText(o *profilesOut) string {
	var b strings.Builder
	for _, p := range o.Profiles {
		def := ""
		if p.Default {
			def = " (default)"
		}
		fmt.Fprintf(&b, "%s%s: %s %s, key %s\n", p.Name, def, p.Provider, p.Model, p.Key)
	}
	for _, st := range o.Status {
		ok := "usable"
		if !st.Usable {
			ok = "NOT usable"
		}
		fmt.Fprintf(&b, "%s %s: %s\n", st.Profile.Name, ok, st.Detail)
	}
	if o.Default == "" {
		b.WriteString("no default profile: builtin jobs must pass profile\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
