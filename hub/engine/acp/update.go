package acp

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/hub-agents/hub/agent/model"
	"github.com/hub-agents/hub/hub/engine/agentcli"
)

// update is one session/update as hub reads it, whatever the agent.
type update struct {
	kind string // message, thought, tool, tool_update, plan, usage, quiet (known, nothing to take), unknown
	text string // a message chunk; a plan in one line; the name of an unknown update

	toolID, title, toolKind, status string
	input                           string   // the tool's input, in one line
	command                         string   // what an execute tool runs
	exitCode                        *int     // what it exited with, when the agent says
	paths                           []string // the files it names

	costUSD *float64     // the session's cost so far, in dollars
	usage   *model.Usage // one model call's tokens, in the update's _meta
}

// parseUpdate reads one session/update's params. It never fails on what
// an agent may send: an update it cannot read is "unknown", named.
func parseUpdate(raw []byte) update {
	name := updateName(raw)
	if !knownUpdates[name] {
		return update{kind: "unknown", text: name}
	}
	var n sdk.SessionNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		return update{kind: "unknown", text: updateName(raw)}
	}
	up := parseVariant(n.Update)
	if up.kind == "unknown" {
		up.text = updateName(raw)
	}
	if meta := updateMeta(n.Update); meta != nil {
		if u, ok := metaUsage(meta); ok {
			up.usage = &u
		}
	}
	return up
}

// knownUpdates are the updates of the protocol version hub speaks (the
// library reads an update it does not know as one it does).
var knownUpdates = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true, "tool_call": true,
	"tool_call_update": true, "plan": true, "available_commands_update": true, "current_mode_update": true,
	"config_option_update": true, "session_info_update": true, "usage_update": true,
}

