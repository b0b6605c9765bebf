package protocol

// Spec describes one method or notification: who sends it to whom, its
// parameters and result (as zero values of their types; nil for none), what
// it does and what it may change. Everything that lists methods is made
// from Specs: docs/protocol.md, the editor's TypeScript types, the typed
// servers, dispatchers and clients of dispatch_gen.go (`make protocol`), the
// client's list of methods it may send again and the MCP tools'
// annotations. A test keeps Specs in step with the Method and Notify
// constants.
type Spec struct {
	Method string
	// Notification: no id, no reply.
	Notification bool
	// From and To are client, daemon, shim or worker.
	From, To string
	Params   any
	Result   any
	// ReadOnly: it changes no file, branch, setting or money and steers no
	// job, so sending it again is harmless: a client sends it again when a
	// connection is cut under it, and an MCP tool over it is read-only.
	ReadOnly bool
	// Idempotent: sent twice with the same params, it does what it did once.
	Idempotent bool
	// Destructive: it can remove or overwrite what cannot be had back (a
	// running worker, a worktree, a profile).
	Destructive bool
	Doc         string
}

// Effect flags of a Spec.
type effect uint8

const (
	readOnly    effect = 1
	idempotent  effect = 2
	destructive effect = 4
)

// SpecOf returns the Spec of method.
func SpecOf(method string) (Spec, bool) {
	for _, s := range Specs {
		if s.Method == method {
			return s, true
		}
	}
	return Spec{}, false
}

// Parties of the protocol.
const (
	PartyClient = "client" // an editor, the CLI, the MCP server
	PartyDaemon = "daemon" // hub serve
	PartyShim   = "shim"   // one per running job: owns the worker
	PartyWorker = "worker" // the job's process (hub ask, hub progress)
)

// CancelParams are the params of $/cancelRequest.
type CancelParams struct {
	// ID is the id of the request to cancel (a number or a string).
	ID any `json:"id"`
}

// Empty is the params or result of a method that takes or returns nothing: {}.
type Empty struct{}

func req(method string, params, result any, e effect, doc string) Spec {
	return Spec{Method: method, From: PartyClient, To: PartyDaemon, Params: params, Result: result,
		ReadOnly: e&readOnly != 0, Idempotent: e&idempotent != 0, Destructive: e&destructive != 0, Doc: doc}
}

// reads is the effect of a request that only reads.
const reads = readOnly | idempotent

