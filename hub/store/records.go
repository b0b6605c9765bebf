package store

import (
	"encoding/json"
	"fmt"

	"github.com/hub-agents/hub/hub/protocol"
	"github.com/hub-agents/hub/internal/strictjson"
)

// SpecVersion is the version of the job spec record the store keeps: what
// start was asked, read again by the shim when it runs the job (maybe
// after an upgrade, for a job that waited queued). A change to
// protocol.StartParams that renames or drops a field needs a store
// migration and a new version; TestStoredRecordsDecode fails until it has
// one.
const SpecVersion = 1

// specRecord is the stored form of a job's spec.
type specRecord struct {
	V      int                  `json:"v"`
	Params protocol.StartParams `json:"params"`
}

// EncodeSpec is the stored record of p.
func EncodeSpec(p protocol.StartParams) ([]byte, error) {
	return json.Marshal(specRecord{V: SpecVersion, Params: p})
}

// DecodeSpec reads a stored spec record strictly: a key the current
// StartParams does not take, or a version this hub does not know, is an
// error, never a field silently dropped.
func DecodeSpec(b []byte) (protocol.StartParams, error) {
	var r specRecord
	if err := strictjson.Decode(b, &r); err != nil {
		return protocol.StartParams{}, fmt.Errorf("the job's stored spec: %w", err)
	}
	if r.V != SpecVersion {
		return protocol.StartParams{}, fmt.Errorf("the job's stored spec is version %d; this hub reads version %d (a newer hub stored it: upgrade hub)", r.V, SpecVersion)
	}
	return r.Params, nil
}

// DecodeEvidence reads a stored evidence record strictly: a key the current
// Evidence does not take is an error (a store migration renames fields),
// never a field silently zeroed.
func DecodeEvidence(b []byte) (*protocol.Evidence, error) {
	ev := &protocol.Evidence{}
	if err := strictjson.Decode(b, ev); err != nil {
		return nil, fmt.Errorf("the job's stored evidence: %w", err)
	}
	return ev, nil
}
