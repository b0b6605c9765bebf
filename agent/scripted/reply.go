package scripted

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"unicode/utf8"
)

// pieceSize is the most bytes of text or arguments one stream delta carries;
// small, so that clients must put pieces together.
const pieceSize = 16

// reply is a turn about to be written.
type reply struct {
	turn    Turn   // tool call ids filled in
	id      int    // numbers the response's ids
	model   string // echoed back
	usage   Usage
	created int64 // Unix seconds
}

// pieces splits s into pieces of at most pieceSize bytes, never inside a
// rune; none for "".
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(pieceSize, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // a rune longer than pieceSize cannot happen; be safe
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// abort cuts the connection after flushing what was written: net/http
// handles panic(http.ErrAbortHandler) by closing the connection (HTTP/1) or
// resetting the stream (HTTP/2) without logging.
func abort(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// writeBody writes a non-streamed reply; drop writes its first half, then
// cuts the connection.
func writeBody(w http.ResponseWriter, v any, drop bool) error {
	if !drop {
		writeJSON(w, http.StatusOK, v)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshal reply: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b[:len(b)/2])
	abort(w)
	return nil
}

// sse writes a server-sent event stream. After the first write error it
// writes nothing more and keeps the error.
type sse struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

// send writes one event: an "event:" line when name is not empty, then the
// data line with v as JSON (or as is, when v is a string).
func (s *sse) send(name string, v any) {
	if s.err != nil {
		return
	}
	data, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			s.err = fmt.Errorf("marshal event %s: %w", name, err)
			return
		}
		data = string(b)
	}
	var frame string
	if name != "" {
		frame = "event: " + name + "\n"
	}
	frame += "data: " + data + "\n\n"
	if _, err := s.w.Write([]byte(frame)); err != nil {
		s.err = fmt.Errorf("write event: %w", err)
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = fmt.Errorf("flush event: %w", err)
	}
}

// Chat Completions.

func chatUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":             u.Input,
		"completion_tokens":         u.Output,
		"total_tokens":              u.Input + u.Output,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedInput},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
	}
}

