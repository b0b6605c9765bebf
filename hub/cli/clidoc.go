package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// ReferencePath is the flag reference WriteReference writes, relative to
// the repository's root; `make cli-docs` (go run ./cmd/clidoc) rewrites it.
const ReferencePath = "docs/cli-reference.md"

// WriteReference writes the CLI's reference, docs/cli-reference.md: every
// available command of the tree NewRoot builds (hidden ones left out), with
// its usage, description and flags as cobra/doc renders them, in one file
// whose links point at its own sections. The order is the one `hub --help`
// lists, by group and then by name, each command followed by its
// subcommands. Nothing in it depends on when or where it is made: no date,
// and no flag of the tree has a default drawn from HOME, HUB_HOME or the
// machine (TestCLIReferenceCurrent builds it under another HOME to be sure).
func WriteReference(w io.Writer) error {
	root := NewRoot(&IO{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	// What cobra adds when it executes a command line: the help and
	// completion commands and the help and version flags.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()

	var buf bytes.Buffer
	buf.WriteString("# hub CLI reference\n\n" +
		"<!-- Generated from the command tree by `make cli-docs` (go run ./cmd/clidoc); do not edit. -->\n\n" +
		"Every command with its usage and flags, as `hub <command> --help` gives them. " +
		"[cli.md](cli.md) says what the commands do, with the exit codes and the longer stories " +
		"(landing, routing, money, traces, disk use).\n\n")
	fmt.Fprintf(&buf, "- [%s](%s): the flags every command takes\n\n", root.Name(), anchor(root.CommandPath()))
	sections := []*cobra.Command{root}
	var walk func(c *cobra.Command, depth int)
	walk = func(c *cobra.Command, depth int) {
		fmt.Fprintf(&buf, "%s- [%s](%s) — %s\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c.CommandPath()), c.Short)
		sections = append(sections, c)
		for _, sub := range available(c) {
			walk(sub, depth+1)
		}
	}
	for _, g := range grouped(root) {
		fmt.Fprintf(&buf, "**%s**\n\n", g.title)
		for _, c := range g.cmds {
			walk(c, 0)
		}
		buf.WriteString("\n")
	}
	for _, c := range sections {
		if err := section(&buf, c); err != nil {
			return err
		}
	}
	_, err := w.Write(append(bytes.TrimRight(buf.Bytes(), "\n"), '\n'))
	return err
}

// section writes c's section as cobra/doc renders it, with two changes:
// the long description is set as the terminal shows it (its lines and
// indented columns kept, nothing in it read as Markdown), and the root's
// list of commands is left out, the contents above having them all.
func section(buf *bytes.Buffer, c *cobra.Command) error {
	c.DisableAutoGenTag = true // no date
	if long := strings.TrimRight(c.Long, "\n"); long != "" {
		c.Long = "```\n" + long + "\n```"
	}
	var b bytes.Buffer
	if err := doc.GenMarkdownCustom(c, &b, linkInFile); err != nil {
		return err
	}
	out := b.Bytes()
	if !c.HasParent() {
		if i := bytes.Index(out, []byte("### SEE ALSO\n")); i >= 0 {
			out = out[:i]
		}
	}
	buf.Write(out)
	return nil
}

type group struct {
	title string
	cmds  []*cobra.Command
}

// grouped is the root's available subcommands as `hub --help` lists them:
// by group in the groups' order, those of no group last, each by name.
func grouped(root *cobra.Command) []group {
	subs := available(root)
	var out []group
	known := map[string]bool{}
	for _, g := range root.Groups() {
		known[g.ID] = true
		gr := group{title: strings.TrimSuffix(g.Title, ":")}
		for _, c := range subs {
			if c.GroupID == g.ID {
				gr.cmds = append(gr.cmds, c)
			}
		}
		if len(gr.cmds) > 0 {
			out = append(out, gr)
		}
	}
	other := group{title: "Other commands"}
	for _, c := range subs {
		if !known[c.GroupID] {
			other.cmds = append(other.cmds, c)
		}
	}
	if len(other.cmds) > 0 {
		out = append(out, other)
	}
	return out
}

// available is c's subcommands that help lists, by name.
func available(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() { // sorted by name
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			out = append(out, sub)
		}
	}
	return out
}

// anchor is the link to a command's section: GitHub's anchor of the
// heading "## hub route explain" is #hub-route-explain.
func anchor(path string) string { return "#" + strings.ReplaceAll(path, " ", "-") }

// linkInFile turns cobra/doc's link to a command's own file
// (hub_route_explain.md) into a link to its section of this one.
func linkInFile(file string) string {
	return anchor(strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", " "))
}
