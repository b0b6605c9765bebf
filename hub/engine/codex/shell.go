package codex

import (
	"path"
	"strings"
)

// shellScript returns the script of a command Codex reports as a shell
// invocation (`/bin/bash -lc 'echo fixed > bug.txt'`: its argv quoted for a
// POSIX shell), so the hub records what the worker asked to run; any other
// command comes back as it is.
func shellScript(cmd string) string {
	argv, ok := splitWords(cmd)
	if !ok || len(argv) != 3 {
		return cmd
	}
	switch path.Base(argv[0]) {
	case "bash", "sh", "zsh", "dash":
	default:
		return cmd
	}
	switch argv[1] {
	case "-c", "-lc", "-ic", "-lic":
		return argv[2]
	}
	return cmd
}

// splitWords splits s into words as a POSIX shell does, for the quoting
// Codex writes: single quotes, double quotes with backslash escapes, and
// backslashes outside quotes. It refuses (false) anything it cannot read
// exactly: an unclosed quote, a trailing backslash.
func splitWords(s string) ([]string, bool) {
	var (
		words []string
		cur   strings.Builder
		in    bool // inside a word
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			in = true
		case c == '"':
			in = true
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(d)
			}
			if !closed {
				return nil, false
			}
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
			}
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, true
}
