// Command clidoc writes docs/cli-reference.md, the reference of hub's
// commands and flags, from the cobra command tree (`make cli-docs`). Run
// it from the repository's root, or give the file to write as its argument.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/hub-agents/hub/hub/cli"
)

func main() {
	path := cli.ReferencePath
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	var buf bytes.Buffer
	if err := cli.WriteReference(&buf); err != nil {
		fmt.Fprintln(os.Stderr, "clidoc:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "clidoc:", err)
		os.Exit(1)
	}
}
