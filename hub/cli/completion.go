package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/agent/profile"
	"github.com/hub-agents/hub/hub/config"
	"github.com/hub-agents/hub/hub/deps"
	"github.com/hub-agents/hub/hub/install"
	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/hub/store"
	"github.com/hub-agents/hub/hub/view"
)

// complete gives the tree its dynamic completions (`hub completion bash`
// and the others print the scripts): job ids for the commands that take
// them, engines, clients, profiles and the fixed words of the flags that
// take one. Completion reads HUB_HOME's store and the profiles file
// directly: it never starts a daemon, and a shell never waits on one.
func complete(root *cobra.Command) {
	// The commands whose first arguments are job ids: how many, and which
	// jobs make sense there.
	jobArgs := map[string]struct {
		n    int // -1: any number
		want func(protocol.State) bool
	}{
		"wait": {-1, live}, "watch": {-1, live}, "status": {1, nil}, "result": {1, nil}, "events": {1, nil}, "trace": {1, nil},
		"reply": {1, func(s protocol.State) bool { return s == protocol.StateNeedsInput }},
		"steer": {1, live}, "stop": {1, live},
		"cleanup": {1, protocol.State.Terminal}, "land": {-1, protocol.State.Terminal}, "review": {-1, protocol.State.Terminal},
	}
	words := map[string]func() []string{
		"engine":    engineNames,
		"client":    func() []string { return append(clientNames(), "all") },
		"profile":   profileNames,
		"isolation": func() []string { return strs(protocol.IsolationLevels) },
		"kind":      func() []string { return strs(protocol.Kinds) },
		"state":     func() []string { return strs(protocol.States) },
		"effort":    func() []string { return protocol.Efforts },
		"deps":      func() []string { return []string{deps.DepsAuto, deps.DepsOff} },
		"order":     func() []string { return []string{protocol.OrderGiven, protocol.OrderAuto} },
		"into":      branchNames,
		"job":       func() []string { return jobIDs(nil) },
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if ja, ok := jobArgs[c.Name()]; ok && c.Parent() == root {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if ja.n >= 0 && len(args) >= ja.n {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return jobIDs(ja.want), cobra.ShellCompDirectiveNoFileComp
			}
		}
		if p := c.Parent(); p != nil && p.Name() == "profile" && (c.Name() == "remove" || c.Name() == "default") ||
			c.Name() == "status" && c.Parent() != nil && c.Parent().Name() == "provider" {
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return profileNames(), cobra.ShellCompDirectiveNoFileComp
			}
		}
		for name, list := range words {
			if c.LocalFlags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
					return list(), cobra.ShellCompDirectiveNoFileComp
				})
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func live(s protocol.State) bool { return !s.Terminal() }

func strs[S ~string](l []S) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

// jobIDs is HUB_HOME's newest jobs that want says fit (nil: all), each
// "id<TAB>state · task" so a shell that shows descriptions shows what each
// is. Nothing when there is no store yet.
func jobIDs(want func(protocol.State) bool) []string {
	paths, err := config.Resolve()
	if err != nil {
		return nil
	}
	if _, err := os.Stat(paths.DB()); err != nil {
		return nil
	}
	st, err := store.Open(paths.DB())
	if err != nil {
		return nil
	}
	defer st.Close()
	jobs, err := st.ListJobs(context.Background(), nil, "", 200)
	if err != nil {
		return nil
	}
	var out []string
	for _, j := range jobs {
		if want != nil && !want(j.State) {
			continue
		}
		out = append(out, fmt.Sprintf("%s\t%s · %s", j.ID, j.State, view.OneLine(j.Task, 60)))
	}
	return out
}

// branchNames is the local branches of the checkout the shell is in, but
// the jobs' own (hub/<id>), which land refuses as a target.
func branchNames() []string {
	out, err := exec.Command("git", "for-each-ref", "--format=%(refname:short)", "refs/heads/").Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, b := range strings.Fields(string(out)) {
		if !strings.HasPrefix(b, "hub/") {
			names = append(names, b)
		}
	}
	return names
}

// engineNames is every engine hub has, and auto.
func engineNames() []string {
	return append([]string{"auto"}, Engines(zerolog.Nop()).Names()...)
}

func clientNames() []string {
	var out []string
	for _, c := range install.Clients() {
		out = append(out, c.Name)
	}
	return out
}

// profileNames is the built-in worker's profiles, the default first.
func profileNames() []string {
	ps, def, err := profile.Store{Dir: config.ConfigDir()}.List()
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	slices.SortStableFunc(out, func(a, b string) int {
		switch {
		case a == def:
			return -1
		case b == def:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}
