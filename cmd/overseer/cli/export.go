package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
)

// Export is `overseer export`: writes run records of closed overseen jobs,
// read from Temporal, for train, eval and calibrate.
type Export struct {
	// Stderr receives the summary when the records go to standard output.
	// If not set, os.Stderr.
	Stderr io.Writer
}

// Synopsis implements Command.
func (*Export) Synopsis() string {
	return "write run records (overseer-run/v1) of closed jobs, with their phases and assessments, from Temporal"
}

// Run implements Command.
func (x *Export) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("export", out)
	var conn connFlags
	conn.register(fs)
	query := fs.String("query", "", "Temporal visibility query of the jobs to export (default: "+ops.DefaultExportQuery+")")
	labels := fs.String("labels", "", "JSON file mapping a job id to succeeded, failed or blocked; overrides the outcome of the close status")
	outPath := fs.String("out", "", "write the records here (default: standard output)")
	limit := fs.Int("limit", 0, "export at most this many workflows (default: all)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit %d: give a positive number, or 0 for all", ErrUsage, *limit)
	}
	opts := ops.ExportOptions{Query: *query, Limit: *limit}
	if *labels != "" {
		labelled, err := ops.ReadLabels(*labels)
		if err != nil {
			return err
		}
		opts.Labels = labelled
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	// The histories' payloads are read with the client's converter (the
	// codec of --codec-endpoint or $OVERSEER_CODEC_KEY).
	if o, err := conn.config().ClientOptions(); err == nil {
		opts.DataConverter = o.DataConverter
	}
	res, err := ops.Export(ctx, c, opts)
	if err != nil {
		return err
	}
	if len(res.Records) == 0 {
		return fmt.Errorf("%w: no closed job with phases matches the query (%d still running): run some jobs, or change --query", eval.ErrNoRuns, res.Running)
	}
	summary := out
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		err = eval.WriteRecords(w, res.Records)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", *outPath, err)
		}
	} else {
		if err := eval.WriteRecords(out, res.Records); err != nil {
			return err
		}
		summary = x.Stderr
		if summary == nil {
			summary = os.Stderr
		}
	}
	succeeded := 0
	for _, r := range res.Records {
		if r.Outcome == eval.OutcomeSucceeded {
			succeeded++
		}
	}
	// The labels train and the learn round read (on a copy: the records
	// are written as exported).
	gates := eval.UseGateLabels(append([]eval.Record(nil), res.Records...))
	where := "standard output"
	if *outPath != "" {
		where = *outPath
	}
	fmt.Fprintf(summary, "exported %d runs (%d succeeded, %d failed or blocked) to %s; skipped %d running and %d without phases",
		len(res.Records), succeeded, len(res.Records)-succeeded, where, res.Running, len(res.NoPhases))
	if n := len(res.Encrypted); n > 0 {
		fmt.Fprintf(summary, "; skipped %d whose payloads a codec encrypted (give the codec with --codec-endpoint URL or OVERSEER_CODEC_KEY to export them)", n)
	}
	if opts.Labels != nil {
		fmt.Fprintf(summary, "; %d outcomes from %s", res.Labelled, *labels)
	}
	fmt.Fprintf(summary, "; reviewers' gate decisions: %d continues (%d judged needed), %d aborts; %d false pauses (a continue judged not needed on a job that then succeeded) on %d runs",
		gates.Continues, gates.NeededContinues, gates.Aborts, gates.FalsePauses, gates.RunsWithFalsePause)
	if gates.Unjudged > 0 {
		fmt.Fprintf(summary, "; %d decisions recorded before gates said whether the pause was needed are judged by the old rule (a continue not needed)", gates.Unjudged)
	}
	fmt.Fprintln(summary)
	return nil
}