// updateName is the name of the update raw holds, as far as it has one.
func updateName(raw []byte) string {
	var v struct {
		Update struct {
			SessionUpdate any `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Update.SessionUpdate == nil {
		return "(unreadable)"
	}
	return agentcli.OneLine(fmt.Sprint(v.Update.SessionUpdate), 80)
}

// updateMeta is the _meta of the update's variant (nil if none).
func updateMeta(u sdk.SessionUpdate) map[string]any {
	switch {
	case u.AgentMessageChunk != nil:
		return u.AgentMessageChunk.Meta
	case u.AgentThoughtChunk != nil:
		return u.AgentThoughtChunk.Meta
	case u.ToolCall != nil:
		return u.ToolCall.Meta
	case u.ToolCallUpdate != nil:
		return u.ToolCallUpdate.Meta
	case u.UsageUpdate != nil:
		return u.UsageUpdate.Meta
	}
	return nil
}

func parseVariant(u sdk.SessionUpdate) update {
	switch {
	case u.AgentMessageChunk != nil:
		return update{kind: "message", text: blockText(u.AgentMessageChunk.Content)}
	case u.AgentThoughtChunk != nil:
		return update{kind: "thought", text: blockText(u.AgentThoughtChunk.Content)}
	case u.ToolCall != nil:
		t := u.ToolCall
		up := update{kind: "tool", toolID: string(t.ToolCallId), title: t.Title, toolKind: string(t.Kind), status: string(t.Status)}
		up.fill(t.RawInput, t.RawOutput, t.Locations, t.Content)
		return up
	case u.ToolCallUpdate != nil:
		t := u.ToolCallUpdate
		up := update{kind: "tool_update", toolID: string(t.ToolCallId)}
		if t.Title != nil {
			up.title = *t.Title
		}
		if t.Kind != nil {
			up.toolKind = string(*t.Kind)
		}
		if t.Status != nil {
			up.status = string(*t.Status)
		}
		up.fill(t.RawInput, t.RawOutput, t.Locations, t.Content)
		return up
	case u.Plan != nil:
		var done int
		var items []string
		for _, e := range u.Plan.Entries {
			if e.Status == sdk.PlanEntryStatusCompleted {
				done++
			}
			items = append(items, agentcli.OneLine(e.Content, 80))
		}
		return update{kind: "plan", text: agentcli.OneLine(fmt.Sprintf("plan (%d/%d done): %s", done, len(items), strings.Join(items, "; ")), 300)}
	case u.UsageUpdate != nil:
		up := update{kind: "usage"}
		if c := u.UsageUpdate.Cost; c != nil && strings.EqualFold(c.Currency, "USD") && agentcli.Dollars(c.Amount) {
			usd := c.Amount
			up.costUSD = &usd
		}
		return up
	case u.UserMessageChunk != nil, u.AvailableCommandsUpdate != nil, u.CurrentModeUpdate != nil,
		u.ConfigOptionUpdate != nil, u.SessionInfoUpdate != nil:
		return update{kind: "quiet"}
	}
	return update{kind: "unknown", text: "(empty)"}
}

// fill takes what a tool call says of its input, output and files.
func (u *update) fill(in, out any, locs []sdk.ToolCallLocation, content []sdk.ToolCallContent) {
	for _, l := range locs {
		if l.Path != "" {
			u.paths = append(u.paths, l.Path)
		}
	}
	if m, ok := in.(map[string]any); ok {
		if c, ok := m["command"].(string); ok {
			u.command = c
		}
		for _, k := range pathKeys {
			if p, ok := m[k].(string); ok && p != "" {
				u.paths = append(u.paths, p)
			}
		}
	}
	if in != nil {
		if b, err := json.Marshal(in); err == nil {
			u.input = agentcli.OneLine(string(b), 300)
		}
	}
	if m, ok := out.(map[string]any); ok {
		// Qwen Code: exitCode; OpenCode: metadata.exit.
		md, _ := m["metadata"].(map[string]any)
		for _, v := range []any{m["exitCode"], m["exit_code"], m["code"], md["exit"]} {
			if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<20 {
				c := int(f)
				u.exitCode = &c
				break
			}
		}
	}
	for _, c := range content {
		if c.Content == nil {
			continue
		}
		text := blockText(c.Content.Content)
		if code, ok := exitFromText(text); ok && u.exitCode == nil {
			u.exitCode = &code
		}
		if m := commandRe.FindStringSubmatch(text); m != nil && u.command == "" {
			u.command = m[1]
		}
	}
}

// commandRe reads "Command: …" from a shell tool's output, as Qwen Code
// writes it (its tool call's input is empty until it asks permission).
var commandRe = regexp.MustCompile(`(?m)\ACommand: (.+)$`)

// pathKeys are the input fields in which agents name a tool's file.
var pathKeys = []string{"path", "file_path", "filePath", "absolute_path", "dir_path", "directory", "target", "destination", "new_path", "old_path", "source"}

var exitRe = regexp.MustCompile(`(?i)exit code:?\s*(-?\d{1,6})\b`)

// exitFromText reads "Exit Code: N" from a shell tool's output, as Gemini
// CLI and Qwen Code write it.
func exitFromText(s string) (int, bool) {
	m := exitRe.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

func blockText(c sdk.ContentBlock) string {
	if c.Text != nil {
		return c.Text.Text
	}
	return ""
}

// metaUsage reads token counts an agent puts in a _meta (the protocol's
// usage field being unstable, some agents put it there instead).
func metaUsage(meta map[string]any) (model.Usage, bool) {
	if meta == nil {
		return model.Usage{}, false
	}
	m, ok := meta["usage"].(map[string]any)
	if !ok {
		// Gemini CLI: the turn's tokens, in its quota.
		q, _ := meta["quota"].(map[string]any)
		if m, ok = q["token_count"].(map[string]any); !ok {
			return model.Usage{}, false
		}
	}
	num := func(keys ...string) (int, bool) {
		for _, k := range keys {
			if f, ok := m[k].(float64); ok && f >= 0 && f < 1<<40 {
				return int(f), true
			}
		}
		return 0, false
	}
	in, ok1 := num("inputTokens", "input_tokens", "promptTokens", "prompt_tokens", "promptTokenCount")
	out, ok2 := num("outputTokens", "output_tokens", "completionTokens", "completion_tokens", "candidatesTokenCount")
	if !ok1 && !ok2 {
		return model.Usage{}, false
	}
	u := model.Usage{Input: agentcli.Count(in), Output: agentcli.Count(out)}
	if c, ok := num("cachedReadTokens", "cached_read_tokens", "cachedContentTokenCount"); ok {
		u.CachedInput = min(agentcli.Count(c), u.Input)
	}
	return u, true
}

// Bounds of one turn's updates: past them the agent floods, and the run
// ends (a real agent sends a few thousand).
const (
	maxTurnUpdates = 200_000
	maxTurnBytes   = 128 << 20
	maxTools       = 10_000
)

// toolCall is what hub keeps of a tool call until it ends.
type toolCall struct {
	title, kind, command string
	paths                []string
	at                   time.Time // when the agent announced it
}

// state takes the session's updates as they come and reports them to the
// recorder. The connection hands them over one at a time and closes when
// 1024 wait, so taking one only queues it: a goroutine of the state's
// applies them, and what reaches the mailbox goes through an outbox, so
// neither a slow mailbox nor a burst of chunks holds the agent's stream.
type state struct {
	rec     *agentcli.Recorder
	onFlood func(string)

	qmu     sync.Mutex
	qcond   *sync.Cond
	queue   [][]byte
	busy    bool
	closed  bool
	updates int // this turn's, taken
	bytes   int
	flood   string

	mu       sync.Mutex
	msg      strings.Builder // the agent's message being streamed
	last     string          // the turn's last message
	tools    map[string]*toolCall
	metered  bool // the agent reported a cost of its own
	turnUse  bool // the turn's model calls came with their tokens
	unknowns map[string]int

	out outbox
}

func newState(rec *agentcli.Recorder, onFlood func(string)) *state {
	s := &state{rec: rec, onFlood: onFlood, tools: map[string]*toolCall{}, unknowns: map[string]int{}}
	s.qcond = sync.NewCond(&s.qmu)
	s.out.start(rec)
	go s.work()
	return s
}

// take queues one session/update. Past the bounds of a turn the agent
// floods: nothing more is taken, and the run is ended.
func (s *state) take(raw []byte) {
	s.qmu.Lock()
	if s.flood != "" || s.closed {
		s.qmu.Unlock()
		return
	}
	s.updates++
	s.bytes += len(raw)
	if s.updates > maxTurnUpdates || s.bytes > maxTurnBytes {
		s.flood = fmt.Sprintf("flood: the agent sent %d updates (%d MiB) in one turn; hub stopped it", s.updates, s.bytes>>20)
		s.queue = nil
		s.qmu.Unlock()
		s.onFlood(s.flood)
		return
	}
	s.queue = append(s.queue, raw)
	s.qcond.Broadcast()
	s.qmu.Unlock()
}

// work applies what is queued, in order.
func (s *state) work() {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for {
		for len(s.queue) == 0 && !s.closed {
			s.qcond.Wait()
		}
		if len(s.queue) == 0 {
			return
		}
		batch := s.queue
		s.queue, s.busy = nil, true
		s.qmu.Unlock()
		for _, raw := range batch {
			s.apply(parseUpdate(raw))
		}
		s.qmu.Lock()
		s.busy = false
		s.qcond.Broadcast()
	}
}

// settle waits until every update taken so far is applied.
func (s *state) settle() {
	s.qmu.Lock()
	for len(s.queue) > 0 || s.busy {
		s.qcond.Wait()
	}
	s.qmu.Unlock()
}

func (s *state) apply(u update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.usage != nil {
		s.turnUse = true
		s.out.use(*u.usage)
	}
	switch u.kind {
	case "message":
		if s.msg.Len() < 1<<20 {
			s.msg.WriteString(u.text)
		}
		return
	case "thought", "quiet":
		return
	}
	s.flushLocked()
	switch u.kind {
	case "tool":
		tc := s.tools[u.toolID]
		if tc == nil {
			tc = s.announceLocked(u.toolID, u.title, u.toolKind, u.command, u.paths, u.input)
		}
		s.ended(u, tc)
	case "tool_update":
		tc := s.tools[u.toolID]
		if tc == nil {
			// A call the agent never announced (Gemini CLI announces one
			// only in its permission request, or not at all when it needs
			// none): known from here on.
			tc = s.announceLocked(u.toolID, u.title, u.toolKind, u.command, u.paths, u.input)
		}
		if u.command != "" {
			tc.command = u.command
		}
		if u.toolKind != "" {
			tc.kind = u.toolKind
		}
		s.ended(u, tc)
	case "plan":
		s.rec.Log("[plan] " + u.text)
		s.out.say(u.text)
	case "usage":
		if u.costUSD != nil {
			s.metered = true
			s.out.cost(*u.costUSD)
		}
	case "unknown":
		if len(s.unknowns) < 256 {
			s.unknowns[u.text]++
		}
		if s.unknowns[u.text] == 1 {
			s.rec.Log("[acp] an update hub does not know: " + u.text)
		}
	}
}

// announceLocked keeps a tool call the agent started, and logs it.
func (s *state) announceLocked(id, title, kind, command string, paths []string, input string) *toolCall {
	tc := &toolCall{title: title, kind: kind, command: command, paths: paths, at: time.Now()}
	if len(s.tools) < maxTools {
		s.tools[id] = tc
	}
	s.rec.Tool(toolName(tc), input)
	return tc
}

// ended records a tool call that completed or failed: an execute tool is a
// command the hub observed.
func (s *state) ended(u update, tc *toolCall) {
	if u.status != string(sdk.ToolCallStatusCompleted) && u.status != string(sdk.ToolCallStatusFailed) {
		return
	}
	delete(s.tools, u.toolID)
	if tc.kind != string(sdk.ToolKindExecute) {
		return
	}
	cmd := tc.command
	if cmd == "" {
		cmd = tc.title // Gemini CLI titles a shell call with its command, and says it nowhere else
	}
	if cmd != "" {
		s.rec.Command(cmd, u.exitCode, tc.at) // nil: the agent did not say
	}
}

// learn keeps what a permission request says of a tool call: the agent
// may have announced it with less (Qwen Code names its command only there)
// or not at all (Gemini CLI).
func (s *state) learn(id, title, kind, command string, paths []string) {
	s.settle() // the updates sent before the request are in
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.tools[id]
	if tc == nil {
		s.announceLocked(id, title, kind, command, paths, "")
		return
	}
	if command != "" {
		tc.command = command
	}
	if tc.kind == "" {
		tc.kind = kind
	}
	tc.paths = append(tc.paths, paths...)
}

// kindOf is the kind of a tool call the agent announced ("" if unknown).
func (s *state) kindOf(id string) (kind string, paths []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tc := s.tools[id]; tc != nil {
		return tc.kind, tc.paths
	}
	return "", nil
}

func toolName(tc *toolCall) string {
	name := tc.kind
	if name == "" {
		name = "tool"
	}
	if tc.title != "" {
		name += " (" + agentcli.OneLine(tc.title, 80) + ")"
	}
	return name
}

// flushLocked ends the message being streamed: it is what the worker said.
func (s *state) flushLocked() {
	text := strings.TrimSpace(s.msg.String())
	s.msg.Reset()
	if text == "" {
		return
	}
	s.last = text
	s.out.say(text)
}

// endTurn takes the turn's last message as the run's final answer so far,
// and says whether the turn's model calls came with their tokens.
func (s *state) endTurn() (metered bool) {
	s.settle()
	s.qmu.Lock()
	s.updates, s.bytes = 0, 0
	s.qmu.Unlock()
	s.mu.Lock()
	s.flushLocked()
	last, metered := s.last, s.turnUse
	s.last, s.turnUse = "", false
	s.mu.Unlock()
	s.out.drain()
	if last != "" {
		s.rec.Final(last)
	}
	return metered
}

// unmetered marks a turn the agent said nothing of its tokens for.
func (s *state) unmetered() {
	s.mu.Lock()
	metered := s.metered
	s.mu.Unlock()
	if !metered {
		s.rec.Unmetered()
	}
}

// firstCall reports whether method is called for the first time (so an
// agent's calls hub does not offer are logged once each).
func (s *state) firstCall(method string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := "call " + agentcli.OneLine(method, 80)
	if len(s.unknowns) >= 256 {
		return false
	}
	s.unknowns[key]++
	return s.unknowns[key] == 1
}

func (s *state) floodErr() string {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return s.flood
}

// flush applies and reports what is left, and stops.
func (s *state) flush() {
	s.settle()
	s.qmu.Lock()
	s.closed = true
	s.qcond.Broadcast()
	s.qmu.Unlock()
	s.mu.Lock()
	s.flushLocked()
	s.mu.Unlock()
	s.out.stop()
}

// outbox carries notes and cost to the recorder (and so the mailbox) off
// the connection's reading goroutine, keeping only the newest when behind.
type outbox struct {
	mu      sync.Mutex
	said    []string
	usd     *float64
	calls   []model.Usage
	wake    chan struct{}
	stopped chan struct{}
	rec     *agentcli.Recorder
}

const outboxNotes = 16

func (o *outbox) start(rec *agentcli.Recorder) {
	o.rec, o.wake, o.stopped = rec, make(chan struct{}, 1), make(chan struct{})
	go func() {
		defer close(o.stopped)
		for range o.wake {
			o.drain()
		}
	}()
}

func (o *outbox) say(text string) {
	o.mu.Lock()
	if len(o.said) >= outboxNotes {
		o.said = o.said[1:]
	}
	o.said = append(o.said, text)
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) cost(usd float64) {
	o.mu.Lock()
	o.usd = &usd
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) use(u model.Usage) {
	o.mu.Lock()
	if len(o.calls) < 1024 {
		o.calls = append(o.calls, u)
	} else {
		o.calls[len(o.calls)-1] = o.calls[len(o.calls)-1].Add(u)
	}
	o.mu.Unlock()
	o.poke()
}

func (o *outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// drain reports what is waiting, now.
func (o *outbox) drain() {
	o.mu.Lock()
	said, usd, calls := o.said, o.usd, o.calls
	o.said, o.usd, o.calls = nil, nil, nil
	o.mu.Unlock()
	for _, s := range said {
		o.rec.Said(s)
	}
	for _, u := range calls {
		o.rec.Usage(u)
	}
	if usd != nil {
		o.rec.Cost(*usd)
	}
}

func (o *outbox) stop() {
	close(o.wake)
	<-o.stopped
	o.drain()
}
