package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hub-agents/hub/internal/text"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version doctor's handshake asks for: the one
// Codex sends, and one every client hub is tested with accepts.
const ProtocolVersion = "2025-06-18"

// SupervisorTools are the MCP tools a supervisor needs from hub; doctor
// checks that the configured server offers each (a test keeps the list in
// step with hub's MCP server).
func SupervisorTools() []string {
	return []string{"start", "start_many", "wait", "status", "result", "reply", "steer", "stop", "land", "cleanup", "engines", "profiles", "step"}
}

// Server is an MCP server on stdio, as a client starts it.
type Server struct {
	Command string
	Args    []string
	Env     []string // the whole environment, as for exec.Cmd
}

// Handshake is what a server said when asked.
type Handshake struct {
	ProtocolVersion string   `json:"protocol_version"`
	ServerName      string   `json:"server_name"`
	ServerVersion   string   `json:"server_version"`
	Tools           []string `json:"tools"`
}

// Shake starts s and, with the MCP SDK's client, initializes a session
// (ProtocolVersion) and lists its tools, as a client does on start-up,
// then closes its stdin and waits for it to exit. The context bounds the
// whole exchange.
func Shake(ctx context.Context, s Server, clientVersion string) (*Handshake, error) {
	cmd := exec.CommandContext(ctx, s.Command, s.Args...)
	cmd.Env = s.Env
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Through an io.Pipe, Wait returns only once everything the server
	// wrote has been read: no answer is lost to a server that exits.
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	stdout := &stdoutWatch{r: pr}
	stderr := &text.Tail{Max: 2000}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start it: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		pw.Close()
		close(exited)
	}()
	var ok bool
	defer func() {
		// After a good handshake the server gets its stdin closed and a
		// moment to exit, as a client leaving does; after a bad one it is
		// killed. Its stdout is read to the end either way, so it never
		// blocks on a full pipe.
		stdin.Close()
		stdout.Close()
		grace := 5 * time.Second
		if !ok {
			grace = 0
		}
		select {
		case <-exited:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	// fail says why method got no answer, in the server's terms rather
	// than the client's.
	fail := func(method string, err error) error {
		var rpcErr *jsonrpc.Error
		switch line, bad := stdout.notRPC(); {
		case bad:
			return fmt.Errorf("%s: it wrote something that is not JSON-RPC to stdout: %q", method, text.Clip(line, 200))
		case errors.As(err, &rpcErr):
			return fmt.Errorf("%s: error %d: %s", method, rpcErr.Code, rpcErr.Message)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: no answer in time%s", method, stderrEnd(stderr))
		case stdout.ended():
			<-exited
			return fmt.Errorf("%s: it exited without an answer%s", method, stderrEnd(stderr))
		}
		return fmt.Errorf("%s: %v%s", method, err, stderrEnd(stderr))
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "hub-doctor", Version: clientVersion},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}) // it offers the server nothing
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin},
		&mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, fail("initialize", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	h := &Handshake{ProtocolVersion: init.ProtocolVersion}
	if init.ServerInfo != nil {
		h.ServerName, h.ServerVersion = init.ServerInfo.Name, init.ServerInfo.Version
	}
	params := &mcp.ListToolsParams{}
	for range 20 { // pages, against a server whose cursor never ends
		list, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fail("tools/list", err)
		}
		for _, t := range list.Tools {
			h.Tools = append(h.Tools, t.Name)
		}
		if list.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: list.NextCursor}
	}
	ok = true
	return h, nil
}

// stdoutWatch passes a server's stdout on to the MCP client and notes what
// the client cannot say: the first line that is not a JSON-RPC message
// (the client only says it could not decode one), and the end.
type stdoutWatch struct {
	r io.Reader

	mu   sync.Mutex
	line []byte // the line being read, unless it is longer than maxLine
	long bool   // it is: it is not checked
	bad  []byte // the first line that is not JSON-RPC
	eof  bool

	drain sync.Once
}

const maxLine = 1 << 20

func (w *stdoutWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.add(rest)
			break
		}
		w.add(rest[:i])
		w.endLine()
		rest = rest[i+1:]
	}
	if err != nil {
		w.endLine()
		w.eof = true
	}
	return n, err
}

func (w *stdoutWatch) add(b []byte) {
	if w.long || len(w.line)+len(b) > maxLine {
		w.long, w.line = true, nil
		return
	}
	w.line = append(w.line, b...)
}

func (w *stdoutWatch) endLine() {
	line := bytes.TrimSpace(w.line)
	if len(line) > 0 && !w.long && w.bad == nil {
		var m struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if json.Unmarshal(line, &m) != nil || m.JSONRPC != "2.0" {
			w.bad = bytes.Clone(line)
		}
	}
	w.line, w.long = w.line[:0], false
}

