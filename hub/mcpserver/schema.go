package mcpserver

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// startManySchema is the inferred schema of startManyIn without the
// per-field descriptions of the job items: start already carries them, and
// repeating them would double the cost of tools/list.
func startManySchema() *jsonschema.Schema {
	sch, err := jsonschema.For[startManyIn](nil)
	if err != nil {
		panic(fmt.Sprintf("start_many schema: %v", err))
	}
	for _, p := range sch.Properties["jobs"].Items.Properties {
		p.Description = ""
	}
	return sch
}