func finishReason(t *Turn) string {
	if len(t.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func writeChat(w http.ResponseWriter, out *reply, stream, includeUsage bool) error {
	t := &out.turn
	id := fmt.Sprintf("chatcmpl-scripted-%d", out.id)
	if !stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if t.Text != "" {
			msg["content"] = t.Text
		}
		if len(t.ToolCalls) > 0 {
			calls := make([]map[string]any, len(t.ToolCalls))
			for i, c := range t.ToolCalls {
				calls[i] = map[string]any{
					"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.args()},
				}
			}
			msg["tool_calls"] = calls
		}
		return writeBody(w, map[string]any{
			"id": id, "object": "chat.completion", "created": out.created, "model": out.model,
			"choices": []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(t)}},
			"usage":   chatUsage(out.usage),
		}, t.Drop)
	}

	s := startSSE(w)
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": out.created, "model": out.model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		s.send("", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if t.Drop {
		abort(w)
	}
	for _, p := range pieces(t.Text) {
		chunk(map[string]any{"content": p}, nil)
	}
	// A call's deltas all come before the next call's: some clients
	// (langchaingo among them) add argument pieces to the last call begun,
	// whatever their index.
	for i, c := range t.ToolCalls {
		chunk(map[string]any{"tool_calls": []map[string]any{{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil)
		for _, p := range pieces(c.args()) {
			chunk(map[string]any{"tool_calls": []map[string]any{{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil)
		}
	}
	chunk(map[string]any{}, finishReason(t))
	if includeUsage {
		s.send("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": out.created, "model": out.model,
			"choices": []any{}, "usage": chatUsage(out.usage),
		})
	}
	s.send("", "[DONE]")
	return s.err
}

// Responses.

func writeResponses(w http.ResponseWriter, out *reply, stream bool) error {
	t := &out.turn
	respID := fmt.Sprintf("resp_scripted_%d", out.id)
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{
			"id": respID, "object": "response", "created_at": out.created, "status": status,
			"model": out.model, "output": output, "usage": usage,
			"error": nil, "incomplete_details": nil,
		}
	}
	u := out.usage
	usage := map[string]any{
		"input_tokens":          u.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CachedInput},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          u.Input + u.Output,
	}
	msgID := fmt.Sprintf("msg_scripted_%d", out.id)
	textPart := map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}
	messageItem := func(status string, content []any) map[string]any {
		return map[string]any{"type": "message", "id": msgID, "status": status, "role": "assistant", "content": content}
	}
	callItem := func(i int, status, args string) map[string]any {
		c := t.ToolCalls[i]
		item := map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_scripted_%d_%d", out.id, i+1), "status": status,
			"call_id": c.ID, "name": c.Name, "arguments": args,
		}
		if c.Namespace != "" {
			item["namespace"] = c.Namespace
		}
		return item
	}
	var output []any
	if t.Text != "" {
		output = append(output, messageItem("completed", []any{textPart}))
	}
	for i, c := range t.ToolCalls {
		output = append(output, callItem(i, "completed", c.args()))
	}
	if !stream {
		return writeBody(w, response("completed", output, usage), t.Drop)
	}

	s := startSSE(w)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.send(typ, fields)
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{}, nil)})
	if t.Drop {
		abort(w)
	}
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)})
	index := 0
	if t.Text != "" {
		event("response.output_item.added", map[string]any{"output_index": index, "item": messageItem("in_progress", []any{})})
		at := map[string]any{"item_id": msgID, "output_index": index, "content_index": 0}
		with := func(key string, value any) map[string]any {
			m := map[string]any{key: value}
			maps.Copy(m, at)
			return m
		}
		event("response.content_part.added", with("part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}}))
		for _, p := range pieces(t.Text) {
			event("response.output_text.delta", with("delta", p))
		}
		event("response.output_text.done", with("text", t.Text))
		event("response.content_part.done", with("part", textPart))
		event("response.output_item.done", map[string]any{"output_index": index, "item": messageItem("completed", []any{textPart})})
		index++
	}
	for i, c := range t.ToolCalls {
		item := callItem(i, "in_progress", "")
		event("response.output_item.added", map[string]any{"output_index": index, "item": item})
		for _, p := range pieces(c.args()) {
			event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": index, "delta": p})
		}
		event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": index, "arguments": c.args()})
		event("response.output_item.done", map[string]any{"output_index": index, "item": callItem(i, "completed", c.args())})
		index++
	}
	event("response.completed", map[string]any{"response": response("completed", output, usage)})
	return s.err
}

// Anthropic Messages.

func writeMessages(w http.ResponseWriter, out *reply, stream bool) error {
	t := &out.turn
	u := out.usage
	usage := map[string]any{
		"input_tokens":                u.Input - u.CachedInput,
		"output_tokens":               u.Output,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     u.CachedInput,
	}
	stop := "end_turn"
	if len(t.ToolCalls) > 0 {
		stop = "tool_use"
	}
	message := func(content []any, stopReason any, usage map[string]any) map[string]any {
		return map[string]any{
			"id": fmt.Sprintf("msg_scripted_%d", out.id), "type": "message", "role": "assistant", "model": out.model,
			"content": content, "stop_reason": stopReason, "stop_sequence": nil, "usage": usage,
		}
	}
	if !stream {
		content := []any{}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for _, c := range t.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.args())})
		}
		return writeBody(w, message(content, stop, usage), t.Drop)
	}

	s := startSSE(w)
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		s.send(typ, fields)
	}
	startUsage := maps.Clone(usage)
	startUsage["output_tokens"] = 0
	event("message_start", map[string]any{"message": message([]any{}, nil, startUsage)})
	if t.Drop {
		abort(w)
	}
	index := 0
	if t.Text != "" {
		event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(t.Text) {
			event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		event("content_block_stop", map[string]any{"index": index})
		index++
	}
	for _, c := range t.ToolCalls {
		event("content_block_start", map[string]any{"index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{},
		}})
		for _, p := range pieces(c.args()) {
			event("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		event("content_block_stop", map[string]any{"index": index})
		index++
	}
	event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": u.Output},
	})
	event("message_stop", map[string]any{})
	return s.err
}

