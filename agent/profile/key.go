package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gofrs/flock"

	"github.com/hub-agents/hub/agent/oauth"
	"github.com/hub-agents/hub/internal/atomicfile"
)

// Key sources.
const (
	FromEnv     = "environment"
	FromEnvFile = "env file"
	NotNeeded   = "not needed"
	// FromLogin is a device-flow login's tokens (hub profile login).
	FromLogin = "login"
)

// Key returns the profile's key and where it came from: the environment
// first, then the env file. A missing key that the provider needs is an
// error that says how to add one.
func (s Store) Key(p Profile) (key, source string, err error) {
	if p.LogsIn() {
		// The token is handed out by an oauth.Source, refreshed as it goes;
		// here only whether there is a login.
		t, err := s.Logins().Load(p.Name)
		if err != nil {
			if errors.Is(err, oauth.ErrNotLoggedIn) {
				return "", "", fmt.Errorf("profile %s is not logged in: run `hub profile login %s` in a terminal", p.Name, p.Name)
			}
			return "", "", err
		}
		if t.Provider != p.Provider || strings.TrimRight(t.LoginURL, "/") != strings.TrimRight(p.LoginURL, "/") {
			return "", "", fmt.Errorf("profile %s was logged in to another provider or login server than it names now: run `hub profile login %s` again", p.Name, p.Name)
		}
		return "", FromLogin, nil
	}
	name := p.KeyName()
	if name == "" {
		return "", NotNeeded, nil
	}
	lookup := s.Environ
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), FromEnv, nil
	}
	vars, err := s.readEnvFile()
	if err != nil {
		return "", "", err
	}
	if v := vars[name]; v != "" {
		return v, FromEnvFile, nil
	}
	if !p.NeedsKey() {
		return "", NotNeeded, nil
	}
	return "", "", fmt.Errorf("profile %s needs %s: export it, or store it with `hub profile set %s --key-stdin` (kept in %s, mode 0600)",
		p.Name, name, p.Name, s.EnvFile())
}

// SetKey stores name=value in the env file (created 0600).
func (s Store) SetKey(name, value string) error {
	if !envRe.MatchString(name) {
		return fmt.Errorf("%q is not a valid environment variable name", name)
	}
	value = strings.TrimSpace(value)
	if value == "" || strings.ContainsAny(value, "\n\r\x00") {
		return errors.New("the key is empty or spans lines; pass it on one line")
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	l := flock.New(s.EnvFile() + ".lock")
	if err := l.Lock(); err != nil {
		return fmt.Errorf("lock env file: %w", err)
	}
	defer l.Unlock()
	var out bytes.Buffer
	b, err := os.ReadFile(s.EnvFile())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	replaced := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := parseEnvLine(line); ok && k == name {
			if !replaced {
				fmt.Fprintf(&out, "%s=%s\n", name, value)
				replaced = true
			}
			continue
		}
		out.WriteString(line + "\n")
	}
	if !replaced {
		fmt.Fprintf(&out, "%s=%s\n", name, value)
	}
	return atomicfile.Write(s.EnvFile(), out.Bytes(), 0o600)
}

// readEnvFile parses the env file; one readable by others is refused.
func (s Store) readEnvFile() (map[string]string, error) {
	vars := map[string]string{}
	fi, err := os.Stat(s.EnvFile())
	if errors.Is(err, os.ErrNotExist) {
		return vars, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s holds keys but is readable by others (mode %04o); run chmod 600 %s", s.EnvFile(), fi.Mode().Perm(), s.EnvFile())
	}
	b, err := os.ReadFile(s.EnvFile())
	if err != nil {
		return nil, err
	}
	return parseEnvFile(b)
}

func parseEnvFile(b []byte) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if k, v, ok := parseEnvLine(sc.Text()); ok {
			vars[k] = v
		}
	}
	return vars, sc.Err()
}

// parseEnvLine reads KEY=value, with an optional `export ` and quotes.
func parseEnvLine(line string) (k, v string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", "", false
	}
	line = strings.TrimPrefix(line, "export ")
	k, v, ok = strings.Cut(line, "=")
	k = strings.TrimSpace(k)
	if !ok || !envRe.MatchString(k) {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return k, v, true
}

// KeyValues returns every key value this store can reach: each profile's key
// (from the environment or the env file), every value in the env file and
// every login token.
// It exists so hub can redact them by value from what it stores and shows;
// a caller must never print, log or pass on what it returns. What cannot be
// read is skipped: redacting less is better than failing a job. An env file
// readable by others, which Key refuses, is still read here.
func (s Store) KeyValues() []string {
	var out []string
	if b, err := os.ReadFile(s.EnvFile()); err == nil {
		vars, _ := parseEnvFile(b)
		for _, v := range vars {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	out = append(out, s.Logins().Values()...)
	ps, _, err := s.List()
	if err != nil {
		return out
	}
	for _, p := range ps {
		if k, _, err := s.Key(p); err == nil && k != "" {
			out = append(out, k)
		}
	}
	return out
}
