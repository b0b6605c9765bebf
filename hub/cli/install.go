package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/install"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/rpc"
)

// hintError is a local error with the command that fixes it, printed the
// way report prints a daemon error's hint.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + "\nhint: " + e.hint }
func (e *hintError) Unwrap() error { return e.err }

type installOptions struct {
	client string
	yes    bool
	dryRun bool
}

func newInstallCmd(ios *IO) *cobra.Command {
	o := &installOptions{}
	cmd := &cobra.Command{
		Use:   "install --client claude|codex|opencode|gemini|qwen|all [--yes] [--dry-run]",
		Short: "Set hub up in an agent client: its MCP server entry and a delegation skill",
		Long: `Set hub up in an agent client, user-wide: the client's MCP server entry for hub
(this hub binary, run as "hub mcp") and a short delegation skill that teaches the
client when and how to hand tasks to hub.

  claude    ~/.claude.json mcpServers.hub, and ~/.claude/skills/hub-delegate/SKILL.md
  codex     $CODEX_HOME/config.toml [mcp_servers.hub], and a marked block in $CODEX_HOME/AGENTS.md
  opencode  ~/.config/opencode/opencode.json(c) mcp.hub, and a marked block in ~/.config/opencode/AGENTS.md
  gemini    ~/.gemini/settings.json mcpServers.hub, and ~/.gemini/skills/hub-delegate/SKILL.md
            (.gemini in $GEMINI_CLI_HOME when it is set)
  qwen      $QWEN_HOME/settings.json mcpServers.hub, and $QWEN_HOME/skills/hub-delegate/SKILL.md
            ($QWEN_HOME is ~/.qwen unless set)

It prints the plan first: each file it creates or changes, and the entry exactly
as written. On a terminal it asks before writing; elsewhere pass --yes. Nothing
else in those files changes; each file is written atomically with its mode kept,
and copied once, to <file>.hub-backup, before hub first adds itself to it. Running
it again changes nothing; "hub uninstall" takes out what it added.`,
		Args: exactArgs(0, "no arguments (use --client)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(cmd.Context(), ios, o, false)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.client, "client", "", "claude, codex, opencode, gemini, qwen or all")
	f.BoolVar(&o.yes, "yes", false, "write without asking")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and write nothing")
	return cmd
}

func newUninstallCmd(ios *IO) *cobra.Command {
	o := &installOptions{}
	cmd := &cobra.Command{
		Use:   "uninstall --client claude|codex|opencode|gemini|qwen|all [--yes] [--dry-run]",
		Short: "Take out what hub install added to an agent client (the entry, the skill, the block)",
		Long: `Take out exactly what "hub install" added to an agent client: hub's MCP server
entry, the skill file (Claude Code, Gemini CLI, Qwen Code), the marked block in
AGENTS.md (Codex, OpenCode). Everything else
stays. A file hub made is removed when nothing else is left in it; backups
(<file>.hub-backup) are kept.`,
		Args: exactArgs(0, "no arguments (use --client)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(cmd.Context(), ios, o, true)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.client, "client", "", "claude, codex, opencode, gemini, qwen or all")
	f.BoolVar(&o.yes, "yes", false, "write without asking")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the plan and write nothing")
	return cmd
}

// installReport is install's and uninstall's --json output.
type installReport struct {
	Command string           `json:"command"` // install or uninstall
	Entry   *install.Entry   `json:"entry,omitempty"`
	Changes []install.Change `json:"changes"`
	Pending bool             `json:"pending"` // the plan changes a file
	Written bool             `json:"written"`
	DryRun  bool             `json:"dry_run,omitempty"`
}

func runInstall(ctx context.Context, ios *IO, o *installOptions, undo bool) error {
	verb := "install"
	if undo {
		verb = "uninstall"
	}
	if o.client == "" {
		return &usageError{&hintError{fmt.Errorf("%s needs --client", verb), "hub " + verb + " --client claude (or codex, opencode, gemini, qwen, all)"}}
	}
	clients, err := install.Lookup(o.client)
	if err != nil {
		return &usageError{err}
	}
	env, err := installEnv()
	if err != nil {
		return err
	}
	rep := installReport{Command: verb, DryRun: o.dryRun}
	var plan *install.Plan
	if undo {
		plan, err = install.PlanUninstall(env, clients)
	} else {
		var en install.Entry
		if en, err = hubEntry(); err != nil {
			return err
		}
		rep.Entry = &en
		plan, err = install.PlanInstall(env, en, clients)
	}
	if err != nil {
		return &hintError{err, "fix the file by hand (or move it away), then run hub " + verb + " --client " + o.client + " again; nothing was written"}
	}
	rep.Changes, rep.Pending = plan.Changes, plan.Pending()

	if !ios.JSON {
		printPlan(ios, clients, plan)
	}
	switch {
	case !rep.Pending:
		if ios.JSON {
			return ios.printJSON(rep)
		}
		if undo {
			ios.printf("hub is not set up for %s: nothing to take out.\n", titles(clients))
		} else {
			ios.printf("hub is already set up for %s: nothing to change.\n", titles(clients))
		}
		return nil
	case o.dryRun:
		if ios.JSON {
			return ios.printJSON(rep)
		}
		ios.printf("dry run: nothing was written.\n")
		return nil
	case !o.yes:
		if !interactive(ios.In) {
			if ios.JSON {
				if err := ios.printJSON(rep); err != nil {
					return err
				}
			}
			return withCode(ExitUsage, &hintError{errors.New("not a terminal to ask on, so nothing was written"),
				"hub " + verb + " --client " + o.client + " --yes writes these changes"})
		}
		fmt.Fprintf(ios.ErrOut, "Write these changes? [y/N] ")
		answer, _ := bufio.NewReader(ios.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return errors.New("nothing was written")
		}
	}
	if err := plan.Apply(); err != nil {
		return &hintError{err, "run hub " + verb + " --client " + o.client + " again: it finishes what is left"}
	}
	rep.Written = true
	if ios.JSON {
		return ios.printJSON(rep)
	}
	if undo {
		ios.printf("done: hub is out of %s.", titles(clients))
		var kept []string
		for _, ch := range plan.Changes {
			if _, err := os.Stat(ch.Path + install.BackupSuffix); err == nil && ch.Action != install.None {
				kept = append(kept, ch.Path+install.BackupSuffix)
			}
		}
		if len(kept) > 0 {
			ios.printf(" The backups stay: %s.", strings.Join(kept, ", "))
		}
		ios.printf("\n")
		return nil
	}
	they := "it loads"
	if len(clients) > 1 {
		they = "they load"
	}
	ios.printf("done. Restart %s so %s hub; hub doctor --client %s checks the setup.\n", titles(clients), they, o.client)
	return nil
}

func printPlan(ios *IO, clients []install.Client, plan *install.Plan) {
	const pad = "         "
	for _, c := range clients {
		ios.printf("%s\n", c.Title)
		for _, ch := range plan.Changes {
			if ch.Client != c.Name {
				continue
			}
			action := string(ch.Action)
			if ch.Action == install.None {
				action = "keep"
			}
			ios.printf("  %-6s %s\n", action, ch.Path)
			if ch.Detail != "" {
				ios.printf("%s%s\n", pad, ch.Detail)
			}
			if ch.Backup != "" {
				ios.printf("%sthe file as it is now is kept in %s\n", pad, ch.Backup)
			}
			if ch.Text != "" && ch.Action != install.None {
				for _, l := range strings.Split(ch.Text, "\n") {
					ios.printf("%s%s\n", pad+"  ", l)
				}
			}
		}
	}
}

func titles(clients []install.Client) string {
	var t []string
	for _, c := range clients {
		t = append(t, c.Title)
	}
	return strings.Join(t, ", ")
}

// interactive reports whether r is a terminal to ask on (a character
// device that is not /dev/null).
func interactive(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// installEnv is the world the clients' files are found in.
func installEnv() (install.Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return install.Env{}, &hintError{fmt.Errorf("no home directory: %v", err), "set HOME"}
	}
	return install.Env{Home: home, Getenv: os.Getenv}, nil
}

// hubEntry is the MCP entry for this hub: its binary run as "hub mcp",
// with hub's own locations pinned when they are not the defaults (Codex
// passes a server only a few variables of its environment, none of them
// hub's).
func hubEntry() (install.Entry, error) {
	bin, err := hubBinary()
	if err != nil {
		return install.Entry{}, err
	}
	env := map[string]string{}
	if os.Getenv("HUB_HOME") != "" || os.Getenv("XDG_DATA_HOME") != "" {
		home, err := config.DefaultHome()
		if err != nil {
			return install.Entry{}, err
		}
		env["HUB_HOME"] = home
	}
	if os.Getenv("HUB_CONFIG_DIR") != "" || os.Getenv("XDG_CONFIG_HOME") != "" {
		dir, err := filepath.Abs(config.ConfigDir())
		if err != nil {
			return install.Entry{}, err
		}
		env["HUB_CONFIG_DIR"] = dir
	}
	return install.Entry{Command: bin, Args: []string{"mcp"}, Env: env}, nil
}

// hubBinary is the absolute path of the running hub, as the PATH names it
// when the PATH leads to this same file (so an upgrade that replaces the
// file behind a link keeps working).
func hubBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot tell where this hub binary is: %v", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return "", &hintError{fmt.Errorf("this hub runs from a temporary build (%s), which clients could not start later", exe),
			"go install ./cmd/hub, then run the installed hub"}
	}
	if p, err := exec.LookPath("hub"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			a, errA := os.Stat(abs)
			b, errB := os.Stat(exe)
			if errA == nil && errB == nil && os.SameFile(a, b) {
				return abs, nil
			}
		}
	}
	return exe, nil
}