// Gemini.

// writeGemini writes a GenerateContentResponse: the turn's text and calls
// as the parts of one candidate. A stream is a sequence of such responses,
// each a chunk: the text in pieces, then each call whole (Gemini never
// splits one), the finish reason and the usage on the last. It is a JSON
// array written element by element, or with sse server-sent events (the
// client's ?alt=sse), which is what Google's SDKs ask for.
func writeGemini(w http.ResponseWriter, out *reply, stream, sse bool) error {
	t := &out.turn
	u := out.usage
	usage := map[string]any{
		"promptTokenCount":     u.Input,
		"candidatesTokenCount": u.Output,
		"totalTokenCount":      u.Input + u.Output,
	}
	if u.CachedInput > 0 {
		usage["cachedContentTokenCount"] = u.CachedInput
	}
	// Gemini finishes a turn of function calls with STOP too.
	chunk := func(parts []any, last bool) map[string]any {
		cand := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": parts}}
		c := map[string]any{
			"candidates":   []any{cand},
			"modelVersion": out.model,
			"responseId":   fmt.Sprintf("scripted-%d", out.id),
		}
		if last {
			cand["finishReason"] = "STOP"
			c["usageMetadata"] = usage
		}
		return c
	}
	callPart := func(c ToolCall) map[string]any {
		return map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": json.RawMessage(c.args())}}
	}
	if !stream {
		var parts []any
		if t.Text != "" {
			parts = append(parts, map[string]any{"text": t.Text})
		}
		for _, c := range t.ToolCalls {
			parts = append(parts, callPart(c))
		}
		return writeBody(w, chunk(parts, true), t.Drop)
	}

	var partsOf [][]any // the parts of each chunk
	for _, p := range pieces(t.Text) {
		partsOf = append(partsOf, []any{map[string]any{"text": p}})
	}
	for _, c := range t.ToolCalls {
		partsOf = append(partsOf, []any{callPart(c)})
	}
	var send func(v any)
	var done func() error
	if sse {
		s := startSSE(w)
		send = func(v any) { s.send("", v) }
		done = func() error { return s.err }
	} else {
		a := startArray(w)
		send = a.send
		done = a.end
	}
	if t.Drop {
		// The start of the model's content, with nothing in it yet.
		send(chunk([]any{map[string]any{"text": ""}}, false))
		abort(w)
	}
	for i, parts := range partsOf {
		send(chunk(parts, i == len(partsOf)-1))
	}
	return done()
}

// jsonArray writes a stream as one JSON array, an element at a time, as
// Google's APIs stream without ?alt=sse. After the first write error it
// writes nothing more and keeps the error.
type jsonArray struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	n   int // elements written
	err error
}

func startArray(w http.ResponseWriter) *jsonArray {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return &jsonArray{w: w, rc: http.NewResponseController(w)}
}

// send writes v as the next element.
func (a *jsonArray) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.fail(fmt.Errorf("marshal chunk: %w", err))
		return
	}
	sep := "["
	if a.n > 0 {
		sep = ",\r\n"
	}
	a.n++
	a.write(sep + string(b))
}

// end closes the array ("[]" when it is empty) and returns the first error.
func (a *jsonArray) end() error {
	if a.n == 0 {
		a.write("[")
	}
	a.write("]\n")
	return a.err
}

func (a *jsonArray) write(s string) {
	if a.err != nil {
		return
	}
	if _, err := a.w.Write([]byte(s)); err != nil {
		a.fail(fmt.Errorf("write chunk: %w", err))
		return
	}
	if err := a.rc.Flush(); err != nil {
		a.fail(fmt.Errorf("flush chunk: %w", err))
	}
}

func (a *jsonArray) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}
