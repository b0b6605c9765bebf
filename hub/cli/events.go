package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hub-agents/hub/hub/protocol"
)

// newEventsCmd reads a job's journal from the store: every event after a
// cursor, oldest first, paged through to the end. With --json it is an
// export: one protocol Event per line (JSON Lines).
func newEventsCmd(ios *IO) *cobra.Command {
	var p protocol.EventsParams
	var kinds []string
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a job's journal, oldest first (--json: one event per line)",
		Args:  exactArgs(1, "a job id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.ID = args[0]
			for _, k := range kinds {
				if !slices.Contains(protocol.EventKinds, protocol.EventKind(k)) {
					return &usageError{fmt.Errorf("no event kind %q; the kinds are %v", k, protocol.EventKinds)}
				}
			}
			enc := json.NewEncoder(ios.Out)
			enc.SetEscapeHTML(false)
			for {
				res, err := ios.daemon().JobEvents(cmd.Context(), p)
				if err != nil {
					return err
				}
				for _, e := range res.Events {
					if len(kinds) > 0 && !slices.Contains(kinds, string(e.Kind)) {
						continue
					}
					if ios.JSON {
						if err := enc.Encode(e); err != nil {
							return err
						}
						continue
					}
					line := e.Text
					if len(e.Data) > 0 && string(e.Data) != "null" {
						line = strings.TrimSpace(line + " " + string(e.Data))
					}
					ios.printf("%d\t%s\t%s\t%s\n", e.Cursor, e.At.Format("15:04:05.000"), e.Kind, line)
				}
				if len(res.Events) == 0 || res.Cursor == p.Since {
					return nil
				}
				p.Since = res.Cursor
			}
		},
	}
	cmd.Flags().Int64Var(&p.Since, "since", 0, "only events after this cursor")
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "only events of these kinds (state, progress, question, note, …)")
	return cmd
}