// Specs lists every method and notification, grouped as docs/protocol.md shows them.
var Specs = []Spec{
	req(MethodInitialize, InitializeParams{}, InitializeResult{}, reads,
		"Opens a session. Send it first on every connection. The result names the daemon's protocol version and capabilities; a client checks the major (0.x: the minor) against its own."),
	req(MethodSubscribe, SubscribeParams{}, SubscribeResult{}, 0,
		"Asks for job/changed, job/event, question/asked and question/answered notifications on this connection, once per connection. With since, the events after that cursor are replayed first, so a client that reconnects loses nothing."),
	req(MethodJobList, ListParams{}, ListResult{}, reads,
		"Lists jobs, newest first. An editor calls it after subscribing, on every (re)connect, and replaces its jobs by id."),
	req(MethodJobStatus, IDParams{}, JobStatus{}, reads,
		"The short view of one job."),
	req(MethodJobStart, StartParams{}, StartResult{}, 0,
		"Starts one job. It returns at once, before the worktree is made; follow the job with job/changed or job/wait. Refused (Refused, InvalidParams) with a hint and the field at fault when the job cannot run as asked: nothing is made then."),
	req(MethodStartMany, StartManyParams{}, StartManyResult{}, 0,
		"Starts several jobs; each is validated and started on its own, and the results keep the request's order."),
	req(MethodJobWait, WaitParams{}, WaitResult{}, reads,
		"Blocks until every listed job (or, with any, one) has ended or asks a question newer than since, or until the timeout."),
	req(MethodJobResult, ResultParams{}, ResultResult{}, reads,
		"A job's result: a short summary, the full text, or the evidence (what hub observed, kept apart from what the worker claimed)."),
	req(MethodJobEvents, EventsParams{}, EventsResult{}, reads,
		"Reads a job's journal (or every job's) after a cursor, oldest first. Page with the returned cursor."),
	req(MethodJobTrace, TraceParams{}, TraceResult{}, reads,
		"A job's trace: hub's phases, and inside the run each model call, tool call and command the engine reported, with start, duration, tokens, cost and a short redacted summary. Page with from and the returned next."),
	req(MethodJobFiles, FilesParams{}, FilesResult{}, reads,
		"What a job changed: the files and commits of base..head, head being the tip of its branch now."),
	req(MethodJobFile, FileParams{}, FileResult{}, reads,
		"One file's content at the job's base or head, for a diff view. A path absent at that revision gives exists false, not an error. Files over 8 MiB are refused."),
	req(MethodJobReply, ReplyParams{}, ReplyResult{}, 0,
		"Answers a worker's pending question (the oldest one when question_id is empty)."),
	req(MethodJobSteer, SteerParams{}, SteerResult{}, 0,
		"Queues a message for a running worker; it is delivered at the worker's next progress report or tool result (a delivered event says when)."),
	req(MethodJobStop, IDParams{}, JobStatus{}, destructive|idempotent,
		"Stops a job: its worker is stopped, what it wrote is committed on its branch, and it ends cancelled."),
	req(MethodJobCleanup, CleanupParams{}, CleanupResult{}, destructive|idempotent,
		"Removes an ended job's worktree; the branch stays unless delete_branch. The record stays readable."),
	req(MethodJobMerge, MergeParams{}, MergeResult{}, 0,
		"Merges an ended job's branch into the branch checked out in its repository (a merge commit, hooks off). Refused with Conflict, and nothing touched, when the merge would conflict (data.files names the paths); WrongState when the checkout has uncommitted changes, is on a detached HEAD, or the job has not ended."),
	req(MethodJobLand, LandParams{}, LandResult{}, 0,
		"Lands ended jobs onto a target branch, one at a time: each is merged (or squashed) onto the target's current tip in a scratch checkout, its verify and the batch verify run on that commit, and only then does the target move (the user's checkout with it when it is clean and on the target). The landing runs as work with its own record (result.run; job/landWait follows it, and with detach the request answers at once): a client that goes away does not stop it. A conflict or a red check stops that job, leaves the target as it was and says why. Refused (WrongState) for a job that has not ended or already landed, a target that does not exist, or a target checked out with uncommitted changes: nothing moves then."),
	req(MethodLandWait, LandWaitParams{}, LandRun{}, reads,
		"Waits for a landing run (job/land's result.run) to end and answers its record: state, the outcome job by job, or why it failed or was interrupted. A run still going when timeout_s passes is answered as it is, state running; a run of an earlier daemon is read from the store."),
	req(MethodJobReview, ReviewParams{}, ReviewResult{}, reads,
		"A batch's review packet: per job its state, files and lines, verify, rubric, cost, predicted conflicts, risk flags and what to do next, about a hundred bytes a job."),
	req(MethodSummary, Empty{}, SummaryResult{}, reads,
		"Counts of running, waiting and queued jobs and the month's spend: what a status bar shows. Cheap: no engine is probed."),
	req(MethodStep, StepParams{}, StepResult{}, 0,
		"An account of a step of work in a repository, from its real state, not from the claim: a read job on the step engine checks out the work tree as it is (uncommitted changes too), runs the check there, and has a cheap model narrate the files and commits since the step began and judge the claim's statements; hub's own checks outrank the model. Waits for the account; booked in the ledger like any job."),
	req(MethodEngineList, Empty{}, EnginesResult{}, reads,
		"The engines on this machine, what each can enforce and its quota, with the month's money."),
	req(MethodRouteExplain, StartParams{}, RouteExplainResult{}, reads,
		"The router's decision for a start request, made exactly as job/start would make it, without starting anything."),
	req(MethodRouteCalibrate, RouteCalibrateParams{}, RouteCalibrateResult{}, idempotent,
		"Fits the router's statistics from hub's history and writes routing.json (unless dry_run)."),
	req(MethodLedgerList, LedgerParams{}, LedgerResult{}, reads,
		"The money ledger: every reservation and what was charged against it."),
	req(MethodROIReport, ROIParams{}, ROIResult{}, reads,
		"What each engine cost per job that succeeded."),
	req(MethodDU, DUParams{}, DUResult{}, reads,
		"Disk use per job and of HUB_HOME."),
	req(MethodGC, GCParams{}, GCResult{}, destructive|idempotent,
		"Removes what old ended jobs left behind (a dry run unless apply); records and journals stay."),
	req(MethodProfileList, Empty{}, ProfileListResult{}, reads,
		"The built-in worker's model profiles. Keys are never returned."),
	req(MethodProfileSet, ProfileSetParams{}, ProfileInfo{}, destructive|idempotent,
		"Adds or replaces a profile; a key given here is stored in the env file (mode 0600)."),
	req(MethodProfileRemove, ProfileNameParams{}, ProfileListResult{}, destructive|idempotent,
		"Removes a profile."),
	req(MethodProfileDefault, ProfileNameParams{}, ProfileListResult{}, idempotent,
		"Makes a profile the default."),
	req(MethodProviderStatus, ProfileNameParams{}, ProviderStatusResult{}, reads,
		"Checks whether a profile (empty: every profile) has its key and reaches its endpoint."),
	req(MethodProfileLogin, ProfileLoginParams{}, ProfileLoginResult{}, idempotent,
		"Starts, waits on or cancels a copilot or chatgpt profile's device-flow login; the daemon polls and stores the tokens (mode 0600)."),
	req(MethodShutdown, Empty{}, Empty{}, idempotent,
		"Stops the daemon. Running jobs keep running in their shims; the next daemon picks them up."),
	{Method: MethodCancelRequest, Notification: true, From: PartyClient, To: PartyDaemon, Params: CancelParams{},
		Doc: "Cancels an in-flight request (LSP's $/cancelRequest); it then fails with RequestCancelled. A wait is the usual one to cancel."},
	{Method: NotifyGoingAway, Notification: true, From: PartyDaemon, To: PartyClient, Params: Empty{},
		Doc: "The daemon's last message on a connection it closes as it shuts down: it did not act on any request of this connection it has not answered, so send those again on a new connection. Requests that reach it while it shuts down are answered ShuttingDown."},

	{Method: NotifyJobChanged, Notification: true, From: PartyDaemon, To: PartyClient, Params: JobStatus{},
		Doc: "A job's full short view after any change of state, progress, question or cost. Keep the one with the highest cursor."},
	{Method: NotifyJobEvent, Notification: true, From: PartyDaemon, To: PartyClient, Params: Event{},
		Doc: "Every journal event, of every job, in cursor order."},
	{Method: NotifyQuestionAsked, Notification: true, From: PartyDaemon, To: PartyClient, Params: QuestionNotice{},
		Doc: "A worker asked a question or reported a blocker; it waits for job/reply until expires_at."},
	{Method: NotifyQuestionAnswered, Notification: true, From: PartyDaemon, To: PartyClient, Params: AnswerNotice{},
		Doc: "A question was answered, or expired unanswered."},

	{Method: MethodWorkerAsk, From: PartyWorker, To: PartyShim, Params: AskParams{}, Result: AskResult{}, ReadOnly: true,
		Doc: "A worker's question (hub ask). Blocks until answered or the ask timeout."},
	{Method: MethodWorkerProgress, From: PartyWorker, To: PartyShim, Params: ProgressParams{}, Result: ProgressResult{}, ReadOnly: true,
		Doc: "A worker's progress note (hub progress); the result carries steering queued for it."},
	{Method: MethodShimReply, From: PartyDaemon, To: PartyShim, Params: ShimReplyParams{}, Result: ReplyResult{},
		Doc: "Delivers an answer to the job's shim; the result says whether the worker had it."},
	{Method: MethodShimSteer, From: PartyDaemon, To: PartyShim, Params: ShimSteerParams{}, Result: Empty{},
		Doc: "Tells the shim a steering message is queued."},
	{Method: MethodShimStop, From: PartyDaemon, To: PartyShim, Params: ShimStopParams{}, Result: Empty{}, Destructive: true, Idempotent: true,
		Doc: "Asks the shim to stop its worker."},
	{Method: MethodShimChanged, From: PartyShim, To: PartyDaemon, Params: ShimChangedParams{}, Result: Empty{}, ReadOnly: true, Idempotent: true,
		Doc: "A shim wrote to the store; the daemon fans the new events out. A call, so the shim knows the daemon heard it."},
}
