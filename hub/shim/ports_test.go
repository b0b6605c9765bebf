package shim

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hub-agents/hub/hub/config"
)

// TestReservePorts: live jobs never share a port, a port something else
// listens on is never handed out, and a released range is free again.
func TestReservePorts(t *testing.T) {
	paths := config.Paths{Home: filepath.Join(t.TempDir(), "hub")}
	held := map[int]string{}
	var all []*ports
	for i := range 30 {
		id := "job" + strconv.Itoa(i%3) // the same id again: it must still get a range of its own
		p, err := reservePorts(paths, id)
		if err != nil {
			t.Fatal(err)
		}
		for port := p.first; port < p.first+PortCount; port++ {
			if other, ok := held[port]; ok {
				t.Fatalf("port %d given to %s and to %s", port, other, id)
			}
			held[port] = id
		}
		all = append(all, p)
	}
	// A port in use: the range holding it is skipped.
	first := all[0].first
	all[0].release()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first+3)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := reservePorts(paths, "job0")
	if err != nil {
		t.Fatal(err)
	}
	if p.first == first {
		t.Errorf("range %d handed out with port %d in use", first, first+3)
	}
	ln.Close()
	p.release()
	// Released and unused: free again for whoever derives it first.
	again, err := reservePorts(paths, "job0")
	if err != nil {
		t.Fatal(err)
	}
	if again.first != first {
		t.Errorf("job0 got %d after its range %d was released; want it back", again.first, first)
	}
	env := again.env()
	want := []string{"HUB_PORT=" + strconv.Itoa(first), "HUB_PORTS=" + strconv.Itoa(first) + "-" + strconv.Itoa(first+9), "PORT=" + strconv.Itoa(first)}
	for i := range want {
		if env[i] != want[i] {
			t.Errorf("env[%d] = %q, want %q", i, env[i], want[i])
		}
	}
}
