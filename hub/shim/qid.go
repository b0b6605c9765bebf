package shim

import (
	"crypto/rand"
	"encoding/hex"
)

func newQuestionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "q" + hex.EncodeToString(b[:])
}
