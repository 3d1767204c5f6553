package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
		opts.DataConverter, opts.Namespace = o.DataConverter, o.Namespace
	}
	// The records stream as each page of jobs is read: an export holds a
	// page of them, not all. A file is written beside its path and renamed
	// into place once whole.
	w, summary := bufio.NewWriter(out), x.Stderr
	if summary == nil {
		summary = os.Stderr
	}
	var tmp *os.File
	if *outPath != "" {
		if tmp, err = os.CreateTemp(filepath.Dir(*outPath), "."+filepath.Base(*outPath)+".*"); err != nil {
			return fmt.Errorf("write %s: %w", *outPath, err)
		}
		defer func() {
			if tmp != nil {
				_ = tmp.Close()
				_ = os.Remove(tmp.Name())
			}
		}()
		w, summary = bufio.NewWriter(tmp), out
	}
	succeeded := 0
	var gates eval.GateLabels
	opts.Each = func(j ops.ExportedJob) error {
		if j.NoPhases {
			return nil
		}
		if j.Record.Outcome == eval.OutcomeSucceeded {
			succeeded++
		}
		// The labels train and the learn round read (on a copy: the
		// record is written as exported).
		addGateLabels(&gates, eval.UseGateLabels([]eval.Record{j.Record}))
		return eval.WriteRecords(w, []eval.Record{j.Record})
	}
	opts.Page = func([]byte) error { return w.Flush() }
	res, err := ops.Export(ctx, c, opts)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		if *outPath != "" {
			return fmt.Errorf("write %s: %w", *outPath, err)
		}
		return err
	}
	if res.Exported == 0 {
		return fmt.Errorf("%w: no closed job with phases matches the query (%d still running): run some jobs, or change --query", eval.ErrNoRuns, res.Running)
	}
	if tmp != nil {
		err := tmp.Close()
		if err == nil {
			err = os.Rename(tmp.Name(), *outPath)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", *outPath, err)
		}
		tmp = nil
	}
	where := "standard output"
	if *outPath != "" {
		where = *outPath
	}
	fmt.Fprintf(summary, "exported %d runs (%d succeeded, %d failed or blocked) to %s; skipped %d running and %d without phases",
		res.Exported, succeeded, res.Exported-succeeded, where, res.Running, len(res.NoPhases))
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

// addGateLabels adds one record's gate labels to sum: the counts the
// summary says.
func addGateLabels(sum *eval.GateLabels, l eval.GateLabels) {
	sum.Continues += l.Continues
	sum.NeededContinues += l.NeededContinues
	sum.Aborts += l.Aborts
	sum.FalsePauses += l.FalsePauses
	sum.RunsWithFalsePause += l.RunsWithFalsePause
	sum.Unjudged += l.Unjudged
}
