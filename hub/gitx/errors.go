package gitx

import (
	"errors"
	"strings"
)

// Sentinels for the ways a path or revision can be unusable. The errors gitx
// returns carry a full message that says what to do; check the cause with
// errors.Is.
var (
	// ErrNotRepo: the path is not inside a git repository (or does not exist,
	// or is not a directory).
	ErrNotRepo = errors.New("not a git repository")
	// ErrBare: the path is a bare repository, which has no work tree.
	ErrBare = errors.New("bare git repository")
	// ErrNoCommits: the repository has no commit, or (from Resolve of HEAD)
	// its HEAD is on a branch that has none yet.
	ErrNoCommits = errors.New("git repository has no commits")
	// ErrUnknownRevision: a revision that names no commit in the repository.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrBranchConflict: a branch is in the way of the branches hub makes
	// (a branch named hub leaves no room for hub/<id>).
	ErrBranchConflict = errors.New("branch in the way")
	// ErrNotWritable: hub cannot write into the repository's git dir (a
	// read-only mount, or someone else's folder).
	ErrNotWritable = errors.New("repository not writable")
	// ErrUnsupported: the repository uses a format hub cannot read (a git
	// extension such as objectFormat=sha256 or refStorage).
	ErrUnsupported = errors.New("unsupported repository format")
)

// hintError is an error with a complete, actionable message whose cause is
// one of the sentinels above (and possibly the underlying error).
type hintError struct {
	msg   string
	kind  error
	cause error
}

func (e *hintError) Error() string { return e.msg }

func (e *hintError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// Error is a failed git command.
type Error struct {
	Args     []string // the subcommand and its arguments, without the -c options gitx adds
	Stderr   string   // git's standard error, trimmed
	ExitCode int      // git's exit code; -1 when git did not exit by itself (not started, killed)
	err      error    // the cause: the exec error, or the context's error when it was cancelled
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("git ")
	b.WriteString(strings.Join(e.Args, " "))
	b.WriteString(": ")
	switch {
	case e.ExitCode < 0 && e.err != nil && e.Stderr != "":
		b.WriteString(e.err.Error() + ": " + e.Stderr)
	case e.Stderr != "":
		b.WriteString(e.Stderr)
	case e.err != nil:
		b.WriteString(e.err.Error())
	default:
		b.WriteString("failed")
	}
	return b.String()
}

// Unwrap returns the cause, so errors.Is(err, context.Canceled) works for a
// git process killed by its context.
func (e *Error) Unwrap() error { return e.err }
