//go:build !unix

package deps

// lockKey: no advisory locks here; every caller goes ahead (a second
// store of the same key loses the rename and drops its copy).
func lockKey(string) (func(), bool) { return func() {}, true }
