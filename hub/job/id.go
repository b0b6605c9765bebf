package job

import (
	"crypto/rand"
	"regexp"
)

const idAlphabet = "0123456789abcdefghijkmnpqrstuvwxyz" // no l, o: easy to read aloud

// NewID returns a fresh job id: 8 characters of [0-9a-z] without l and o.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b[:])
}

var idRe = regexp.MustCompile(`^[0-9a-z]{8}$`)

// ValidID reports whether s looks like a job id.
func ValidID(s string) bool { return idRe.MatchString(s) }

// BranchPrefix is the folder of the branches write jobs work on.
const BranchPrefix = "hub"

// Branch is the branch a write job works on.
func Branch(id string) string { return BranchPrefix + "/" + id }