type doctorOptions struct {
	client string
}

func newDoctorCmd(ios *IO) *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor [--client claude|codex|opencode|gemini|qwen|all]",
		Short: "Check hub and the agent clients set up to use it, each problem with the command that fixes it",
		Long: `Check hub and the agent clients that use it.

hub itself: the daemon answers (started if need be), its engines, the default profile.
Each client: its program is on PATH (and its version, asked with a scratch HOME),
hub's entry is in its config and runs an existing hub, a real MCP handshake with
that server started exactly as the client would (command, args, env) offers hub's
tools, the delegation skill is in place, and for Gemini CLI that it trusts the
current folder (it starts no MCP server in one it does not).

Without --client it checks the clients hub is set up for and lists the others;
--client names clients that must pass. Exit 0 when everything checked is fine, 1 otherwise.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			explicit := cmd.Flags().Changed("client")
			return runDoctor(cmd.Context(), ios, o, explicit)
		},
	}
	cmd.Flags().StringVar(&o.client, "client", "all", "claude, codex, opencode, gemini, qwen or all")
	return cmd
}

// doctorReport is doctor's --json output.
type doctorReport struct {
	Hub     install.Report   `json:"hub"`
	Clients []install.Report `json:"clients"`
	OK      bool             `json:"ok"`
}

func runDoctor(ctx context.Context, ios *IO, o *doctorOptions, explicit bool) error {
	clients, err := install.Lookup(o.client)
	if err != nil {
		return &usageError{err}
	}
	env, err := installEnv()
	if err != nil {
		return err
	}
	want, err := hubEntry()
	if err != nil {
		return err
	}
	dir, _ := os.Getwd()
	opts := install.DoctorOptions{Env: env, Environ: os.Environ(), Want: want, Version: Version, Dir: dir}
	rep := doctorReport{Clients: make([]install.Report, len(clients))}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { rep.Clients[i] = install.Diagnose(ctx, c, opts) })
	}
	rep.Hub = checkHub(ctx, want.Command)
	wg.Wait()

	problems := countFails(rep.Hub)
	setUp := 0
	for _, r := range rep.Clients {
		if r.SetUp {
			setUp++
		}
		if explicit || r.SetUp {
			problems += countFails(r)
		}
	}
	if !explicit && setUp == 0 {
		problems++
	}
	rep.OK = problems == 0
	if err := ios.show(rep, func() {
		printChecks(ios, rep.Hub)
		for _, r := range rep.Clients {
			if !explicit && !r.SetUp {
				ios.printf("\n%s: not set up; hub install --client %s sets it up\n", r.Title, r.Client)
				continue
			}
			ios.printf("\n")
			printChecks(ios, r)
		}
		ios.printf("\n")
		switch {
		case !explicit && setUp == 0:
			ios.printf("hub is not set up for any client: hub install --client claude (or codex, opencode, gemini, qwen, all)\n")
		case problems == 0:
			ios.printf("all good\n")
		case problems == 1:
			ios.printf("1 problem\n")
		default:
			ios.printf("%d problems\n", problems)
		}
	}); err != nil {
		return err
	}
	if !rep.OK {
		return withCode(ExitError, nil)
	}
	return nil
}

func countFails(r install.Report) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == install.Fail {
			n++
		}
	}
	return n
}

func printChecks(ios *IO, r install.Report) {
	ios.printf("%s\n", r.Title)
	for _, c := range r.Checks {
		label := string(c.Status)
		if c.Status == install.Fail {
			label = "FAIL"
		}
		ios.printf("  %-5s %-10s %s\n", label, c.Name, c.Detail)
		if c.Fix != "" {
			ios.printf("  %-5s %-10s fix: %s\n", "", "", c.Fix)
		}
	}
}

// checkHub checks hub's own side: the daemon (started when none answers),
// the engines, the default profile.
func checkHub(ctx context.Context, bin string) install.Report {
	r := install.Report{Client: "hub", Title: "hub " + Version + " (" + bin + ")"}
	add := func(name string, st install.Status, fix, format string, args ...any) {
		r.Checks = append(r.Checks, install.Check{Name: name, Status: st, Detail: fmt.Sprintf(format, args...), Fix: fix})
	}
	c, err := connect(ctx, nil)
	if err != nil {
		fix := "hub serve  # runs the daemon in the foreground, to see why it does not start"
		if paths, perr := config.Resolve(); perr == nil {
			fix += "; its log: " + paths.DaemonLog()
		}
		if h := rpc.HintOf(err); h != "" {
			fix = h // the cause knows what to do about it
		}
		add("daemon", install.Fail, fix, "no daemon answers and none could be started: %v", err)
		r.OK = false
		return r
	}
	defer c.Close()
	st, fix := install.OK, ""
	if c.Info.ServerVersion != Version {
		st, fix = install.Warn, "hub shutdown  # the next command starts a current daemon; jobs keep running"
	}
	add("daemon", st, fix, "pid %d answers for %s (version %s)", c.Info.PID, c.Info.Home, c.Info.ServerVersion)

	if engines, err := c.Daemon().EngineList(ctx, protocol.Empty{}); err != nil {
		add("engines", install.Fail, "", "the daemon cannot list its engines: %v", err)
	} else {
		var on, off []string
		for _, e := range engines.Engines {
			if e.Available {
				on = append(on, e.Name)
			} else {
				off = append(off, e.Name+" ("+e.Reason+")")
			}
		}
		detail := strings.Join(on, ", ") + " available"
		if len(off) > 0 {
			detail += "; not: " + strings.Join(off, ", ")
		}
		if len(on) == 0 {
			add("engines", install.Fail, "", "no engine is available; not: %s", strings.Join(off, ", "))
		} else {
			add("engines", install.OK, "", "%s", detail)
		}
	}

	switch profiles, err := c.Daemon().ProfileList(ctx, protocol.Empty{}); {
	case err != nil:
		add("profile", install.Fail, "", "the daemon cannot list the profiles: %v", err)
	case profiles.Default == "":
		add("profile", install.Warn, "hub profile set NAME --provider openai --model MODEL --default  # or: hub profile default demo",
			"no default profile: builtin jobs must name one")
	default:
		add("profile", install.OK, "", "the default profile is %s", profiles.Default)
	}
	r.OK = countFails(r) == 0
	return r
}
