package protocol

// The reads and actions an editor needs beyond the job tools: a job's changed
// files, a file's content at the job's base and head, merging a job's branch,
// and a cheap summary for a status bar.

// FilesParams names the job whose changes to list.
type FilesParams struct {
	ID string `json:"id"` // the job id
}

// FilesResult lists what a job changed: base..head, where head is the tip
// of the job's branch now (it moves while the job runs and commits).
type FilesResult struct {
	ID string `json:"id"` // the job id
	// Base is the commit the job started from.
	Base string `json:"base"`
	// Tip is the branch's tip now (a job's head is the commit hub recorded
	// at its end); empty for a read job or before the branch exists.
	Tip string `json:"tip"`
	// OldHead is tip under its name before 0.2, still sent for this release; read tip.
	OldHead string       `json:"head,omitempty"`
	Files   []FileChange `json:"files"`   // the files of base..head, sorted by path
	Commits []Commit     `json:"commits"` // the commits of base..head, oldest first
}

// Revisions job/file reads from.
const (
	RevBase = "base" // the commit the job started from
	RevTip  = "tip"  // the tip of the job's branch now
	// RevHead is tip under its name before 0.2, still taken for this release.
	RevHead = "head"
)

// FileParams asks for one file's content at a job's base or head.
type FileParams struct {
	ID string `json:"id"` // the job id
	// Rev is base or head.
	Rev string `json:"rev"`
	// Path is relative to the repository's top, with forward slashes.
	Path string `json:"path"`
}

// File contents cross the wire in one of these encodings.
const (
	EncodingUTF8   = "utf8"   // text
	EncodingBase64 = "base64" // anything that is not valid UTF-8, or holds a NUL byte
)

// FileResult is a file's content at one revision. A path that does not exist
// there is not an error: Exists is false and Content empty, so a diff shows
// an empty side for an added or deleted file.
type FileResult struct {
	ID  string `json:"id"`  // the job id
	Rev string `json:"rev"` // base or head, as asked
	// Commit is the commit the revision named when the file was read.
	Commit string `json:"commit"`
	Path   string `json:"path"`   // the cleaned path
	Exists bool   `json:"exists"` // false when the path is not a file at that revision
	Binary bool   `json:"binary"` // true when the content is not UTF-8 text (it is then base64)
	// Encoding is utf8 or base64.
	Encoding string `json:"encoding"`
	Content  string `json:"content"` // the file's content, in Encoding
	// Size is the content's length in bytes.
	Size int64 `json:"size"`
}

// MaxFileBytes is the largest file job/file returns.
const MaxFileBytes = 8 << 20

// MergeParams names the job whose branch to merge.
type MergeParams struct {
	ID string `json:"id"` // the job id
}

// MergeResult says what merging a job's branch into the branch checked out
// in its repository made.
type MergeResult struct {
	ID string `json:"id"` // the job id
	// Branch is the job's branch (hub/<id>).
	Branch string `json:"branch"`
	// Into is the branch that received it.
	Into string `json:"into"`
	// Commit is the new tip of Into.
	Commit string `json:"commit"`
	// AlreadyMerged: Into already contained the job's branch; nothing changed.
	AlreadyMerged bool `json:"already_merged,omitempty"`
}

// SummaryResult is what a status bar shows: jobs by activity and the
// month's money.
type SummaryResult struct {
	// Running counts preparing, running and verifying jobs.
	Running    int `json:"running"`
	NeedsInput int `json:"needs_input"` // jobs waiting for an answer
	Queued     int `json:"queued"`      // jobs waiting for a slot
	// Month is the ledger month (UTC), YYYY-MM.
	Month         string  `json:"month"`
	SpentUSD      float64 `json:"spent_usd"`       // charged this month
	ReservedUSD   float64 `json:"reserved_usd"`    // reserved by jobs still running
	MonthlyCapUSD float64 `json:"monthly_cap_usd"` // the monthly cap
}

// QuestionNotice is sent when a worker asks a question (or reports a blocker).
type QuestionNotice struct {
	JobID    string   `json:"job_id"`   // the job that asks
	Question Question `json:"question"` // the question
}

// AnswerNotice is sent when a question is answered, or expired unanswered
// and the worker went on with its most conservative choice.
type AnswerNotice struct {
	JobID      string `json:"job_id"`      // the job
	QuestionID string `json:"question_id"` // the question settled
	Expired    bool   `json:"expired"`     // true when nobody answered in time
}
