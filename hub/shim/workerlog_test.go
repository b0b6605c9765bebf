//go:build unix

package shim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hub-agents/hub/hub/redact"
)

// openWorkerLog opens a worker log as the shim does.
func openWorkerLog(t *testing.T) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "worker.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

var cutRe = regexp.MustCompile(`(?m)^… (\d+) bytes of worker output cut …\n`)

// checkBoundedLog checks a log of numbered lines ("<prefix><n> …"): at most
// limit bytes on disk, the head from line 1 on and the tail up to the last
// line, each without a gap, and between them one line that counts exactly
// the bytes cut out of total. It returns the number of the last line.
func checkBoundedLog(t *testing.T, path string, limit, total int64, prefix string) (head, last int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) > limit || st.Blocks*512 > limit {
		t.Errorf("the log is %d bytes (%d on disk); the limit is %d", len(b), st.Blocks*512, limit)
	}
	m := cutRe.FindAllSubmatchIndex(b, -1)
	if len(m) != 1 {
		t.Fatalf("the log has %d cut lines, want 1", len(m))
	}
	cut, _ := strconv.ParseInt(string(b[m[0][2]:m[0][3]]), 10, 64)
	if kept := int64(len(b) - (m[0][1] - m[0][0])); kept+cut != total {
		t.Errorf("kept %d + cut %d bytes = %d, but %d were written", kept, cut, kept+cut, total)
	}
	seqs := func(part []byte) []int {
		var out []int
		for _, line := range strings.Split(strings.TrimSuffix(string(part), "\n"), "\n") {
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				t.Fatalf("not a line of the output: %.80q", line)
			}
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatalf("not a numbered line: %.80q", line)
			}
			out = append(out, n)
		}
		return out
	}
	h, tl := seqs(b[:m[0][0]]), seqs(b[m[0][1]:])
	for i, n := range h {
		if n != i+1 {
			t.Fatalf("head line %d is number %d", i+1, n)
		}
	}
	for i := 1; i < len(tl); i++ {
		if tl[i] != tl[i-1]+1 {
			t.Fatalf("the tail skips from line %d to %d", tl[i-1], tl[i])
		}
	}
	if tl[0] <= h[len(h)-1] {
		t.Errorf("the tail begins at line %d, inside the head (to %d)", tl[0], h[len(h)-1])
	}
	return len(h), tl[len(tl)-1]
}

// TestWorkerLogBounded: a worker log is kept within its bound whatever the
// output: the head, a line saying how much was cut, and the last lines, in
// whole lines, still redacted however the writes cut them.
func TestWorkerLogBounded(t *testing.T) {
	f, path := openWorkerLog(t)
	const limit = 64 << 10
	l := &lineRedactor{w: f, r: redact.New("canary-0123456789"), limit: limit}
	var out bytes.Buffer
	for i := 1; i <= 20000; i++ {
		if i%1000 == 0 {
			fmt.Fprintf(&out, "line %d secret canary-0123456789 here\n", i)
			continue
		}
		fmt.Fprintf(&out, "line %d %s\n", i, strings.Repeat("x", i%97))
	}
	all := out.String()
	for i := 0; i < len(all); i += 4093 { // writes that cut lines and secrets anywhere
		if _, err := l.Write([]byte(all[i:min(i+4093, len(all))])); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing waits in memory: the log on disk already ends with the last line.
	if b, _ := os.ReadFile(path); !bytes.HasSuffix(b, []byte("line 20000 secret [REDACTED] here\n")) {
		t.Errorf("the log does not end with the last line written: %q", b[max(0, len(b)-80):])
	}
	l.Flush()
	redacted := int64(len(strings.ReplaceAll(all, "canary-0123456789", "[REDACTED]")))
	head, last := checkBoundedLog(t, path, limit, redacted, "line ")
	if head < 100 || last != 20000 {
		t.Errorf("head of %d lines, last line %d; want a head of its quarter and line 20000 last", head, last)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("canary-0123456789")) {
		t.Error("the log holds the secret")
	}

	// Under the bound, nothing is cut.
	f2, path2 := openWorkerLog(t)
	l2 := &lineRedactor{w: f2, r: redact.New(), limit: limit}
	small := strings.Repeat("a short line\n", 100)
	l2.Write([]byte(small))
	if b, _ := os.ReadFile(path2); string(b) != small {
		t.Errorf("a small log changed: %q", b)
	}
}

// floodSeconds is how long TestWorkerLogFlood's worker prints;
// HUB_TEST_FLOOD_SECONDS sets it (the measurement in the docs is 20).
func floodSeconds() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("HUB_TEST_FLOOD_SECONDS")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 3 * time.Second
}

