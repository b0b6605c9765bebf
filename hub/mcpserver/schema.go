package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema is In's inferred schema as tools/list sends it, every byte of
// which a supervisor pays for on each turn: without the
// "additionalProperties": false the inference puts on every object (29
// bytes each), and with a slice's type "array" rather than
// ["null","array"]. checkArgs refuses unknown arguments in its place, with
// a message that names the ones the tool takes.
func inputSchema[In any]() *jsonschema.Schema {
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("input schema of %T: %v", *new(In), err))
	}
	var open func(*jsonschema.Schema)
	open = func(s *jsonschema.Schema) {
		if s == nil {
			return
		}
		s.AdditionalProperties = nil
		// A slice is inferred as ["null","array"]; null means no more
		// than an empty list to every tool, and "array" is 9 bytes less.
		if slices.Equal(s.Types, []string{"null", "array"}) {
			s.Type, s.Types = "array", nil
		}
		for _, p := range s.Properties {
			open(p)
		}
		open(s.Items)
	}
	open(sch)
	return sch
}

// startManySchema is start_many's schema: its jobs are objects with start's
// fields, which start's schema already lists, and repeating them would
// double the cost of tools/list. checkArgs and the daemon check each job.
func startManySchema() *jsonschema.Schema {
	sch := inputSchema[startManyIn]()
	sch.Properties["jobs"].Items = &jsonschema.Schema{Type: "object"}
	return sch
}

// checkArgs refuses arguments In has no field for, as the schema no longer
// does: a misspelt option must not be dropped without a word.
func checkArgs[In any](tool string, raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var in In
	err := dec.Decode(&in)
	if err == nil {
		return nil
	}
	msg := err.Error()
	const tag = `json: unknown field "`
	i := strings.Index(msg, tag)
	if i < 0 {
		return nil // not ours to report: the SDK's own decoding says what is wrong
	}
	name := strings.TrimSuffix(msg[i+len(tag):], `"`)
	sch, _ := jsonschema.For[In](nil)
	if sch == nil {
		return errors.New(msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown argument %q; %s takes %s", name, tool, strings.Join(sch.PropertyOrder, ", "))
	for _, p := range sch.PropertyOrder {
		if it := sch.Properties[p].Items; it != nil && len(it.PropertyOrder) > 0 {
			fmt.Fprintf(&b, "; each of %s takes %s", p, strings.Join(it.PropertyOrder, ", "))
		}
	}
	return &toolErr{b.String() + "."}
}
