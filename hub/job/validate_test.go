package job

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestCommandSize: the longest command start takes is one sh -c still
// runs, and one byte more is what Linux refuses (E2BIG); start refuses it,
// with what to do instead.
func TestCommandSize(t *testing.T) {
	longest := ": " + strings.Repeat("x", MaxCommandBytes-2)
	if err := exec.Command("sh", "-c", longest).Run(); err != nil {
		t.Fatalf("a command of %d bytes does not run: %v", len(longest), err)
	}
	if err := exec.Command("sh", "-c", longest+"x").Run(); !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("a command of %d bytes: %v, want E2BIG", len(longest)+1, err)
	}
	if err := commandSize("exec", longest); err != nil {
		t.Errorf("refused a command that runs: %v", err)
	}
	err := commandSize("verify", longest+"x")
	if err == nil || err.Field != "verify" || !strings.Contains(err.Msg, "at most 131071 bytes") || !strings.Contains(err.Hint, "script in the repository") {
		t.Errorf("got %+v, want verify refused with the limit and a hint", err)
	}
}