// TestWorkerLogFlood: a worker printing as fast as it can leaves at most the
// default bound on disk, at any moment, and the log's last lines are the
// last lines it printed.
func TestWorkerLogFlood(t *testing.T) {
	f, path := openWorkerLog(t)
	l := &lineRedactor{w: f, r: redact.New("canary-0123456789")}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$", "-test.count=1")
	// At least one and a half limits, however slow the machine is today,
	// so the log is always cut.
	cmd.Env = append(os.Environ(), "HUB_FLOOD_FOR="+floodSeconds().String(), fmt.Sprintf("HUB_FLOOD_MIN_BYTES=%d", workerLogLimit*3/2))
	cmd.Stdout = l
	var errOut bytes.Buffer
	cmd.Stderr = &errOut

	var biggest atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the bound holds while it floods, not only at the end
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var st syscall.Stat_t
			if syscall.Stat(path, &st) == nil {
				biggest.Store(max(biggest.Load(), st.Size, st.Blocks*512))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	close(stop)
	<-sampled
	l.Flush()
	if err != nil {
		t.Fatalf("flood: %v\n%s", err, errOut.String())
	}
	// The helper's last line on stderr: how many lines and bytes it printed.
	var lines, total int64
	if _, err := fmt.Sscanf(lastLine(errOut.String()), "printed %d lines %d bytes", &lines, &total); err != nil {
		t.Fatalf("the flood did not say what it printed: %v\n%s", err, errOut.String())
	}
	// The PASS line the helper's test binary prints goes to stdout too, last.
	total += int64(len("PASS\n"))
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), fmt.Sprintf("flood %d done\nPASS\n", lines)) {
		t.Errorf("the log does not end with the last lines printed: %q", b[max(0, len(b)-200):])
	}
	b = bytes.TrimSuffix(b, []byte("PASS\n"))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	checkBoundedLog(t, path, workerLogLimit, total-int64(len("PASS\n")), "flood ")
	if biggest.Load() > workerLogLimit {
		t.Errorf("the log reached %d bytes on disk while flooded; the limit is %d", biggest.Load(), workerLogLimit)
	}
	t.Logf("printed %d lines, %d MB in %s (%.0f MB/s); the log peaked at %d bytes on disk, ended at %d (limit %d)",
		lines, total>>20, took.Round(time.Millisecond), float64(total)/(1<<20)/took.Seconds(), biggest.Load(), len(b), workerLogLimit)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestFloodHelper is TestWorkerLogFlood's worker: it prints numbered lines
// as fast as it can for HUB_FLOOD_FOR and at least HUB_FLOOD_MIN_BYTES,
// then "flood <n> done", and says on stderr how much it printed.
func TestFloodHelper(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("HUB_FLOOD_FOR"))
	if err != nil {
		t.Skip("run by TestWorkerLogFlood")
	}
	least, _ := strconv.ParseInt(os.Getenv("HUB_FLOOD_MIN_BYTES"), 10, 64)
	w := bufio.NewWriterSize(os.Stdout, 256<<10)
	pad := strings.Repeat("x", 80)
	var n, total int64
	end := time.Now().Add(d)
	for {
		for range 1000 {
			n++
			k, _ := fmt.Fprintf(w, "flood %d %s\n", n, pad)
			total += int64(k)
		}
		if time.Now().After(end) && total >= least {
			break
		}
	}
	n++
	k, _ := fmt.Fprintf(w, "flood %d done\n", n)
	total += int64(k)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "printed %d lines %d bytes\n", n, total)
}
