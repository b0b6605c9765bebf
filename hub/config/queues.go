package config

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Queue is a remote queue: a "queues" entry of config.json. A job started
// with `queue: <name>` does not run on this machine: the daemon hands it
// to the queue's runner (a program outside hub's core, which it starts in
// place of the job's shim), and the runner has it run on a worker machine
// and brings its branch back.
//
//	"queues": {
//	  "big": {"runner": "temporal", "address": "temporal.example:7233",
//	          "namespace": "default", "remote": "git@git.example:team/app.git", "slots": 8}
//	}
type Queue struct {
	// Runner is the kind of runner: temporal (the only one so far).
	Runner string `json:"runner"`
	// Command is the runner's program; default hub-<runner> beside the
	// hub binary, else on PATH.
	Command string `json:"command,omitempty"`
	// Address is the Temporal frontend, host:port.
	Address string `json:"address"`
	// Namespace is the Temporal namespace (default "default").
	Namespace string `json:"namespace,omitempty"`
	// TaskQueue is the Temporal task queue the workers poll (default: the
	// queue's name).
	TaskQueue string `json:"task_queue,omitempty"`
	// Remote is the git remote both this machine and the workers reach: a
	// URL or path, or the name of a remote of the job's repository. The
	// job's base is pushed there and its branch fetched back from there.
	Remote string `json:"remote"`
	// Slots is how many of the queue's jobs run at once (default 4); they
	// do not take this machine's slots.
	Slots int `json:"slots,omitempty"`
	// Auto lets engine auto send a job here when this machine's slots are
	// all busy and the queue has free slots and live workers.
	Auto bool `json:"auto,omitempty"`
	// TLS: a client certificate and key, and the CA to check the server
	// with; all empty means no TLS.
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	TLSCA   string `json:"tls_ca,omitempty"`
}

// Runners are the kinds of remote runner hub knows.
var Runners = []string{"temporal"}

// QueueSlots is the default number of a queue's jobs that run at once.
const QueueSlots = 4

// Defaulted returns q with its defaults filled in for the queue name.
func (q Queue) Defaulted(name string) Queue {
	if q.Namespace == "" {
		q.Namespace = "default"
	}
	if q.TaskQueue == "" {
		q.TaskQueue = name
	}
	if q.Slots == 0 {
		q.Slots = QueueSlots
	}
	return q
}

// RunnerCommand finds the queue's runner program: Command as given (a
// name is looked up on PATH), else hub-<runner> beside hubBinary, else on
// PATH. The error says how to get it.
func (q Queue) RunnerCommand(hubBinary string) (string, error) {
	name := q.Command
	if name == "" {
		name = "hub-" + q.Runner
		if hubBinary != "" {
			beside := filepath.Join(filepath.Dir(hubBinary), name)
			if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
				return beside, nil
			}
		}
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("the %s runner %s is not there (%v); build it with `make runners`, or fix the queue's command", q.Runner, name, err)
		}
		return name, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("the %s runner %s is not on PATH; build it with `make runners` and put it beside hub, or set the queue's command", q.Runner, name)
	}
	return p, nil
}

var queueNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// checkQueues says what is wrong with the queues of config.json file.
func checkQueues(queues map[string]Queue, file string) error {
	names := make([]string, 0, len(queues))
	for n := range queues {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		q := queues[n]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("config %s: queues.%s: %s; fix it", file, n, fmt.Sprintf(format, args...))
		}
		if !queueNameRe.MatchString(n) {
			return bad("name it with 1-32 lower-case letters, digits or '-', starting with a letter")
		}
		if q.Runner != "temporal" {
			return bad(`runner %q is not one of %s`, q.Runner, strings.Join(Runners, ", "))
		}
		if strings.TrimSpace(q.Address) == "" {
			return bad(`"address" is empty: give the Temporal frontend as host:port`)
		}
		if strings.TrimSpace(q.Remote) == "" {
			return bad(`"remote" is empty: name the git remote the workers clone from and push to`)
		}
		if q.Slots < 0 || q.Slots > 1000 {
			return bad("slots %d is not between 1 and 1000", q.Slots)
		}
		if (q.TLSCert == "") != (q.TLSKey == "") {
			return bad("tls_cert and tls_key go together")
		}
	}
	return nil
}
