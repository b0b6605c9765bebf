package protocol

// Requests a client sends to the daemon (hub serve).
const (
	MethodInitialize     = "initialize"       // InitializeParams → InitializeResult
	MethodJobStart       = "job/start"        // StartParams → StartResult
	MethodStartMany      = "job/startMany"    // StartManyParams → StartManyResult
	MethodJobWait        = "job/wait"         // WaitParams → WaitResult
	MethodJobStatus      = "job/status"       // IDParams → JobStatus
	MethodJobList        = "job/list"         // ListParams → ListResult
	MethodJobResult      = "job/result"       // ResultParams → ResultResult
	MethodJobReply       = "job/reply"        // ReplyParams → ReplyResult
	MethodJobSteer       = "job/steer"        // SteerParams → SteerResult
	MethodJobStop        = "job/stop"         // IDParams → JobStatus
	MethodJobCleanup     = "job/cleanup"      // CleanupParams → CleanupResult
	MethodJobEvents      = "job/events"       // EventsParams → EventsResult
	MethodStep           = "job/step"         // StepParams → StepResult: a cheap model's account of a step, checked against the repository
	MethodJobTrace       = "job/trace"        // TraceParams → TraceResult
	MethodEngineList     = "engine/list"      // struct{} → EnginesResult
	MethodRouteExplain   = "route/explain"    // StartParams → RouteExplainResult
	MethodRouteCalibrate = "route/calibrate"  // RouteCalibrateParams → RouteCalibrateResult
	MethodSubscribe      = "events/subscribe" // SubscribeParams → SubscribeResult; then JobChanged/JobEvent notifications
	MethodShutdown       = "hub/shutdown"     // struct{} → struct{}: the daemon stops serving (jobs keep running in their shims)

	MethodProfileList    = "profile/list"    // struct{} → ProfileListResult
	MethodProfileSet     = "profile/set"     // ProfileSetParams → ProfileInfo
	MethodProfileRemove  = "profile/remove"  // ProfileNameParams → ProfileListResult
	MethodProfileDefault = "profile/default" // ProfileNameParams → ProfileListResult
	MethodProviderStatus = "provider/status" // ProfileNameParams (empty: every profile) → ProviderStatusResult
	MethodProfileLogin   = "profile/login"   // ProfileLoginParams → ProfileLoginResult

	MethodLedgerList = "ledger/list" // LedgerParams → LedgerResult
	MethodROIReport  = "roi/report"  // ROIParams → ROIResult

	MethodDU = "hub/du" // DUParams → DUResult: disk use per job and of HUB_HOME
	MethodGC = "hub/gc" // GCParams → GCResult: remove what old ended jobs left (dry run unless apply)

	MethodJobFiles = "job/files"   // FilesParams → FilesResult: what a job changed, base..head
	MethodJobFile  = "job/file"    // FileParams → FileResult: a file's content at a job's base or head
	MethodJobMerge = "job/merge"   // MergeParams → MergeResult: merge a job's branch into the checked-out branch
	MethodSummary  = "hub/summary" // struct{} → SummaryResult: counts and the month's spend, for a status bar

	MethodJobLand   = "job/land"     // LandParams → LandResult: land ended jobs onto a branch, each checked on the integrated commit
	MethodJobReview = "job/review"   // ReviewParams → ReviewResult: a batch's review packet
	MethodLandWait  = "job/landWait" // LandWaitParams → LandRun: a landing run's record, once it ended or the wait timed out

	// MethodCancelRequest is the LSP-style notification that cancels an
	// in-flight request: params {"id": <request id>}.
	MethodCancelRequest = "$/cancelRequest"

	// NotifyGoingAway is the daemon's last message on a connection it closes
	// as it shuts down: every request of that connection it has not
	// answered, it did not act on, so a client may send them again.
	NotifyGoingAway = "$/goingAway"
)

// Notifications the daemon sends to subscribed clients.
const (
	NotifyJobChanged       = "job/changed"       // JobStatus, after any state or progress change
	NotifyJobEvent         = "job/event"         // Event, every journal event in cursor order
	NotifyQuestionAsked    = "question/asked"    // QuestionNotice, after the job/event of the question
	NotifyQuestionAnswered = "question/answered" // AnswerNotice, after the job/event of the answer
)

// Requests a worker sends to its job's shim, on the socket named by HUB_SOCKET
// (the `hub ask` and `hub progress` commands inside an exec job).
const (
	MethodWorkerAsk      = "worker/ask"      // AskParams → AskResult (blocks until reply or ask timeout)
	MethodWorkerProgress = "worker/progress" // ProgressParams → ProgressResult (carries pending steering)
)

// Requests the daemon sends to a job's shim.
const (
	MethodShimReply = "shim/reply" // ShimReplyParams → ReplyResult
	MethodShimSteer = "shim/steer" // ShimSteerParams → struct{}
	MethodShimStop  = "shim/stop"  // ShimStopParams → struct{}
)

// MethodShimChanged is what a shim sends the daemon after it wrote to the
// store, so the daemon fans the new events out without polling.
const MethodShimChanged = "shim/changed" // ShimChangedParams → struct{}

// Capabilities a daemon reports in initialize. A client checks for one
// before it uses what it names, so an older daemon fails clearly.
const (
	CapJobs      = "jobs"      // job/start, job/status, job/list, job/result, job/reply, job/steer, job/stop, job/cleanup
	CapWait      = "wait"      // job/wait
	CapEvents    = "events"    // job/events
	CapSubscribe = "subscribe" // events/subscribe, job/changed, job/event
	CapCancel    = "cancel"    // $/cancelRequest
	CapFiles     = "files"     // job/files, job/file
	CapMerge     = "merge"     // job/merge
	CapLand      = "land"      // job/land, job/landWait, job/review, forecasts in job status
	CapSummary   = "summary"   // hub/summary
	CapQuestions = "questions" // question/asked, question/answered
	CapTrace     = "trace"     // job/trace
)
