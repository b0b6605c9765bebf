// Command hub is the local delegation hub for coding agents. See README.md.
package main

import (
	"os"

	"github.com/hub-agents/hub/hub/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
