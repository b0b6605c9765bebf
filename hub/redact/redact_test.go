package redact

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pem is a private key block with a body of lines lines.
func pem(label string, lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "-----BEGIN %s-----\n", label)
	for i := range lines {
		fmt.Fprintf(&b, "MIIEpAIBAAKCAQEA%048d\n", i)
	}
	fmt.Fprintf(&b, "-----END %s-----", label)
	return b.String()
}

func TestFormats(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text", "plain text stays", "plain text stays"},
		{"AWS access key id", "key AKIAABCDEFGHIJKLMNOP here", "key [REDACTED] here"},
		{"AWS session key id", "ASIAABCDEFGHIJKLMNOP", "[REDACTED]"},
		{"AWS secret in credentials", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
			"aws_secret_access_key = [REDACTED]"},
		{"AWS secret in env", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[REDACTED]"},
		{"GitHub classic", "tok ghp_abcdefghijklmnopqrstuvwxyz0123456789", "tok [REDACTED]"},
		{"GitHub app", "ghs_abcdefghijklmnopqrstuvwxyz0123456789 end", "[REDACTED] end"},
		{"GitHub fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123",
			"[REDACTED]"},
		{"GitLab", "glpat-abcdefghij0123456789", "[REDACTED]"},
		{"OpenAI project", "OPENAI sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI [REDACTED]"},
		{"OpenAI legacy", "sk-abcdefghijklmnopqrstuvwxyz012345", "[REDACTED]"},
		{"Anthropic", "x-api-key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz_0123456789-AAAA", "x-api-key: [REDACTED]"},
		{"Stripe live", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [REDACTED]"},
		{"Stripe restricted", "rk_test_4eC39HqLyjWDarjtT1zdp7dc.", "[REDACTED]."},
		{"Stripe webhook", "whsec_abcdefghijklmnopqrstuvwxyz012345", "[REDACTED]"},
		{"Slack bot", "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "[REDACTED]"},
		{"Slack app", "xapp-1-A0123456789-0123456789-abcdef", "[REDACTED]"},
		{"Slack webhook", "post to https://hooks.slack.com/services/T000/B000/XXXXXXXX now", "post to [REDACTED] now"},
		{"Google API key", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED]"},
		{"Google OAuth", "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz", "[REDACTED]"},
		{"Google client secret", "GOCSPX-abcdefghijklmnopqrstuvwxyz", "[REDACTED]"},
		{"npm", "npm_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED]"},
		{"Hugging Face", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "[REDACTED]"},
		{"JWT", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt [REDACTED]"},
		{"bearer", "Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [REDACTED]"},
		{"bearer lower case", "curl -H 'authorization: bearer abc.def-ghi_jkl~mno+pq/rs='", "curl -H 'authorization: bearer [REDACTED]'"},
		{"basic auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"},
		{"URL credentials", "git clone https://x-access-token:s3cr3tvalue@github.com/o/r", "git clone https://x-access-token:[REDACTED]@github.com/o/r"},
		{"database URL", "postgres://app:hunter2@db:5432/app", "postgres://app:[REDACTED]@db:5432/app"},
		{"assignment", "API_KEY=abcdefghijklmnop123", "API_KEY=[REDACTED]"},
		{"assignment, own name", "MY_SERVICE_TOKEN=abc123def456ghi", "MY_SERVICE_TOKEN=[REDACTED]"},
		{"assignment, JSON", `{"client_secret": "abcdefghijklmnop", "n": 1}`, `{"client_secret": "[REDACTED]", "n": 1}`},
		{"assignment, YAML", "password: hunter2hunter2", "password: [REDACTED]"},
		{"assignment, flag", "--db-password=correct-horse-42", "--db-password=[REDACTED]"},
		{"assignment, quoted word", `password = "correcthorsebattery"`, `password = "[REDACTED]"`},
		{"code stays", "token = nextToken\npassword = form.password\ntokens: 12345", "token = nextToken\npassword = form.password\ntokens: 12345"},
		{"short value stays", "password=abc", "password=abc"},
		{"the working directory stays", "PWD=/home/me/src/project2\nOLDPWD=/tmp/x1234567", "PWD=/home/me/src/project2\nOLDPWD=/tmp/x1234567"},
		{"a PWD that is a password", "DB_PWD=s3cr3t-value", "DB_PWD=[REDACTED]"},
		{"private key", pem("RSA PRIVATE KEY", 3), "[REDACTED]"},
		{"OpenSSH key in text", "before\n" + pem("OPENSSH PRIVATE KEY", 2) + "\nafter", "before\n[REDACTED]\nafter"},
		{"PKCS8 in JSON", `{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"}`, `{"private_key": "[REDACTED]\n"}`},
		{"PGP key", pem("PGP PRIVATE KEY BLOCK", 2), "[REDACTED]"},
		{"private key cut off", "out\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBk\nAAAA\n", "out\n[REDACTED]\n"},
		{"private key, its beginning cut off", "AKCAQEA000\nMIIEpAIBAAKCAQEA0000\n-----END RSA PRIVATE KEY-----\ndone", "[REDACTED]\ndone"},
		{"public key stays", "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, String(tt.in)); diff != "" {
				t.Errorf("String(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestByValue(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"one value", []string{"hunter2hunter2"}, "pw is hunter2hunter2.", "pw is [REDACTED]."},
		{"every occurrence", []string{"cnry0123456789"}, "a cnry0123456789 b cnry0123456789cnry0123456789", "a [REDACTED] b [REDACTED][REDACTED]"},
		{"regexp metacharacters mean nothing", []string{`a.b*c+d?(e)[f]{2}|^$\`}, `x a.b*c+d?(e)[f]{2}|^$\ y aXbbbcd`, `x [REDACTED] y aXbbbcd`},
		{"shorter than 8 bytes stays", []string{"abc1234"}, "abc1234 abc12345", "abc1234 abc12345"},
		{"the longer of two that start together goes whole", []string{"prefix0123", "prefix0123456789"}, "prefix0123456789!", "[REDACTED]!"},
		{"URL-escaped form", []string{"p@ss/w0rd+x"}, "https://h/?k=p%40ss%2Fw0rd%2Bx", "https://h/?k=[REDACTED]"},
		{"surrounding space", []string{" spaced-value-123 "}, "got spaced-value-123", "got [REDACTED]"},
		{"a token that holds a value goes whole", []string{"abcdefghijklmnop"}, "Bearer abcdefghijklmnopqrstuvwx", "Bearer [REDACTED]"},
		{"a value that looks like nothing", []string{"Zq3nLUR7e9cKx0aJ"}, "the canary Zq3nLUR7e9cKx0aJ in prose", "the canary [REDACTED] in prose"},
		{"empty and none", []string{"", "   "}, "nothing here", "nothing here"},
		{"a value that an assignment format would cut short", []string{"c4.ab+*?(x)!z"}, "anthropic_key=c4.ab+*?(x)!z next", "anthropic_key=[REDACTED] next"},
		{"the word around a value goes with it", []string{"hunter2hunter2"}, "id_hunter2hunter2-v2 x", "[REDACTED] x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, New(tt.values...).String(tt.in)); diff != "" {
				t.Errorf("New(%q).String(%q) (-want +got):\n%s", tt.values, tt.in, diff)
			}
		})
	}
}

// TestMarkersStay: redacting twice changes nothing, even with a value that
// is part of the marker.
func TestMarkersStay(t *testing.T) {
	r := New("REDACTED", "value] tail", "abcdefgh [")
	for _, in := range []string{"REDACTED", "[REDACTED] value] tail", "abcdefgh AKIAABCDEFGHIJKLMNOP", "token=[REDACTED]xyz0123456"} {
		once := r.String(in)
		if twice := r.String(once); twice != once {
			t.Errorf("String(%q) = %q, but again gives %q", in, once, twice)
		}
	}
}

func TestStream(t *testing.T) {
	r := New("cnry0123456789")
	key := pem("RSA PRIVATE KEY", 4)
	in := "starting\nread cnry0123456789 from the env\n" + key + "\nafter the key\nhalf -----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- rest\n" +
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
	in += "\n-----BEGIN ENCRYPTED PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----\n" +
		"grep: main.go: \"-----BEGIN RSA PRIVATE KEY-----\"\nmain.go:12: ok, not a key\nlast\n"
	var got strings.Builder
	s := r.Stream()
	for line := range strings.Lines(in) {
		got.WriteString(s.Line(line))
	}
	want := "starting\nread [REDACTED] from the env\n[REDACTED]\nafter the key\nhalf [REDACTED]\n rest\n[REDACTED]\n" +
		"[REDACTED]\n" + "grep: main.go: \"[REDACTED]\n" + "main.go:12: ok, not a key\nlast\n"
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "AWS_SECRET_ACCESS_KEY": true, "GITHUB_TOKEN": true,
		"MY_SERVICE_TOKEN": true, "STRIPE_SECRET": true, "DB_PASSWORD": true, "mysql_passwd": true, "CLIENT_SECRET_ID": true,
		"GH_PAT": true, "SERVICEAPIKEY": true, "DATABASE_URL": true,
		"PATH": false, "HOME": false, "KEYBOARD": false, "TOKENIZER": false, "GOFLAGS": false, "LANG": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
	got := EnvValues([]string{"PATH=/usr/bin", "OPENAI_API_KEY=sk-one", "MY_TOKEN=two=2", "EMPTY_KEY=", "NOEQUALS"})
	if diff := cmp.Diff([]string{"sk-one", "two=2"}, got); diff != "" {
		t.Errorf("EnvValues (-want +got):\n%s", diff)
	}
}

// TestNoGrowth: the output never grows by more than its markers.
func TestNoGrowth(t *testing.T) {
	r := New("abcdefgh", "abcdefghij")
	in := strings.Repeat("abcdefghij abcdefgh password=abc123456789 AKIAABCDEFGHIJKLMNOP\n", 50)
	out := r.String(in)
	if n := strings.Count(out, marker); len(out) > len(in)+n*len(marker) {
		t.Errorf("grew from %d to %d bytes with %d markers", len(in), len(out), n)
	}
}

// benchOutput is a worker's output of about size bytes: build logs, a few
// secrets.
func benchOutput(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "ok  \tgithub.com/example/pkg%d\t0.%03ds\tcoverage: %d.0%% of statements\n", i, i%1000, i%100)
		if i%500 == 0 {
			b.WriteString("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx\n")
		}
	}
	return b.String()
}

// TestLargeOutputScales guards against a redactor that is quadratic or runs
// a slow pass per value: 8 MiB with 50 values costs about 8 times 1 MiB.
// It compares the two, measured in the same run, so a slow or loaded
// machine does not fail it (speed itself is make bench's: BenchmarkString
// against its floor); more than 3 times linear fails.
func TestLargeOutputScales(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	var values []string
	for i := range 50 {
		values = append(values, fmt.Sprintf("value-%02d-0123456789", i))
	}
	r := New(values...)
	per := func(size int) float64 {
		in := benchOutput(size)
		return float64(testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				r.String(in)
			}
		}).NsPerOp())
	}
	small, large := per(1<<20), per(8<<20)
	ratio := large / small
	t.Logf("1 MiB: %.0fms, 8 MiB: %.0fms: %.1f× (linear is 8×)", small/1e6, large/1e6, ratio)
	if ratio > 24 {
		t.Errorf("8 MiB costs %.1f× 1 MiB; linear is 8×", ratio)
	}
}

// BenchmarkString is the redactor over 1 MiB of test output with 20 known
// values; BenchmarkStringReplacer, its floor, replaces the same values with
// a bare strings.Replacer and knows no formats. make bench reports the ratio.
func BenchmarkString(b *testing.B) {
	r := New(benchValues()...)
	in := benchOutput(1 << 20)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.String(in)
	}
}

func BenchmarkStringReplacer(b *testing.B) {
	var pairs []string
	for _, v := range benchValues() {
		pairs = append(pairs, v, "[REDACTED]")
	}
	r := strings.NewReplacer(pairs...)
	in := benchOutput(1 << 20)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		r.Replace(in)
	}
}

func benchValues() []string {
	var values []string
	for i := range 20 {
		values = append(values, fmt.Sprintf("value-%02d-0123456789", i))
	}
	return values
}
