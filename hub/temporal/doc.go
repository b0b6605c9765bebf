// Package temporal runs hub jobs on other machines through Temporal.
//
// It is a module of its own, so hub's core never links Temporal: the
// daemon starts this runner's relay in place of a job's shim when the job
// names a remote queue (config.json queues). The relay starts a workflow
// per job (workflow id = job id) on the queue's task queue; a worker
// (`hub-temporal worker`) on another machine, with its own HUB_HOME and
// its own clone of the git remote, runs the job there with hub's own shim
// — the same worktree, environment setup, isolation, engine, commit,
// verify and evidence as a local job — and pushes hub/<id> to the remote,
// which the relay fetches back before it closes the job in the hub's
// store (the reservation closed once, there).
//
// What crosses Temporal: the job's spec and base, the worker's journal as
// signals (its progress, questions, cost, state), the supervisor's
// steering and stop (signals) and replies (an Update, which the workflow
// refuses for a question that was not asked or was already answered), and
// the job's ending as the activity's result. Both sides read the signals
// from the workflow's history, so nothing is lost when either restarts.
package temporal
