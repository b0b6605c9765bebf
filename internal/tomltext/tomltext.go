// Package tomltext writes the TOML hub puts in Codex's config files: the
// [mcp_servers.hub] table `hub install` adds to the user's config.toml and
// the whole config.toml the codex engine writes for a job. One writer, so
// both quote keys and strings the same way, and the same text stays the
// same from one hub to the next (install compares what is there with what
// it would write).
//
// It writes keys bare when TOML allows and as basic strings otherwise,
// strings as basic strings ("…", escaped as TOML wants), and a string map as
// an inline table with its keys sorted. It never reads TOML: go-toml does.
//
// It imports nothing of hub.
package tomltext

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Key writes k as a TOML key: bare when it can be, quoted otherwise.
func Key(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return String(k)
		}
	}
	return k
}

// Path writes a dotted key, each part as Key writes it.
func Path(keys ...string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = Key(k)
	}
	return strings.Join(parts, ".")
}

// Header writes the header line of the table at path, with its line break.
func Header(path ...string) string { return "[" + Path(path...) + "]\n" }

// KeyValue writes one `key = value` line, with its line break.
func KeyValue(k string, v any) string { return Key(k) + " = " + Value(v) + "\n" }

func isBare(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// String writes s as a TOML basic string. A byte that is not UTF-8 becomes
// U+FFFD, as TOML files are UTF-8.
func String(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r) // a byte that is not UTF-8 came as utf8.RuneError
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Value writes a string, a bool, an int or int64, a list of strings, or a
// string map (an inline table, its keys sorted). Any other type is a bug
// in the caller, and panics.
func Value(v any) string {
	switch v := v.(type) {
	case string:
		return String(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = String(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]string:
		if len(v) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = Key(k) + " = " + String(v[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	panic(fmt.Sprintf("tomltext: no TOML form for %T", v))
}