// notRPC returns the first line that is not JSON-RPC, or the line being
// read when it cannot become a message (one starts with {).
func (w *stdoutWatch) notRPC() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bad != nil {
		return string(w.bad), true
	}
	if line := bytes.TrimSpace(w.line); len(line) > 0 && line[0] != '{' {
		return string(line), true
	}
	return "", false
}

// ended reports whether the server's stdout ended: it exited.
func (w *stdoutWatch) ended() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.eof
}

// Close, by the client, reads the rest of stdout away.
func (w *stdoutWatch) Close() error {
	w.drain.Do(func() { go io.Copy(io.Discard, w.r) })
	return nil
}

// stderrEnd is the end of a server's stderr as the end of an error
// message (its last five lines), or "".
func stderrEnd(t *text.Tail) string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; its stderr ends: " + strings.Join(lines, " | ")
}

// Status is how one check went.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn" // works, but not as install would leave it
	Fail Status = "fail"
)

// Check is one thing doctor looked at.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"` // the command that fixes it
}

// Report is what doctor found for one client.
type Report struct {
	Client string  `json:"client"`
	Title  string  `json:"title"`
	SetUp  bool    `json:"set_up"` // hub's entry is in the client's config
	OK     bool    `json:"ok"`     // no check failed
	Checks []Check `json:"checks"`
}

// DoctorOptions say what doctor checks against.
type DoctorOptions struct {
	Env     Env
	Environ []string      // the environment the clients run in, as os.Environ
	Want    Entry         // the entry install would write now
	Version string        // this hub's version
	Timeout time.Duration // for each program doctor runs; 0 means 30 s
	// Dir is the folder the clients would run in (doctor's own), for
	// Gemini CLI's folder trust; "" skips that check.
	Dir string
}

// Diagnose checks one client: its program, hub's entry in its config, a
// real MCP handshake with the server that entry starts (with the
// environment the client would give it), and the delegation skill.
func Diagnose(ctx context.Context, c Client, o DoctorOptions) Report {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	r := Report{Client: c.Name, Title: c.Title}
	add := func(name string, st Status, fix, format string, args ...any) {
		r.Checks = append(r.Checks, Check{Name: name, Status: st, Detail: fmt.Sprintf(format, args...), Fix: fix})
	}
	install := "hub install --client " + c.Name

	if path, err := exec.LookPath(c.Command); err != nil {
		add("program", Fail, "npm install -g "+c.Package, "%s is not on PATH", c.Command)
	} else if v, err := version(ctx, path, o.Environ, o.Timeout); err != nil {
		add("program", Warn, "", "%s does not tell its version: %v", path, err)
	} else {
		add("program", OK, "", "%s (%s)", path, v)
	}

	file := c.ConfigFile(o.Env)
	src, exists, err := readFile(file)
	var en *Entry
	if err == nil && exists {
		en, err = c.ReadEntry(src)
	}
	var syntax *tomlError
	switch {
	case errors.As(err, &syntax):
		add("entry", Fail, fmt.Sprintf("edit %s at line %d, column %d by hand, then run %s", file, syntax.line, syntax.column, install),
			"%s is not valid TOML: %v", file, err)
	case err != nil:
		add("entry", Fail, "", "%s: %v; fix the file by hand, then run %s", file, err, install)
	case en == nil:
		add("entry", Fail, install, "no %s in %s", c.entryPath(), file)
	default:
		r.SetUp = true
		st, fix, note := OK, "", ""
		if want, err := c.setEntry(src, o.Want); err == nil && !bytes.Equal(want, src) {
			st, fix, note = Warn, install, "; install would "+entryDiff(*en, o.Want)
		}
		add("entry", st, fix, "%s in %s runs %s%s", c.entryPath(), file, strings.Join(append([]string{en.Command}, en.Args...), " "), note)
	}

	if en != nil {
		env := clientEnv(c, o.Environ, en.Env)
		command, err := lookPathIn(en.Command, env)
		if err != nil {
			add("handshake", Fail, install, "the entry runs %s, which %v", en.Command, err)
		} else {
			sctx, cancel := context.WithTimeout(ctx, o.Timeout)
			h, err := Shake(sctx, Server{Command: command, Args: en.Args, Env: env}, o.Version)
			cancel()
			switch missing := missingTools(h); {
			case err != nil:
				add("handshake", Fail, shakeFix(c, command), "%s %s: %v", en.Command, strings.Join(en.Args, " "), err)
			case len(missing) > 0:
				add("handshake", Fail, install, "%s %s (protocol %s) lacks the tools %s; the entry may run an old hub",
					h.ServerName, h.ServerVersion, h.ProtocolVersion, strings.Join(missing, ", "))
			case o.Version != "" && h.ServerVersion != o.Version:
				add("handshake", Warn, install, "%s %s answers (protocol %s, %d tools), but this hub is %s",
					h.ServerName, h.ServerVersion, h.ProtocolVersion, len(h.Tools), o.Version)
			default:
				add("handshake", OK, "", "%s %s answers (protocol %s, %d tools)", h.ServerName, h.ServerVersion, h.ProtocolVersion, len(h.Tools))
			}
		}
	}

	if en != nil {
		if ch, ok := trustCheck(c, o.Env, o.Dir); ok {
			r.Checks = append(r.Checks, ch)
		}
	}

	instr := c.InstructionsFile(o.Env)
	text, exists, err := readFile(instr)
	switch {
	case err != nil:
		add("skill", Fail, "", "%s: %v", instr, err)
	case c.ownsInstructions() && !exists:
		add("skill", Fail, install, "no %s skill at %s", SkillName, instr)
	case c.ownsInstructions() && string(text) != Skill():
		add("skill", Warn, install, "the %s skill at %s differs from this hub's", SkillName, instr)
	case c.ownsInstructions():
		add("skill", OK, "", "the %s skill is at %s", SkillName, instr)
	default:
		body, err := blockBody(text)
		switch {
		case err != nil:
			add("skill", Fail, "", "%s: %v", instr, err)
		case body == "":
			add("skill", Fail, install, "no hub block in %s", instr)
		case body != Instructions():
			add("skill", Warn, install, "hub's block in %s differs from this hub's", instr)
		default:
			add("skill", OK, "", "hub's block is in %s", instr)
		}
	}

	r.OK = !slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Fail })
	return r
}

