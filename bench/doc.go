// Package bench measures hub against the floor it sits on (a bare git
// worktree add, a bare process spawn) and against fixed budgets, in one run
// on one machine, and writes docs/benchmarks.md. Figures are medians of
// repeated runs with their spread; nothing here is a timed assertion in a
// unit test. The driver is cmd/benchreport (`make bench`).
package bench
