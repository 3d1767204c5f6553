package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/corohq/temporal-overseer/ops"
)

// Retire lists the open runs that still need the plugin on their workers.
type Retire struct{}

// Synopsis implements Command.
func (*Retire) Synopsis() string {
	return "list the open runs that still need the plugin on their workers (started under it in observe or manage mode), and how to retire it"
}

// Run implements Command.
func (*Retire) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("retire", out)
	var conn connFlags
	conn.register(fs)
	wfType := fs.String("type", "", "only runs of this workflow type")
	limit := fs.Int("limit", 50, "list at most this many of them")
	asJSON := fs.Bool("json", false, "print as JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	lo := conn.listOptions()
	lo.Limit = *limit
	n, err := ops.NeedsPlugin(ctx, c, *wfType, lo)
	if errors.Is(err, ops.ErrInvalidFilter) {
		return fmt.Errorf("%w: --type: %s", ErrUsage, err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(n)
	}
	of := "runs"
	if *wfType != "" {
		of = *wfType + " runs"
	}
	if n.Count == 0 {
		fmt.Fprintf(out, "No open %s need the plugin: it can be removed from their workers.\n", of)
		return nil
	}
	fmt.Fprintf(out, "%d open %s still need the plugin: they started under it in observe or manage mode, and replay only on workers that have it.\n", n.Count, of)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTYPE\tSTATE\tSTARTED")
	for _, j := range n.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.Type, j.State, j.Started.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if int64(len(n.Jobs)) < n.Count {
		fmt.Fprintf(out, "(the %d most recently started of %d)\n", len(n.Jobs), n.Count)
	}
	fmt.Fprintln(out, "To retire the plugin: set the workflow types to mode off (overseer.Options.Mode or Modes), keep the plugin on their workers until `overseer retire` finds no run, then remove it (docs/upgrades.md).")
	return nil
}
