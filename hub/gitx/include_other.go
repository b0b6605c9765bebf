//go:build !unix

package gitx

// noFollow: no such flag here; CopyIncluded checks with Lstat first.
const noFollow = 0
