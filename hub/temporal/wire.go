package temporal

import (
	"encoding/json"
	"time"

	"github.com/hub-agents/hub/hub/protocol"
)

// Names on the wire, shared by the relay, the workflow and the workers.
const (
	// WorkflowName is the workflow type of a job; its id is the job's id.
	WorkflowName = "hub.job"
	// ActivityName runs a job on a worker.
	ActivityName = "hub.run"
	// SignalEvents carries a batch of the worker's journal ([]Event) to the hub.
	SignalEvents = "events"
	// SignalSteer carries a steering message (string) to the worker.
	SignalSteer = "steer"
	// UpdateReply carries an answer (Reply) to the worker, once per question.
	UpdateReply = "reply"
	// QueryStatus asks the workflow where the job is (Status).
	QueryStatus = "status"
)

// Status is the workflow's view of its job: for `temporal workflow query`
// and the relay, without reading the history.
type Status struct {
	// Events is how many of the worker's events it has seen; Steers how
	// many steering messages went to the worker.
	Events int `json:"events"`
	Steers int `json:"steers"`
	// Pending are the questions asked and not answered (nor expired).
	Pending []string `json:"pending,omitempty"`
	// Last is the latest progress note or state the worker reported.
	Last string `json:"last,omitempty"`
	Done bool   `json:"done"`
}

// Input is what a worker needs to run a job: the job as the hub recorded
// it, and where to get its base.
type Input struct {
	ID        string             `json:"id"`
	Kind      protocol.Kind      `json:"kind"`
	Engine    string             `json:"engine"`
	Model     string             `json:"model,omitempty"`
	Isolation protocol.Isolation `json:"isolation"`
	Task      string             `json:"task"`
	BaseSHA   string             `json:"base_sha"`
	Branch    string             `json:"branch,omitempty"`
	MaxMicros int64              `json:"max_micros"`
	CostKnown bool               `json:"cost_known,omitempty"`
	Notes     []string           `json:"notes,omitempty"`
	// Spec is the job's protocol.StartParams as the hub normalized them.
	Spec json.RawMessage `json:"spec"`
	// Remote is the git remote (a URL or path) the worker clones and
	// pushes to; BaseRef the ref there that holds the job's base.
	Remote  string `json:"remote"`
	BaseRef string `json:"base_ref"`
}

// Timeout bounds one attempt of the job on a worker: its run, setup and
// verify, each at most its own bound, and a margin for the clone and push.
func (in Input) Timeout(p protocol.StartParams) time.Duration {
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	return s(p.TimeoutS) + 2*s(p.SetupTimeoutS) + s(p.VerifyTimeoutS) + 10*time.Minute
}

// Event is one event of the worker's journal, with the question it asks
// when it is a question (the journal keeps only its text).
type Event struct {
	protocol.Event
	Question *Question `json:"question,omitempty"`
}

// Question is a worker's question as the hub records it.
type Question struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Text      string    `json:"text"`
	Context   string    `json:"context,omitempty"`
	AskedAt   time.Time `json:"asked_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Reply answers a worker's question.
type Reply struct {
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
}

// Ending is how the job ended on the worker: what the hub closes it with.
type Ending struct {
	State      protocol.State `json:"state"`
	Category   string         `json:"category,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Head       string         `json:"head"`
	Salvaged   bool           `json:"salvaged,omitempty"`
	CostMicros int64          `json:"cost_micros"`
	CostKnown  bool           `json:"cost_known"`
	Tokens     int64          `json:"tokens,omitempty"`
	Summary    string         `json:"summary,omitempty"`
	// Evidence and Verify are the worker's records (protocol.Evidence,
	// protocol.Verify) as JSON.
	Evidence json.RawMessage `json:"evidence,omitempty"`
	Verify   json.RawMessage `json:"verify,omitempty"`
	// Worker is who ran it (the worker's identity), Clone where its
	// commits stay on that machine; Pushed that Head is the job's branch
	// on the remote.
	Worker string `json:"worker"`
	Clone  string `json:"clone"`
	Pushed bool   `json:"pushed,omitempty"`
}
