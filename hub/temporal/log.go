package temporal

import (
	"fmt"

	"github.com/rs/zerolog"
)

// logAdapter is Temporal's logger on zerolog (to stderr or a file, never
// a protocol stream).
type logAdapter struct{ l zerolog.Logger }

func (a logAdapter) Debug(msg string, kv ...any) { a.with(a.l.Debug(), kv).Msg(msg) }
func (a logAdapter) Info(msg string, kv ...any)  { a.with(a.l.Debug(), kv).Msg(msg) }
func (a logAdapter) Warn(msg string, kv ...any)  { a.with(a.l.Warn(), kv).Msg(msg) }
func (a logAdapter) Error(msg string, kv ...any) { a.with(a.l.Error(), kv).Msg(msg) }

func (logAdapter) with(e *zerolog.Event, kv []any) *zerolog.Event {
	for i := 0; i+1 < len(kv); i += 2 {
		e = e.Interface(fmt.Sprint(kv[i]), kv[i+1])
	}
	return e
}
