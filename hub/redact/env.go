package redact

import (
	"os"
	"strings"
)

// secretNames are variables that hold a secret whatever their name's shape.
var secretNames = map[string]bool{
	"ANTHROPIC_API_KEY": true, "OPENAI_API_KEY": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true,
	"GITHUB_TOKEN": true, "GH_TOKEN": true, "GITLAB_TOKEN": true, "NPM_TOKEN": true, "HF_TOKEN": true,
	"DATABASE_URL": true, "SLACK_WEBHOOK_URL": true, "AZURE_CLIENT_SECRET": true, "GOOGLE_API_KEY": true,
}

// SecretName reports whether an environment variable's name says it holds
// a secret: a well-known one, or a name ending in _KEY, _TOKEN, _SECRET or
// _PAT, or containing PASSWORD, PASSWD or SECRET (in any case).
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	if secretNames[n] {
		return true
	}
	for _, suffix := range []string{"_KEY", "_TOKEN", "_SECRET", "_PAT", "APIKEY"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return strings.Contains(n, "PASSWORD") || strings.Contains(n, "PASSWD") || strings.Contains(n, "SECRET")
}

// EnvValues returns the values of the variables in environ (NAME=value
// entries, as os.Environ gives them) whose names SecretName accepts.
func EnvValues(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && SecretName(k) && strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}

// WithEnv is New over values plus the secret-named variables of this
// process's environment: the redactor the shim and the daemon both use.
func WithEnv(values ...string) *Redactor {
	return New(append(values, EnvValues(os.Environ())...)...)
}
