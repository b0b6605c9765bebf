//go:build !unix

package gitx

// nonBlock: no such flag here; the file is checked with Lstat first.
const nonBlock = 0
