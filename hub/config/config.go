// Package config owns where hub keeps things (HUB_HOME and the config
// directory) and the settings a user can change: limits, caps and default
// timeouts. It reads the environment and ~/.config/hub/config.json; it never
// writes the user's files except to create HUB_HOME.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hub-agents/hub/internal/strictjson"
	"github.com/hub-agents/hub/router"
)

// Paths locates everything under one HUB_HOME.
type Paths struct {
	Home string
}

// DefaultHome returns HUB_HOME, else $XDG_DATA_HOME/hub, else ~/.local/share/hub.
func DefaultHome() (string, error) {
	if h := os.Getenv("HUB_HOME"); h != "" {
		return filepath.Abs(h)
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "hub"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a home directory for hub's data: %w; set HUB_HOME", err)
	}
	return filepath.Join(home, ".local", "share", "hub"), nil
}

// Resolve returns the Paths for HUB_HOME (or its default).
func Resolve() (Paths, error) {
	h, err := DefaultHome()
	if err != nil {
		return Paths{}, err
	}
	return Paths{Home: h}, nil
}

// Ensure creates HUB_HOME with mode 0700 (tightening it when it is ours and
// looser). It refuses a HUB_HOME inside a git working tree (see
// OutsideGit) before it makes anything. The daemon calls it when it
// starts, and so does every hub command that starts a daemon.
func (p Paths) Ensure() error {
	if err := p.OutsideGit(); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Home, 0o700); err != nil {
		return fmt.Errorf("create HUB_HOME %s: %w", p.Home, err)
	}
	fi, err := os.Stat(p.Home)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(p.Home, 0o700); err != nil {
			return fmt.Errorf("HUB_HOME %s must be mode 0700: %w", p.Home, err)
		}
	}
	for _, d := range []string{p.JobsDir(), p.WorktreesDir(), p.LocksDir(), p.LogsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// ErrInGitCheckout means HUB_HOME lies inside a git working tree.
var ErrInGitCheckout = errors.New("HUB_HOME is inside a git checkout")

// OutsideGit refuses a HUB_HOME inside a git working tree: hub keeps the
// jobs' worktrees and hub.db there, and a commit in that checkout (a
// dotfiles repository holding ~/.local/share, the job's own repository)
// could take them in. It looks as git does when run in HUB_HOME: in
// HUB_HOME and then each folder above it for a .git (a directory with a
// HEAD, or a gitfile pointing to one), symlinks resolved, never going up
// into a folder named in GIT_CEILING_DIRECTORIES. What lies below HUB_HOME
// (the jobs' worktrees) does not count.
func (p Paths) OutsideGit() error {
	home, err := filepath.Abs(p.Home)
	if err != nil {
		return err
	}
	home = resolveExisting(home)
	ceilings := map[string]bool{}
	for _, c := range filepath.SplitList(os.Getenv("GIT_CEILING_DIRECTORIES")) {
		if filepath.IsAbs(c) {
			ceilings[filepath.Clean(c)] = true
			ceilings[resolveExisting(filepath.Clean(c))] = true
		}
	}
	for dir := home; ; {
		if top := gitTop(dir); top != "" {
			return fmt.Errorf("%w: HUB_HOME %s is inside the git checkout %s, where a commit could take in hub's worktrees and its database; "+
				"set HUB_HOME to a folder outside any git checkout", ErrInGitCheckout, p.Home, top)
		}
		up := filepath.Dir(dir)
		if up == dir || ceilings[up] {
			return nil
		}
		dir = up
	}
}

// gitTop returns dir when it holds a .git: a git directory (it has a HEAD)
// or a gitfile ("gitdir: <path>", a linked worktree's or a submodule's).
func gitTop(dir string) string {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(dotgit, "HEAD")); err != nil {
			return ""
		}
	case fi.Mode().IsRegular():
		b := make([]byte, len("gitdir:"))
		f, err := os.Open(dotgit)
		if err != nil {
			return ""
		}
		n, _ := f.Read(b)
		f.Close()
		if string(b[:n]) != "gitdir:" {
			return ""
		}
	default:
		return ""
	}
	return dir
}

