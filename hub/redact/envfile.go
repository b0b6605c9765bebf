package redact

import (
	"path"
	"strconv"
	"strings"
)

// EnvFileName reports whether a file's name (its base name) says it is an
// env file of the dotenv kind: .env, .env.<anything> (.env.local,
// .env.production), or <anything>.env.
func EnvFileName(name string) bool {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	return name == ".env" || strings.HasPrefix(name, ".env.") || (strings.HasSuffix(name, ".env") && len(name) > len(".env"))
}

// EnvFileValues returns the values an env file assigns, to be redacted like
// keys wherever they appear. It reads the dotenv shapes: KEY=VALUE and
// export KEY=VALUE lines, values bare (up to a " #" comment), in double
// quotes (which may span lines) or in single quotes; blank lines and #
// comments are skipped. Every value counts, whatever its key's name: a
// file of this kind is where secrets live. A value that cannot be a
// secret is left out: one under MinLen bytes (which New ignores too),
// a boolean (true, false, yes, no, on, off) and a number. A line it cannot
// read is skipped; it never fails.
func EnvFileValues(data []byte) []string {
	var out []string
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "export "); ok {
			l = strings.TrimSpace(rest)
		}
		key, v, ok := strings.Cut(l, "=")
		if !ok || !envKey(strings.TrimSpace(key)) {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case strings.HasPrefix(v, `"`) || strings.HasPrefix(v, `'`):
			q := v[:1]
			body := v[1:]
			end := strings.Index(body, q)
			// A double-quoted value may go on over lines, to its closing quote.
			for end < 0 && q == `"` && i+1 < len(lines) {
				i++
				body += "\n" + lines[i]
				end = strings.Index(body, q)
			}
			if end >= 0 {
				body = body[:end]
			}
			v = body
		default:
			if j := strings.Index(v, " #"); j >= 0 {
				v = strings.TrimSpace(v[:j])
			}
		}
		parts := []string{v}
		if strings.Contains(v, "\n") {
			parts = append(parts, strings.Split(v, "\n")...) // each line may be shown alone
		}
		for _, part := range parts {
			if secretValue(part) {
				out = append(out, part)
			}
		}
	}
	return out
}

// envKey accepts a variable name as dotenv files write them.
func envKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		if !(c == '_' || c == '.' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// secretValue says whether an env file's value may be a secret.
func secretValue(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < MinLen {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off":
		return false
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	return true
}
