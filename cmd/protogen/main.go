// Command protogen writes the editor's TypeScript protocol types,
// docs/protocol.md, hub/protocol's typed servers, dispatchers and clients
// and hubtest's typed client of the daemon from hub/protocol. Run it from
// the repository's top
// (`make protocol`); `-check` only reports whether the files are current.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hub-agents/hub/hub/protocol/gen"
)

func main() {
	check := flag.Bool("check", false, "report stale files instead of writing them")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(check bool) error {
	files, err := gen.Generate(".")
	if err != nil {
		return err
	}
	stale := false
	for _, f := range files {
		old, _ := os.ReadFile(f.Path)
		if bytes.Equal(old, f.Data) {
			continue
		}
		if check {
			fmt.Fprintf(os.Stderr, "%s is stale; run `make protocol`\n", f.Path)
			stale = true
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", f.Path)
	}
	if stale {
		return fmt.Errorf("generated files are stale")
	}
	return nil
}
