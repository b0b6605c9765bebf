// Package scripted is a model server that plays a script. It stands in for an
// LLM provider wherever no real one can be reached: in hub's tests, in the
// offline demo, and behind real agent CLIs pointed at it.
//
// What it owns: four wire formats over real HTTP — OpenAI Chat Completions
// (POST /v1/chat/completions), OpenAI Responses (POST /v1/responses),
// Anthropic Messages (POST /v1/messages, /v1/messages/count_tokens), plus
// GET /v1/models, and Google's Gemini API (POST
// /v1beta/models/{model}:generateContent, :streamGenerateContent — a JSON
// array, or server-sent events with ?alt=sse — and :countTokens, plus GET
// /v1beta/models and /v1beta/models/{model}) — and a [Script] of [Turn]s
// per model name. Each model request consumes the next turn of the script
// chosen by the request's "model" field, or on the Gemini wire the model in
// its path (the default script, set under the name "", when no other
// matches), and is answered in the request's own wire format, streamed or
// not as the client asked; errors too are answered in the wire's shape
// (Google's {"error":{"code","message","status"}} on the Gemini wire). Every
// well-formed model request is kept in a wire-neutral log
// ([Server.Requests]) so a test can check what a client sent: the system
// prompt, the normalised history, the tool calls and tool results with
// their call ids (made up by name and order where Gemini clients send
// none), the tools offered.
//
// What it must never do: listen on anything but loopback; reach the network
// or a real provider; invent a reply the script does not hold (when a script
// has no turn left the request fails with HTTP 500 and a message naming the
// model, so a test fails loudly instead of hanging); log request bodies,
// headers or queries (they may carry credentials: Authorization, x-api-key,
// Gemini's x-goog-api-key or ?key= — the log holds them for inspection,
// Options.Logf never sees them).
//
// # Concurrency
//
// A Server is safe for concurrent use by any number of clients and
// goroutines. Turns of one model's script are consumed one at a time under a
// mutex, in the order the server finishes reading request bodies; requests
// in flight at the same time therefore each get a distinct turn, but which
// of them gets which is up to the scheduler, so a script shared by
// concurrent callers must not depend on that order. The request log is
// appended under the same mutex, so Requests()[i] is the request that took
// the i-th turn handed out (or was refused for want of one). A turn's delay
// and its response are played outside the mutex: a slow turn never holds up
// another request.
package scripted
