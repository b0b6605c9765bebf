package agentcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/agent"
	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/engine"
	"github.com/hub-agents/hub/hub/protocol"
)

// Profile resolves the job's model profile (named, or the default) and its
// key, and checks the provider is one the CLI can speak.
func Profile(configDir, name string, providers ...string) (profile.Profile, string, error) {
	st := profile.Store{Dir: configDir}
	p, err := st.Get(name)
	if errors.Is(err, profile.ErrNoDefault) {
		return p, "", errors.New("no profile named and no default profile set; pass `profile` (`hub profile list` shows them)")
	}
	if err != nil {
		return p, "", err
	}
	ok := false
	for _, pr := range providers {
		ok = ok || p.Provider == pr
	}
	if !ok {
		return p, "", fmt.Errorf("profile %s uses provider %s; this engine speaks to %s endpoints: pick a profile with one of those providers",
			p.Name, p.Provider, strings.Join(providers, " or "))
	}
	key, _, err := st.Key(p)
	if err != nil {
		return p, "", err
	}
	return p, key, nil
}

// BaseURL is the profile's endpoint, its provider's default when unset.
func BaseURL(p profile.Profile) string {
	if p.BaseURL != "" {
		return strings.TrimRight(p.BaseURL, "/")
	}
	return model.DefaultBaseURL[p.Provider]
}

// Pricer prices a CLI's tokens with hub's table (and the user's overrides
// in configDir); a local provider costs nothing.
func Pricer(configDir string, p profile.Profile) func(string) (model.Price, bool) {
	tab, err := model.Prices(filepath.Join(configDir, "prices.json"))
	return func(m string) (model.Price, bool) {
		if p.Provider == profile.Ollama {
			return model.Price{}, true
		}
		if err != nil {
			return model.Price{}, false
		}
		return tab.Lookup(m)
	}
}

// Find locates a CLI: the path in envVar when set, else name on PATH.
func Find(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s=%s is not a program", envVar, p)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not on PATH", name)
	}
	return p, nil
}

// versions remembers what each installed binary said of its version, so
// listing engines does not start every CLI again (OpenCode takes seconds).
var versions sync.Map // "path\x00size\x00mtime" → string

// Version runs `path --version` in a throwaway HOME (a CLI writes its
// state into HOME even for that) and returns its first line. The answer is
// kept while the binary is the same file.
func Version(ctx context.Context, path string) (string, error) {
	var key string
	if fi, err := os.Stat(path); err == nil {
		key = fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
		if v, ok := versions.Load(key); ok {
			return v.(string), nil
		}
	}
	v, err := version(ctx, path)
	if err == nil && key != "" {
		versions.Store(key, v)
	}
	return v, err
}

func version(ctx context.Context, path string) (string, error) {
	home, err := os.MkdirTemp("", "hub-probe-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// A child left holding its output must not hold the probe (nor the
	// engine list waiting on it).
	cmd.WaitDelay = 2 * time.Second
	// In the throwaway home too, not the caller's directory (the daemon's,
	// or the user's shell's for `hub engines`): a CLI that starts instead of
	// answering writes its files there.
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "CODEX_HOME=" + filepath.Join(home, ".codex")}
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", path, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}

// Home makes the CLI's private home inside the job's scratch folder and
// returns the environment for it: the job's worker environment with HOME
// and the XDG folders moved there, a git identity kept (a private HOME has
// no ~/.gitconfig), and extra appended.
func Home(spec engine.Spec, extra ...string) (home string, env []string, err error) {
	home = filepath.Join(spec.Scratch, "home")
	for _, d := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".local", "share"), filepath.Join(home, ".cache"), filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", nil, err
		}
	}
	drop := map[string]bool{"HOME": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "TMPDIR": true}
	have := map[string]bool{}
	for _, kv := range spec.Env {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] {
			continue
		}
		have[k] = true
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"TMPDIR="+filepath.Join(home, "tmp"), "TERM=dumb", "NO_COLOR=1")
	name, email := gitIdentity(spec.Dir)
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_EMAIL": email} {
		if !have[k] && v != "" {
			env = append(env, k+"="+v)
		}
	}
	return home, append(env, extra...), nil
}

// gitIdentity is the user's git name and email as the worktree sees them.
func gitIdentity(dir string) (name, email string) {
	get := func(key string) string {
		cmd := exec.Command("git", "config", "--get", key)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	name, email = get("user.name"), get("user.email")
	if name == "" {
		name = "hub worker"
	}
	if email == "" {
		email = "worker@hub.localhost"
	}
	return name, email
}

// WorkerMCP is how a CLI starts hub's worker MCP server for the job.
type WorkerMCP struct {
	Command string
	Args    []string
	Env     map[string]string
}

// Worker returns the worker MCP server's command for spec.
func Worker(spec engine.Spec) WorkerMCP {
	env := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "HUB_JOB" || k == "HUB_SOCKET" {
			env[k] = v
		}
	}
	return WorkerMCP{Command: spec.HubBinary, Args: []string{"worker-mcp"}, Env: env}
}

// ToolTimeout is how long a CLI must let a call to the worker MCP server
// run: a question waits up to the job's ask timeout for its reply.
func ToolTimeout(spec engine.Spec) time.Duration {
	return time.Duration(spec.Params.AskTimeoutS+60) * time.Second
}

// Prompt is the task as a CLI worker gets it, in one prompt: built by
// the one builder every worker's prompt comes from, with hub's tools named
// as the CLI names them (toolPrefix).
func Prompt(spec engine.Spec, toolPrefix string) string {
	p := spec.Params
	return agent.Worker{ToolPrefix: toolPrefix}.Prompt(agent.Brief{Task: p.Task, Files: p.Files,
		DefinitionOfDone: p.DefinitionOfDone, Verify: p.Verify, Write: p.Kind != protocol.KindRead}).User
}

// Program names an agent CLI for the checks every CLI engine makes.
type Program struct {
	Engine  string // the engine's name
	Binary  string // the command on PATH
	PathEnv string // the variable that overrides where it is
	Product string // its name for people
	Install string // the command that installs it
	// Unversioned: the program is not asked its version (a user-defined
	// agent may not know --version, and would start instead).
	Unversioned bool
}

// Probe says whether the CLI is installed here, and its version.
func (p Program) Probe(ctx context.Context) engine.Availability {
	path, err := Find(p.Binary, p.PathEnv)
	if err != nil {
		return engine.Availability{Reason: err.Error() + "; install it with " + p.Install}
	}
	if p.Unversioned {
		if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
			return engine.Availability{Reason: path + " is not an executable program; install it with " + p.Install}
		}
		return engine.Availability{Available: true}
	}
	v, err := Version(ctx, path)
	if err != nil {
		return engine.Availability{Reason: err.Error()}
	}
	return engine.Availability{Available: true, Version: v}
}

// Check refuses what no CLI engine takes (a shell command for the exec
// engine) and a CLI that is not installed.
func (p Program) Check(spec protocol.StartParams) error {
	if spec.Exec != "" {
		return fmt.Errorf("exec is for the exec engine; the %s engine takes a task (drop exec, or pick engine exec)", p.Engine)
	}
	if _, err := Find(p.Binary, p.PathEnv); err != nil {
		return fmt.Errorf("%v; install %s (%s) or pick another engine", err, p.Product, p.Install)
	}
	return nil
}
