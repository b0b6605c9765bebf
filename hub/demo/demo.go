// Package demo is the delegation `hub demo` runs with no key and no
// network: a sample repository whose test fails, and the script the
// embedded model plays to fix it through the built-in worker's real loop
// and tools. It must stay small, and it must never be what a real job runs
// unless the caller names the demo profile.
package demo

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/hub-agents/hub/agent/scripted"
)

//go:embed script.json
var scriptJSON []byte

// Script returns a fresh copy of the demo model's script.
func Script() (*scripted.Script, error) {
	sc, err := scripted.LoadScript(bytes.NewReader(scriptJSON))
	if err != nil {
		return nil, fmt.Errorf("the embedded demo script: %w", err)
	}
	return sc, nil
}

// The delegation, as a supervisor would phrase it.
const (
	Task             = "Fix the greeting in greet.sh so that test.sh passes."
	Verify           = "sh test.sh"
	DefinitionOfDone = "- `sh test.sh` passes on the commit\n- do not change test.sh"
)

// Peers are the jobs the demo starts beside the built-in worker's, as
// plain commands (the exec engine): one adds a script of its own and lands
// beside the fix; the other changes the very line the fix changes, so hub
// forecasts their conflict before anything is merged.
var Peers = []Peer{
	{Task: "Add bye.sh, a farewell, with its check.",
		Exec:   `printf '#!/bin/sh\n# bye prints a farewell for its first argument.\necho "Bye, ${1:-world}"\n' > bye.sh`,
		Verify: `[ "$(sh bye.sh)" = "Bye, world" ]`},
	{Task: "Let GREETING choose the greeting word in greet.sh.",
		Exec:   `sed -i 's/echo "Helo, $name"/echo "${GREETING:-Hello}, $name"/' greet.sh`,
		Verify: Verify},
}

// Peer is a job the demo runs as a plain command.
type Peer struct{ Task, Exec, Verify string }

// Files are the sample repository's files, committed on main.
var Files = map[string]string{
	"greet.sh": `#!/bin/sh
# greet prints a greeting for its first argument.
name=${1:-world}
echo "Helo, $name"
`,
	"test.sh": `#!/bin/sh
# The check the supervisor hands hub: it must pass on the commit the worker leaves.
out=$(sh greet.sh world)
[ "$out" = "Hello, world" ] || { echo "FAIL: got '$out', want 'Hello, world'"; exit 1; }
echo "ok"
`,
}