// resolveExisting resolves the symlinks of path's longest existing prefix,
// so a HUB_HOME not made yet is placed where it will be.
func resolveExisting(path string) string {
	var rest []string
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(p) == p {
			return path
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

func (p Paths) DB() string           { return filepath.Join(p.Home, "hub.db") }
func (p Paths) Socket() string       { return filepath.Join(p.Home, "hub.sock") }
func (p Paths) DaemonLock() string   { return filepath.Join(p.Home, "hub.lock") }
func (p Paths) JobsDir() string      { return filepath.Join(p.Home, "jobs") }
func (p Paths) WorktreesDir() string { return filepath.Join(p.Home, "worktrees") }
func (p Paths) LocksDir() string     { return filepath.Join(p.Home, "locks") }
func (p Paths) LogsDir() string      { return filepath.Join(p.Home, "logs") }
func (p Paths) DaemonLog() string    { return filepath.Join(p.LogsDir(), "daemon.log") }
func (p Paths) MCPLog() string       { return filepath.Join(p.LogsDir(), "mcp.log") }
func (p Paths) MCPToken() string     { return filepath.Join(p.Home, "mcp-token") }

func (p Paths) JobDir(id string) string     { return filepath.Join(p.JobsDir(), id) }
func (p Paths) ShimSocket(id string) string { return filepath.Join(p.JobDir(id), "shim.sock") }
func (p Paths) ShimLock(id string) string   { return filepath.Join(p.JobDir(id), "shim.lock") }
func (p Paths) ShimLog(id string) string    { return filepath.Join(p.JobDir(id), "shim.log") }
func (p Paths) WorkerLog(id string) string  { return filepath.Join(p.JobDir(id), "worker.log") }

// EngineHome is the job's private folder for its engine's own files (an
// agent CLI's config home).
func (p Paths) EngineHome(id string) string { return filepath.Join(p.JobDir(id), "engine") }
func (p Paths) Worktree(id string) string   { return filepath.Join(p.WorktreesDir(), id) }

// LandTree is where landing replays job id's commits (mode rebase), made
// and removed by the landing.
func (p Paths) LandTree(id string) string { return filepath.Join(p.WorktreesDir(), id+".land") }

func (p Paths) VerifyTree(id string) string {
	return filepath.Join(p.WorktreesDir(), id+".verify")
}

// Settings are the knobs a user sets in config.json or the environment
// (the environment wins).
type Settings struct {
	MaxRunning     int     `json:"max_running"`      // HUB_MAX_RUNNING, default 4
	MonthlyCapUSD  float64 `json:"monthly_cap_usd"`  // HUB_MONTHLY_CAP_USD, default 100
	DefaultMaxUSD  float64 `json:"default_max_usd"`  // HUB_DEFAULT_MAX_USD, default 2
	MaxJobUSD      float64 `json:"max_job_usd"`      // HUB_MAX_JOB_USD, default 20
	TimeoutS       int     `json:"timeout_s"`        // HUB_TIMEOUT_S, default 1800
	VerifyTimeoutS int     `json:"verify_timeout_s"` // HUB_VERIFY_TIMEOUT_S, default 600
	SetupTimeoutS  int     `json:"setup_timeout_s"`  // HUB_SETUP_TIMEOUT_S, default 900: a job's install and setup command, each
	AskTimeoutS    int     `json:"ask_timeout_s"`    // HUB_ASK_TIMEOUT_S, default 600
	StallTimeoutS  int     `json:"stall_timeout_s"`  // HUB_STALL_TIMEOUT_S, default 600
	// JobRetentionDays is how long after it ended a job's worktree, branch,
	// engine folder and logs stay before `hub gc` collects them.
	JobRetentionDays int `json:"job_retention_days"` // HUB_JOB_RETENTION_DAYS, default 30
	// Limits of a job at isolated and untrusted (see protocol.Limits), and
	// the largest file hub commits at any level.
	LimitProcesses int `json:"limit_processes"` // HUB_LIMIT_PROCESSES, default 1024 (threads count)
	LimitMemoryMB  int `json:"limit_memory_mb"` // HUB_LIMIT_MEMORY_MB, default 8192
	LimitDiskMB    int `json:"limit_disk_mb"`   // HUB_LIMIT_DISK_MB, default 20480
	MaxFileMB      int `json:"max_file_mb"`     // HUB_MAX_FILE_MB, default 100
	// Agents are user-defined ACP agents, each an engine of its name.
	Agents map[string]Agent `json:"agents,omitempty"`
	// Queues are remote queues: a job started with their name runs on
	// another machine, through the queue's runner (see Queue).
	Queues map[string]Queue `json:"queues,omitempty"`
}

// Defaults returns the built-in settings.
func Defaults() Settings {
	return Settings{MaxRunning: 4, MonthlyCapUSD: 100, DefaultMaxUSD: 2, MaxJobUSD: 20,
		TimeoutS: 1800, VerifyTimeoutS: 600, SetupTimeoutS: 900, AskTimeoutS: 600, StallTimeoutS: 600, JobRetentionDays: 30,
		LimitProcesses: 1024, LimitMemoryMB: 8192, LimitDiskMB: 20480, MaxFileMB: 100}
}

// ConfigDir returns HUB_CONFIG_DIR, else $XDG_CONFIG_HOME/hub, else ~/.config/hub.
func ConfigDir() string {
	if d := os.Getenv("HUB_CONFIG_DIR"); d != "" {
		return d
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "hub")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "hub")
}

// Load reads config.json (absent is fine, corrupt is an error) and then the
// environment. It is cheap enough to call per request, so changes need no restart.
func Load() (Settings, error) {
	s := Defaults()
	path := filepath.Join(ConfigDir(), "config.json")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := strictjson.Decode(b, &s); err != nil {
			var uk *strictjson.UnknownKeyError
			if errors.As(err, &uk) {
				return s, fmt.Errorf("config %s: %w; fix it", path, err)
			}
			return s, fmt.Errorf("config %s is not valid JSON (%v); fix or remove it", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return s, fmt.Errorf("read config %s: %w", path, err)
	}
	// The daemon reads this; a bad variable there stopped it from starting
	// (CheckEnv), so an error here names config.json, or says whose
	// environment the variable is in.
	if err := applyEnv(&s, FromDaemon); err != nil {
		return s, err
	}
	if err := check(s, path, FromDaemon); err != nil {
		return s, err
	}
	if err := checkAgents(s.Agents, path); err != nil {
		return s, err
	}
	if err := checkQueues(s.Queues, path); err != nil {
		return s, err
	}
	return s, nil
}

// Seconds turns a setting into a duration.
func Seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// RoutingPath is routing.json: HUB_ROUTING, else routing.json in the config directory.
func RoutingPath() string {
	if p := os.Getenv("HUB_ROUTING"); p != "" {
		return p
	}
	return filepath.Join(ConfigDir(), "routing.json")
}

// LoadRouting reads routing.json (absent means the defaults; corrupt is an
// error that says which file).
func LoadRouting() (router.Weights, error) {
	path := RoutingPath()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return router.DefaultWeights(), nil
	}
	if err != nil {
		return router.Weights{}, fmt.Errorf("read %s: %w", path, err)
	}
	w, err := router.ParseWeights(b)
	if err != nil {
		return router.Weights{}, fmt.Errorf("%s: %v; fix it, or remove it for the defaults", path, err)
	}
	return w, nil
}

// ForecastDir holds the forecast's scratch object stores, each removed
// after its round.
func (p Paths) ForecastDir() string { return filepath.Join(p.Home, "forecast") }
