package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/strictjson"
)

// parseJobs reads the jobs of a start-many file (name is its name, - for
// stdin): {"jobs": […]} or […]. It is strict: a key no job takes
// ("verfy") refuses the whole file, naming the job and the key, so that no
// job of the batch starts unchecked.
func parseJobs(name string, b []byte) (protocol.StartManyParams, error) {
	if name == "-" {
		name = "stdin"
	}
	var p protocol.StartManyParams
	var err error
	if t := strings.TrimSpace(string(b)); strings.HasPrefix(t, "[") {
		err = strictjson.Decode(b, &p.Jobs)
	} else {
		err = strictjson.Decode(b, &p)
	}
	var uk *strictjson.UnknownKeyError
	switch {
	case errors.As(err, &uk):
		if i, rest, ok := jobIndex(uk.Path); ok {
			inJob := *uk
			inJob.Path = rest
			return p, &usageError{&hintError{
				fmt.Errorf("%s: job #%d (%s): %v; no job was started", name, i+1, uk.KeyPath(), &inJob),
				fmt.Sprintf("fix job #%d and run hub start-many again", i+1)}}
		}
		return p, &usageError{&hintError{fmt.Errorf("%s: %v; no job was started", name, uk),
			`write {"jobs": [{"task": …}, …]} or a list of jobs`}}
	case err != nil:
		return p, &usageError{fmt.Errorf("%s is not a JSON list of jobs: %v", name, err)}
	}
	return p, nil
}

// jobIndex reads the job's index off the path of an unknown key,
// "jobs[1]" or "[1]", and what follows it inside the job.
func jobIndex(path string) (int, string, bool) {
	rest, _ := strings.CutPrefix(path, "jobs")
	if !strings.HasPrefix(rest, "[") {
		return 0, "", false
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0, "", false
	}
	i, err := strconv.Atoi(rest[1:end])
	if err != nil {
		return 0, "", false
	}
	return i, strings.TrimPrefix(rest[end+1:], "."), true
}
