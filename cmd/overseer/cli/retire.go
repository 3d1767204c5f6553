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
	"github.com/corohq/temporal-overseer/overseer"
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
		sayCarried(out, n)
		return nil
	}
	runs := n.Count - n.Notifiers
	fmt.Fprintf(out, "%d open %s still need the plugin: they started under it in observe or manage mode, and replay only on workers that have it.\n", runs, of)
	if n.Notifiers > 0 {
		fmt.Fprintf(out, "%d of the plugin's notifier workflows (%s) are still delivering a notice: keep the plugin registered until they end.\n", n.Notifiers, overseer.NotifyWorkflowName)
	}
	if len(n.Jobs) > 0 {
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tTYPE\tSTATE\tSTARTED")
		for _, j := range n.Jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", j.ID, j.Type, j.State, j.Started.Format(time.RFC3339))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if n.Unread != "" {
		fmt.Fprintf(out, "(%s)\n", n.Unread)
	}
	sayCarried(out, n)
	fmt.Fprintln(out, "To retire the plugin: set the workflow types to mode off (overseer.Options.Mode or Modes), keep the plugin on their workers until `overseer retire` finds no run, then remove it (docs/upgrades.md).")
	return nil
}

// sayCarried says how many runs carry the plugin's version only because
// continue-as-new copied it from a run that needed it.
func sayCarried(out io.Writer, n ops.NeedingPlugin) {
	if len(n.Carried) > 0 {
		fmt.Fprintf(out, "%d open runs carry the plugin's version only because they continued as new from a run that had it; their own histories hold no overseer marker, and they do not need it.\n", len(n.Carried))
	}
}
