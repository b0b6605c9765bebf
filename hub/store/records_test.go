package store

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hub-agents/hub/hub/protocol"
)

// TestStoredRecordsDecode: records as this version of hub stores them
// (testdata, one with every field set) decode strictly into today's types
// with every field kept. A protocol change that renames or drops a field
// fails here: it needs a store migration and a new record version, so a
// stored job never loses the field silently. A field added needs only the
// fixture updated.
func TestStoredRecordsDecode(t *testing.T) {
	b, err := os.ReadFile("testdata/spec_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	everyField(t, "spec_v1.json", reflect.ValueOf(p))
	if b, _ := EncodeSpec(p); !strings.HasPrefix(string(b), `{"v":1,"params":{`) {
		t.Errorf("EncodeSpec = %s", b)
	}

	b, err = os.ReadFile("testdata/evidence_v2.json")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := DecodeEvidence(b)
	if err != nil {
		t.Fatal(err)
	}
	// The names before 0.2 are sent for one release, never stored.
	ev.OldStatus, ev.Claimed.OldSummary = protocol.StateFailed, "x"
	everyField(t, "evidence_v2.json", reflect.ValueOf(*ev))
}

// TestStoredRecordsRefuse: what a record may not be is an error naming it.
func TestStoredRecordsRefuse(t *testing.T) {
	for _, c := range []struct{ name, spec, want string }{
		{"a renamed field", `{"v":1,"params":{"task":"t","verfy":"x"}}`, `"verfy"`},
		{"bare params (before migration 5)", `{"task":"t"}`, `"task"`},
		{"a newer version", `{"v":2,"params":{"task":"t"}}`, "version 2"},
		{"not JSON", `{"v":1,`, "stored spec"},
	} {
		if _, err := DecodeSpec([]byte(c.spec)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: DecodeSpec = %v, want an error with %s", c.name, err, c.want)
		}
	}
	if _, err := DecodeEvidence([]byte(`{"id":"a","status":"failed","claimed":{"summary":"s"},"statuz":1}`)); err == nil || !strings.Contains(err.Error(), "statuz") {
		t.Errorf("DecodeEvidence of an unknown key: %v", err)
	}
}

// everyField fails for each top-level field of v left at its zero value.
func everyField(t *testing.T, name string, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("%s does not set %s: add it to the fixture (a new field), or migrate (a renamed one)", name, v.Type().Field(i).Name)
		}
	}
}
