package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hub-agents/hub/hub/engine/agentcli"
	"github.com/hub-agents/hub/hub/internal/pathx"
	"github.com/hub-agents/hub/hub/protocol"
)

// handle answers what the agent sends hub: its updates, its permission
// requests; anything else is a method hub does not offer.
func (r *run) handle(_ context.Context, method string, params json.RawMessage) (any, *sdk.RequestError) {
	switch method {
	case sdk.ClientMethodSessionUpdate:
		if os.Getenv("HUB_ACP_DEBUG") != "" {
			r.rec.Log("[raw] " + string(params))
		}
		r.st.take(params)
		return nil, nil
	case sdk.ClientMethodSessionRequestPermission:
		return r.permission(params)
	}
	if r.st.firstCall(method) {
		r.rec.Log("[acp] the agent called " + agentcli.OneLine(method, 80) + ", which hub does not offer")
	}
	return nil, sdk.NewMethodNotFound(method)
}

// permission answers session/request_permission by the job's policy.
func (r *run) permission(params json.RawMessage) (any, *sdk.RequestError) {
	var req sdk.RequestPermissionRequest
	if err := json.Unmarshal(params, &req); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	tc := req.ToolCall
	var in update
	in.fill(tc.RawInput, nil, tc.Locations, nil)
	title := ""
	if tc.Title != nil {
		title = *tc.Title
	}
	kind := ""
	if tc.Kind != nil {
		kind = string(*tc.Kind)
	}
	r.st.learn(string(tc.ToolCallId), title, kind, in.command, in.paths)
	kind, paths := r.st.kindOf(string(tc.ToolCallId))
	if title = agentcli.OneLine(title, 120); title == "" {
		title = kind
	}
	allow, why := r.decide(kind, in.command, paths)
	id, verb := choose(req.Options, allow)
	if !allow {
		r.rec.Note(fmt.Sprintf("refused the agent's %s: %s", title, why))
	} else if why != "" {
		r.rec.Note(fmt.Sprintf("allowed the agent's %s: %s", title, why))
	} else {
		r.rec.Log(fmt.Sprintf("[hub] allowed %s", title))
	}
	if id == "" {
		r.rec.Log("[hub] the agent offered no option to " + verb + "; cancelled the request")
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(id)}}}, nil
}

// decide is the policy: a read job changes nothing, no job fetches from the
// web, and nothing writes outside the job's worktree. Allowing a read
// outside it is said, never silent (the sandboxed levels enforce the rest).
func (r *run) decide(kind, command string, paths []string) (allow bool, why string) {
	if r.stopping() {
		return false, "the job is stopping"
	}
	read := r.spec.Params.Kind == protocol.KindRead
	switch sdk.ToolKind(kind) {
	case sdk.ToolKindFetch:
		return false, "workers do not fetch from the web"
	case sdk.ToolKindEdit, sdk.ToolKindDelete, sdk.ToolKindMove:
		if read {
			return false, "a read job changes no file"
		}
	case sdk.ToolKindExecute:
		if read {
			return false, "a read job runs no command"
		}
	}
	writes := !(kind == string(sdk.ToolKindRead) || kind == string(sdk.ToolKindSearch) || kind == string(sdk.ToolKindThink))
	var outside []string
	for _, p := range paths {
		if !r.inside(p) {
			outside = append(outside, p)
		}
	}
	if len(outside) > 0 {
		if writes {
			return false, "it names " + strings.Join(outside, ", ") + ", outside the job's worktree"
		}
		return true, "a read outside the job's worktree: " + strings.Join(outside, ", ")
	}
	return true, ""
}

// inside reports whether path, as the agent names it (relative to the
// worktree, or absolute), lies in the job's worktree once symbolic links
// are followed as far as they exist.
func (r *run) inside(path string) bool {
	root := r.spec.Dir
	if rr, err := filepath.EvalSymlinks(root); err == nil {
		root = rr
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.spec.Dir, path)
	}
	_, ok := pathx.Under(root, resolve(filepath.Clean(path)))
	return ok
}

// resolve follows the symbolic links of the longest part of p that exists,
// and keeps the rest as named.
func resolve(p string) string {
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if _, err := os.Lstat(cur); err == nil {
			return p // a dangling link: judged as named, outside when it points out
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// choose is the option that allows (once, else always) or rejects (once,
// else always); "" when the agent offered none of that sort.
func choose(opts []sdk.PermissionOption, allow bool) (id, verb string) {
	prefer := []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	verb = "allow"
	if !allow {
		prefer = []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
		verb = "reject"
	}
	for _, k := range prefer {
		for _, o := range opts {
			if o.Kind == k {
				return string(o.OptionId), verb
			}
		}
	}
	return "", verb
}
