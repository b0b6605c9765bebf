package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/cli"
)

// reference is the CLI reference as WriteReference makes it now, under a
// HOME, HUB_HOME and config directory of the test's own.
func reference(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("HUB_HOME", filepath.Join(dir, "hub"))
	t.Setenv("HUB_CONFIG_DIR", filepath.Join(dir, "config"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg-config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg-data"))
	var buf bytes.Buffer
	if err := cli.WriteReference(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestCLIReferenceCurrent: docs/cli-reference.md is what the command tree
// says now, so a flag added, renamed or re-explained without regenerating
// it fails here.
func TestCLIReferenceCurrent(t *testing.T) {
	got := reference(t)
	want, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(cli.ReferencePath)))
	if err != nil {
		t.Fatalf("%v: run `make cli-docs` (go run ./cmd/clidoc) from the repository's root", err)
	}
	if got != string(want) {
		t.Errorf("%s is stale: run `make cli-docs` (go run ./cmd/clidoc) from the repository's root and commit it. (-file +tree):\n%s",
			cli.ReferencePath, cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")))
	}
}

// TestCLIReferenceStable: the reference does not depend on where it is made
// (a default drawn from HOME or HUB_HOME would differ between machines) nor
// on when, and its every link leads to a section of the file.
func TestCLIReferenceStable(t *testing.T) {
	first := reference(t)
	if again := reference(t); again != first {
		t.Errorf("the reference differs under another HOME and HUB_HOME:\n%s",
			cmp.Diff(strings.Split(first, "\n"), strings.Split(again, "\n")))
	}
	if strings.Contains(first, "Auto generated") {
		t.Error("the reference carries cobra's dated tag")
	}
	anchors := sections(first)
	links := regexp.MustCompile(`\]\((#[^)]*)\)`).FindAllStringSubmatch(first, -1)
	if len(links) == 0 {
		t.Fatal("the reference has no links to its sections")
	}
	for _, m := range links {
		if !anchors[m[1]] {
			t.Errorf("link %s leads to no section", m[1])
		}
	}
	// Every command help lists has its section; a hidden one has none.
	var walk func(c *cobra.Command, hidden bool)
	walk = func(c *cobra.Command, hidden bool) {
		hidden = hidden || !c.IsAvailableCommand()
		if c.HasParent() && anchors["#"+strings.ReplaceAll(c.CommandPath(), " ", "-")] == hidden {
			t.Errorf("%s: hidden %v, yet a section %v", c.CommandPath(), hidden, !hidden)
		}
		for _, sub := range c.Commands() {
			walk(sub, hidden)
		}
	}
	walk(cli.NewRoot(&cli.IO{}), false)
}

// sections is the anchors of the reference's commands, as GitHub makes
// them from their headings: "## hub route explain" is #hub-route-explain.
func sections(ref string) map[string]bool {
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(ref, -1) {
		anchors["#"+strings.ReplaceAll(strings.ToLower(m[1]), " ", "-")] = true
	}
	return anchors
}

// TestCLIReferenceLinks: the docs' links into the reference
// (cli-reference.md#hub-start) lead to a command's section, so a command
// renamed or removed fails here rather than leaving a dead link.
func TestCLIReferenceLinks(t *testing.T) {
	anchors := sections(reference(t))
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	n := 0
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`cli-reference\.md(#[^)\s]*)`).FindAllStringSubmatch(string(b), -1) {
			n++
			if !anchors[m[1]] {
				t.Errorf("%s: link cli-reference.md%s leads to no command", filepath.Base(path), m[1])
			}
		}
	}
	if n == 0 {
		t.Error("no doc links into cli-reference.md")
	}
}