// entryDiff says what install would change in an entry, for people.
func entryDiff(got, want Entry) string {
	switch {
	case got.Command != want.Command:
		return "make it run " + want.Command
	case !slices.Equal(got.Args, want.Args):
		return "set its args to " + strings.Join(want.Args, " ")
	case !sameEnv(got.Env, want.Env) && len(want.Env) == 0:
		return "take out its env (this shell sets none of hub's locations)"
	case !sameEnv(got.Env, want.Env):
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(want.Env)) {
			kv = append(kv, k+"="+want.Env[k])
		}
		return "set its env to " + strings.Join(kv, " ")
	}
	return "update its other settings"
}

func missingTools(h *Handshake) []string {
	if h == nil {
		return nil
	}
	var missing []string
	for _, t := range SupervisorTools() {
		if !slices.Contains(h.Tools, t) {
			missing = append(missing, t)
		}
	}
	return missing
}

// shakeFix is the command to run when the configured server does not
// answer: hub's own server shows its error when run by hand.
func shakeFix(c Client, command string) string {
	if filepath.Base(command) == "hub" {
		return command + " mcp < /dev/null  # shows the server's own error"
	}
	return "hub install --client " + c.Name
}

// codexPassEnv is the environment Codex passes a stdio MCP server on top
// of the entry's env (found by having codex 0.169 start a server that
// printed its environment).
var codexPassEnv = []string{"HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "PIP_CERT"}

// clientEnv is the environment the client starts its MCP server with:
// its own (Claude Code, OpenCode; Gemini CLI and Qwen Code less the
// variables that look like secrets, none of which hub reads) or a few
// variables of it (Codex), and the entry's env on top.
func clientEnv(c Client, environ []string, extra map[string]string) []string {
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; over {
			continue
		}
		if c.Name == "codex" && !slices.Contains(codexPassEnv, k) {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// lookPathIn finds a command as a client would: a path as it is, a bare
// name on the PATH of env.
func lookPathIn(command string, env []string) (string, error) {
	if strings.ContainsRune(command, filepath.Separator) {
		fi, err := os.Stat(command)
		switch {
		case err != nil:
			return "", errors.New("does not exist")
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			return "", errors.New("is not an executable file")
		}
		return command, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("is not on the PATH the client gives it")
}

// scratchVars are the variables that point a client at its state; doctor
// moves them all into a scratch folder, so asking a client its version
// never touches the user's files.
var scratchVars = []string{"HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR",
	"GEMINI_CLI_HOME", "QWEN_HOME", "QWEN_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"}

// version runs path --version with a scratch home and returns the first
// line it prints.
func version(ctx context.Context, path string, environ []string, timeout time.Duration) (string, error) {
	scratch, err := os.MkdirTemp("", "hub-doctor-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(scratch)
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(scratchVars, k) {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+scratch, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	cmd.Dir = scratch
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("no answer in %s", timeout)
		}
		return "", err
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l, nil
		}
	}
	return "", errors.New("it printed nothing")
}
