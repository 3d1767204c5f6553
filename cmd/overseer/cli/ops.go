package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// StatusCmd prints a job's overseer status.
type StatusCmd struct {
	// Stderr receives the line that says the server is slow to answer
	// (the status query is asked again until --wait has passed). If not
	// set, os.Stderr.
	Stderr io.Writer
}

func (x *StatusCmd) setErrOut(w io.Writer) {
	if x.Stderr == nil {
		x.Stderr = w
	}
}

// Synopsis implements Command.
func (*StatusCmd) Synopsis() string { return "show a job's overseer status (ID, --json)" }

// Run implements Command.
func (x *StatusCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("status", out)
	var conn connFlags
	conn.register(fs)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	wait := fs.Duration("wait", ops.DefaultPatience, "how long to keep asking a server that is slow to answer: a status query that times out (after --timeout) is asked again until then")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	id, err := oneArg(pos, "job id")
	if err != nil {
		return err
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	stderr := x.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	s, err := ops.StatusPatiently(ctx, c, id, "", ops.Patience{CallTimeout: conn.timeout, Wait: *wait, Say: stderr})
	qctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	var paused *ops.OperatorPausedError
	if errors.As(err, &paused) {
		// Workflow Pause: the job answers no query until it is unpaused,
		// so say what describe and the search attributes show.
		j, _ := ops.Describe(qctx, c, id)
		return writeOperatorPaused(out, paused.Pause, j, *asJSON)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	// The status is what the run last recorded: a job terminated or timed
	// out at a gate ran no code to clear its pause, so say that it closed.
	state := ""
	if j, err := ops.Describe(qctx, c, id); err == nil && !j.Running() {
		state = j.State
	}
	writeStatus(out, id, s, state)
	return nil
}

// writeOperatorPaused prints what is known of a job an operator paused with
// Temporal's Workflow Pause: the pause as describe reports it, and the
// overseer's search attributes as the job last set them (whether it waits
// at a gate, its band). As JSON: {"job": …, "operator_pause": …}.
func writeOperatorPaused(out io.Writer, p ops.OperatorPause, j ops.Job, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Job           ops.Job           `json:"job"`
			OperatorPause ops.OperatorPause `json:"operator_pause"`
		}{j, p})
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Job\t%s\n", p.JobID)
	fmt.Fprintf(tw, "Status\tpaused by an operator (Temporal's Workflow Pause): the job answers no status query until it is unpaused\n")
	if p.Identity != "" {
		fmt.Fprintf(tw, "Paused by\t%s\n", p.Identity)
	}
	if p.Since != nil {
		fmt.Fprintf(tw, "Paused since\t%s\n", p.Since.UTC().Format(time.RFC3339))
	}
	if p.Reason != "" {
		fmt.Fprintf(tw, "Reason\t%s\n", p.Reason)
	}
	if j.ID != "" {
		gate := "no (as its search attributes last said)"
		if j.Paused {
			gate = "yes: waiting for a reviewer too (as its search attributes last said)"
		}
		fmt.Fprintf(tw, "At a gate\t%s\n", gate)
		if j.Band != "" {
			fmt.Fprintf(tw, "Last band\t%s\n", bandLabel(j.Band))
		}
	}
	fmt.Fprintf(tw, "Unpause\t%s\n", p.Unpause)
	tw.Flush()
	fmt.Fprintf(out, "\n%s.\n", upperFirst(p.Sentence()))
	return nil
}

// upperFirst is s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeStatus prints a job's status; closedState is its Temporal state
// when it is no longer running ("terminated", …), else "".
func writeStatus(out io.Writer, id string, s overseer.Status, closedState string) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Job\t%s\n", id)
	if s.Objective != "" {
		fmt.Fprintf(tw, "Objective\t%s\n", s.Objective)
	}
	if closedState != "" && s.Paused {
		fmt.Fprintf(tw, "Status\t%s while paused at gate %s: nothing to resume\n", closedState, s.GateID)
		s.Paused = false // the pause lines below describe an open gate
	} else {
		fmt.Fprintf(tw, "Status\t%s\n", s.Headline())
	}
	if closedState != "" {
		fmt.Fprintf(tw, "Temporal\t%s\n", closedState)
	}
	if g := s.Aborted(); g != nil && g.ResumedAt != nil {
		fmt.Fprintf(tw, "Outcome\t%s\n", abortOutcome(s, *g))
	}
	if s.Basis != "" {
		fmt.Fprintf(tw, "Basis\t%s\n", s.Basis)
	}
	if st := overseer.StandingOf(s.Basis); st != "" {
		fmt.Fprintf(tw, "Among its type\t%s\n", st)
	}
	fmt.Fprintf(tw, "Mode\t%s\n", s.Mode)
	// A closed or aborted job has no gate left to open.
	if !s.Approval.IsZero() && closedState == "" && s.Aborted() == nil {
		fmt.Fprintf(tw, "Who may resume\t%s\n", s.Approval)
	}
	if s.Phase != "" {
		fmt.Fprintf(tw, "Last %s\t%s\n", s.Step(), s.Phase)
	}
	if b := s.Budget; b != nil {
		fmt.Fprintf(tw, "Budget\t%s\n", budgetLine(*b))
	}
	if s.Paused && s.PausedSince != nil {
		open := openGate(s)
		// What happened first, in plain words; the rule that fired after.
		if open != nil {
			writeEvidence(tw, "What happened", open.Evidence)
		}
		fmt.Fprintf(tw, "Paused since\t%s\n", s.PausedSince.Format(time.RFC3339))
		fmt.Fprintf(tw, "Pause reason\t%s\n", s.PauseReason)
		fmt.Fprintf(tw, "Gate\t%s (overseer resume %s --gate %s --by NAME)\n", s.GateID, id, s.GateID)
		if open != nil {
			writeRedo(tw, id, s, *open)
		}
		if open != nil && open.EscalatedAt != nil {
			fmt.Fprintf(tw, "Escalated\t%s (%s%s): nobody had resumed it by then\n", open.EscalatedAt.Format(time.RFC3339), open.EscalatedBy, late(open.EscalatedLate))
		}
		if s.GateDeadline != nil {
			rule := ""
			if open != nil && open.DeadlineBy != "" {
				rule = " (" + open.DeadlineBy + ")"
			}
			fmt.Fprintf(tw, "Gate deadline\t%s%s\n", s.GateDeadline.Format(time.RFC3339), rule)
		}
	}
	if s.PendingNote != "" {
		fmt.Fprintf(tw, "Next %s note\t%s\n", s.Step(), s.PendingNote)
	}
	if s.Digest != "" {
		fmt.Fprintf(tw, "Trajectory\t%s\n", s.Digest)
	}
	k := s.Counters
	redos := ""
	if k.Redos > 0 {
		redos = fmt.Sprintf(" (%d redos)", k.Redos)
	}
	fmt.Fprintf(tw, "Counters\t%d %ss, %d assessments (%d failed), %d flagged, %d pauses, %d resumes%s\n",
		k.Phases, s.Step(), k.Assessments, k.Failures, k.Flags, k.Pauses, k.Resumes, redos)
	tw.Flush()
	if len(s.Assessments) > 0 {
		fmt.Fprintln(out, "\nRecent assessments:")
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tPHASE\tSTATUS\tP(ON OBJECTIVE)\tBREACH\tSEVERITY\tFLAGGED\tMODEL\tLATENCY")
		for _, a := range s.Assessments {
			if a.Answers == nil {
				fmt.Fprintf(tw, "  %d\t%s\terror\t-\t-\t-\t-\t%s\t%s\n", a.Seq, a.Phase, a.Model, a.Error)
				continue
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%.1f\t%v\t%s\t%s\n", a.Seq, a.Phase, a.Verdict.Band, formatP(*a.Answers),
				a.Answers.Breach, a.Answers.Severity, a.Verdict.Flagged, a.Model, a.Latency.Round(time.Microsecond))
		}
		tw.Flush()
	}
	if len(s.InPhase) > 0 {
		fmt.Fprintln(out, "\nIn-phase advice (supervision):")
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ACTIVITY\tADVICE\tSTATUS\tREASON\tASSESSMENT\tAT")
		for _, a := range s.InPhase {
			final := ""
			if a.Final {
				final = " (final)"
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%s\t%d%s\t%s\n", a.ActivityType, a.ActivityID, a.Advice, a.Status, a.Reason,
				a.Assessment, final, a.At.Format(time.RFC3339))
		}
		tw.Flush()
	}
	after := "" // a job of phases names the phase alone, as it always has
	if s.Shape == overseer.ShapeAgentLoop {
		after = "call "
	}
	for _, g := range s.Gates {
		fmt.Fprintf(out, "\nGate %s: paused after %s%s at %s: %s\n", g.ID, after, g.Phase, g.PausedAt.Format(time.RFC3339), gateWhy(g.Evidence, g.Reason))
		if g.Attempt > 1 {
			fmt.Fprintf(out, "  holds run %d of %s (after %d redo(s))\n", g.Attempt, g.Phase, g.Attempt-1)
		}
		if g.EscalatedAt != nil {
			fmt.Fprintf(out, "  escalated at %s (%s%s)\n", g.EscalatedAt.Format(time.RFC3339), g.EscalatedBy, late(g.EscalatedLate))
		}
		switch g.Outcome() {
		case "open":
			if g.Deadline != nil {
				fmt.Fprintf(out, "  open, waiting %s; deadline %s\n", time.Since(g.PausedAt).Round(time.Second), g.Deadline.Format(time.RFC3339))
			}
		case "expired":
			fmt.Fprintf(out, "  expired at %s (%s%s): %s\n", g.ResumedAt.Format(time.RFC3339), g.ExpiredBy, late(g.ExpiredLate), g.Action)
		case "cancelled":
			fmt.Fprintln(out, "  cancelled with the run")
		case "abandoned":
			fmt.Fprintln(out, "  left open when the run continued as new: the workflow never awaited its phase, so nothing can open it")
		default:
			fmt.Fprintf(out, "  %s by %s at %s", g.Action, g.By, g.ResumedAt.Format(time.RFC3339))
			if g.Note != "" {
				fmt.Fprintf(out, ": %s", g.Note)
			}
			fmt.Fprintln(out)
		}
		if j := g.Judgement(); j != "" {
			fmt.Fprintf(out, "  %s\n", j)
		}
	}
}

// openGate is the gate the status's pause lines describe (Status.GateID),
// or nil.
// writeEvidence writes a gate's evidence as rows of tw, the first under
// label.
func writeEvidence(tw io.Writer, label string, evidence []string) {
	for i, e := range evidence {
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(tw, "%s\t%s\n", label, e)
	}
}

// gateWhy is why a gate opened in one line: its evidence, most telling
// first, or, for a gate recorded before evidence existed, its reason.
func gateWhy(evidence []string, reason string) string {
	if len(evidence) == 0 {
		return reason
	}
	return strings.Join(evidence, "; ")
}

func openGate(s overseer.Status) *overseer.Gate {
	for i := range s.Gates {
		if s.Gates[i].ID == s.GateID {
			return &s.Gates[i]
		}
	}
	return nil
}

// abortOutcome says who or what aborted the job at gate g: a person, the
// gate's deadline, or another gate's deadline that closed g with it.
func abortOutcome(s overseer.Status, g overseer.Gate) string {
	// The gate whose deadline aborted the job may be an older one that
	// closed g along with it: name the deadline that acted.
	for _, e := range s.Gates {
		if e.Expired && e.Action == overseer.ActionAbort && e.ResumedAt != nil {
			g = e
		}
	}
	at := g.ResumedAt.Format(time.RFC3339)
	if g.Expired {
		return fmt.Sprintf("aborted by its deadline (%s%s) at %s after %s", g.ExpiredBy, late(g.ExpiredLate), at, g.Phase)
	}
	return fmt.Sprintf("aborted by %s at %s after %s", g.By, at, g.Phase)
}

// Resume resumes (or aborts) a paused job through the overseer.resume update.
type Resume struct{}

// Synopsis implements Command.
func (*Resume) Synopsis() string {
	return "resume a paused job (ID [--gate GATE] --by NAME [--note TEXT] [--redo|--abort] [--needed|--not-needed]), several (ID ID… or --query Q)"
}

// Run implements Command.
func (*Resume) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("resume", out)
	var conn connFlags
	conn.register(fs)
	by := fs.String("by", "", "who resumes the job (required)")
	note := fs.String("note", "", "a note passed to the next phase")
	abort := fs.Bool("abort", false, "abort the job instead of resuming it")
	redo := fs.Bool("redo", false, "reject the held phase's result and run the phase again, with --note as its process note; for phases safe to retry (at most the worker's MaxRedos times, default 2)")
	needed := fs.Bool("needed", false, "the pause was needed (if neither --needed nor --not-needed: a continue with a note counts as needed, one without as not needed; a redo or an abort always is)")
	notNeeded := fs.Bool("not-needed", false, "the pause was a false alarm (refused with --abort or --redo: they are always needed)")
	gate := fs.String("gate", "", "the gate to resume, as overseer status shows it; refused if that gate is no longer open (if not set, the job's only open gate)")
	groups := fs.String("groups", "", "the groups the caller claims, comma-separated, for approvers lists that name group:NAME")
	oldest := fs.Bool("oldest", false, "without --gate, resume the oldest open gate even when several are open")
	query := fs.String("query", "", "resume the paused jobs this visibility query selects (e.g. \"WorkflowType = 'CoroJob'\"), each at its own gate")
	budget := fs.String("budget", "", `raise the job's budget, as JSON (e.g. '{"tokens": 5000000}'): a gate the budget opened continues only so`)
	ids, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(ids) == 0 && *query == "":
		return fmt.Errorf("%w: give the job id (or several), or --query", ErrUsage)
	case len(ids) > 0 && *query != "":
		return fmt.Errorf("%w: give job ids or --query, not both", ErrUsage)
	case *gate != "" && (len(ids) != 1 || *query != ""):
		return fmt.Errorf("%w: --gate names one gate of one job; with several jobs each is resumed at its only open gate (or its oldest, with --oldest)", ErrUsage)
	case *redo && *abort:
		return fmt.Errorf("%w: give --redo or --abort, not both", ErrUsage)
	case *needed && *notNeeded:
		return fmt.Errorf("%w: give --needed or --not-needed, not both", ErrUsage)
	}
	req := overseer.ResumeRequest{By: *by, Note: *note, Action: overseer.ActionContinue, Gate: *gate}
	if *abort {
		req.Action = overseer.ActionAbort
	}
	if *redo {
		req.Action = overseer.ActionRedo
	}
	if *needed || *notNeeded {
		req.Needed = new(*needed)
	}
	if *notNeeded && req.Action != overseer.ActionContinue {
		return fmt.Errorf("%w: --not-needed with --%s: a redo or an abort is always a needed pause; drop --not-needed, or continue instead", ErrUsage, req.Action)
	}
	for _, g := range strings.Split(*groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			req.Groups = append(req.Groups, g)
		}
	}
	if *budget != "" {
		b, err := overseer.ParseBudget(*budget)
		if err != nil {
			return fmt.Errorf("%w: --budget: %v", ErrUsage, err)
		}
		req.Budget = &b
	}
	if strings.TrimSpace(req.By) == "" {
		return fmt.Errorf("%w: say who resumes the job with --by NAME", ErrUsage)
	}
	if len(req.Note) > overseer.MaxResumeNoteBytes {
		return fmt.Errorf("%w: --note is %d bytes; keep it to %d bytes (4 KiB)", ErrUsage, len(req.Note), overseer.MaxResumeNoteBytes)
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	lo := conn.listOptions()
	lo.Query = *query
	return resumeJobs(ctx, out, c, req, ids, lo, *oldest, conn.timeout)
}

// resumeJobs resumes the jobs ids, or, with lo.Query, the paused jobs the
// query selects, and says what became of each. A list of paused jobs that
// stopped at a failed page resumes what it read, says that the jobs on
// later pages were not read, and fails.
func resumeJobs(ctx context.Context, out io.Writer, c client.Client, req overseer.ResumeRequest, ids []string, lo ops.ListOptions, oldest bool, timeout time.Duration) error {
	// Each resume is bound to the gate its job has open now, as read here:
	// one that opens later is never closed by this decision.
	var refs []ops.GateRef
	var results []ops.ResumeResult
	var listErr error
	query := lo.Query
	if query != "" {
		// The queue, from visibility: every paused job, each at its gate.
		var gates []ops.WaitingGate
		gates, listErr = ops.Waiting(ctx, c, lo)
		if listErr != nil && len(gates) == 0 {
			return listErr
		}
		if len(gates) == 0 {
			return fmt.Errorf("no paused job matches --query %q", query)
		}
		refs, results = queryGates(gates, oldest)
	} else {
		for _, id := range ids {
			g := req.Gate
			if g == "" {
				gctx, cancel := context.WithTimeout(ctx, timeout)
				var err error
				g, err = ops.GateToResume(gctx, c, id, oldest)
				cancel()
				if err != nil {
					results = append(results, ops.ResumeResult{JobID: id, Err: err})
					continue
				}
			}
			refs = append(refs, ops.GateRef{JobID: id, GateID: g})
		}
	}
	results = append(results, ops.ResumeAll(ctx, c, refs, req, timeout)...)
	several := len(results) > 1 || query != ""
	failed := 0
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Outcome()]++
		if r.Err != nil {
			failed++
			if t := overseer.ErrorType(r.Err); t != "" {
				// The job refused it: say who tried, as the worker's
				// overseer_resumes_refused counts it (reason t).
				r.Err = fmt.Errorf("refused %s's resume (%s): %w", req.By, t, r.Err)
			}
			if !several {
				return r.Err
			}
			fmt.Fprintf(out, "%s: not resumed (%s): %v\n", r.JobID, r.Outcome(), r.Err)
			continue
		}
		verb := "resumed"
		switch r.Gate.Action {
		case overseer.ActionAbort:
			verb = "aborted"
		case overseer.ActionRedo:
			verb = "redone (its phase runs again)"
		}
		fmt.Fprintf(out, "Job %s %s by %s at gate %s (paused after %s: %s)\n", r.JobID, verb, r.Gate.By, r.Gate.ID, r.Gate.Phase, gateWhy(r.Gate.Evidence, r.Gate.Reason))
		if j := r.Gate.Judgement(); j != "" {
			fmt.Fprintf(out, "  %s\n", j)
		}
	}
	if several {
		fmt.Fprintf(out, "%d applied, %d refused, %d unknown (an unknown one may still apply: check with overseer status before you retry)\n",
			counts[ops.ResumeApplied], counts[ops.ResumeRefused], counts[ops.ResumeUnknown])
		if counts[ops.ResumeApplied] > 0 && req.Action != overseer.ActionAbort {
			// Measured at scale: one pass over 1,000 gates left about 1.8%
			// of the jobs paused again at a new gate 30-100 s later.
			fmt.Fprintln(out, "A resumed job goes on and can pause again at a later gate (after a pass over 1,000 gates, about 2% did within 100 s): "+
				"overseer list --paused shows them; run the same command again to resume those too.")
		}
	}
	if listErr != nil {
		// A partial list is never a complete success: the jobs on the pages
		// not read are still paused, and nothing above counts them.
		fmt.Fprintf(out, "Not every paused job was read: %v. The jobs on the pages after it are still paused and not counted above; run the same command again to resume them.\n", listErr)
		return fmt.Errorf("the list of paused jobs stopped early, so some were not resumed: %w", listErr)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs not resumed (each says why above)", failed, len(results))
	}
	return nil
}

// queryGates picks each paused job's gate from the queue: its only open
// gate, or its oldest with oldest; a job with several open gates without
// oldest, or whose gates could not be read, is a result of its own.
func queryGates(gates []ops.WaitingGate, oldest bool) ([]ops.GateRef, []ops.ResumeResult) {
	byJob := map[string][]ops.WaitingGate{}
	var order []string
	for _, g := range gates {
		if _, seen := byJob[g.JobID]; !seen {
			order = append(order, g.JobID)
		}
		byJob[g.JobID] = append(byJob[g.JobID], g)
	}
	var refs []ops.GateRef
	var results []ops.ResumeResult
	for _, id := range order {
		open := byJob[id]
		switch {
		case open[0].Unreadable != "":
			results = append(results, ops.ResumeResult{JobID: id, Err: fmt.Errorf("%w: %s", ops.ErrNotRead, open[0].Unreadable)})
		case len(open) > 1 && !oldest:
			ids := make([]string, len(open))
			for i, g := range open {
				ids[i] = g.GateID
			}
			results = append(results, ops.ResumeResult{JobID: id, Err: fmt.Errorf("%w: job %q has %d open gates (%s): pass --oldest to resume %s",
				ops.ErrAmbiguousGate, id, len(open), strings.Join(ids, ", "), open[0].GateID)})
		default:
			refs = append(refs, ops.GateRef{JobID: id, GateID: open[0].GateID}) // oldest first
		}
	}
	return refs, results
}

// List lists jobs with their overseer band, through the search attributes.
type List struct{}

// Synopsis implements Command.
func (*List) Synopsis() string {
	return "list jobs with their band (--status on_track|needs_a_look|off_track) and spend (--over-budget), or what waits at a gate, oldest first (--paused)"
}

// Run implements Command.
func (*List) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("list", out)
	var conn connFlags
	conn.register(fs)
	status := fs.String("status", "", "only jobs with this band: on_track, needs_a_look or off_track")
	paused := fs.Bool("paused", false, "the queue of open gates of running jobs, oldest first: phase, reason, wait, deadline, who may open it")
	overBudget := fs.Bool("over-budget", false, "only jobs at or past 80% of a bound of their budget (needs the OverseerBudget search attribute)")
	limit := fs.Int("limit", 50, "at most this many jobs (with --paused: the oldest this many gates, of the whole queue)")
	asJSON := fs.Bool("json", false, "print as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if *overBudget && *paused {
		return fmt.Errorf("%w: --over-budget and --paused: list the gates with --paused (a budget's gate says so), or the jobs over budget with --over-budget", ErrUsage)
	}
	query, err := ops.ListQuery(*status, *paused)
	if err != nil {
		return fmt.Errorf("%w: --%s", ErrUsage, strings.TrimPrefix(err.Error(), ops.ErrInvalidFilter.Error()+": "))
	}
	if *overBudget {
		query = strings.Join(slices.DeleteFunc([]string{query, ops.OverBudgetQuery}, func(q string) bool { return q == "" }), " AND ")
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	lo := conn.listOptions()
	if *paused {
		band, _ := ops.ListQuery(*status, false)
		lo.Query = band
		oldest := 0 // every gate
		if limitSet(fs) {
			oldest = *limit
		}
		return writeWaiting(ctx, out, c, lo, *asJSON, oldest)
	}
	lo.Query, lo.Limit = query, *limit
	jobs, err := ops.List(ctx, c, lo)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(jobs)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tTYPE\tSTATE\tSTATUS\tP(ON OBJECTIVE)\tPAUSED\tPHASE\tSPENT\tSTARTED")
	now := time.Now()
	for _, j := range jobs {
		p := "-"
		if j.Band != "" && j.Band != "not_assessed" {
			p = fmt.Sprintf("%.2f", j.OnObjective)
		}
		phase, band := "-", bandLabel(j.Band)
		if j.Summary != nil && j.Summary.Phase != "" {
			phase = j.Summary.Phase
		}
		if j.Paused {
			// A paused job reads as one a person must look at, why first.
			band = overseer.PausedBand(overseer.Band(j.Band)).String()
			if j.Summary != nil {
				band = j.Summary.Headline()
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\n", j.ID, j.Type, j.State, band, p, j.Paused, phase, cmp.Or(j.Spend(now), "-"), j.Started.Format(time.RFC3339))
	}
	tw.Flush()
	if len(jobs) == 0 {
		fmt.Fprintln(out, "(no jobs match)")
	}
	return nil
}

// limitSet says --limit was given.
func limitSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "limit" })
	return set
}

// writeWaiting prints the queue of open gates, oldest first, after the
// paused jobs whose gates could not be read.
// writeWaiting prints the queue: every open gate, or, with oldest above 0,
// that many of the oldest. The queue is read whole, so that the gates left
// out are the newest, not those of the jobs started first.
func writeWaiting(ctx context.Context, out io.Writer, c client.Client, lo ops.ListOptions, asJSON bool, oldest int) error {
	lo.Limit = 0 // every paused job
	gates, err := ops.Waiting(ctx, c, lo)
	if err != nil && len(gates) == 0 {
		return err
	}
	all := len(gates)
	if oldest > 0 && all > oldest {
		gates = gates[:oldest]
	}
	if asJSON {
		if jerr := json.NewEncoder(out).Encode(gates); jerr != nil {
			return jerr
		}
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	// The rule that fired is in the JSON (--json); a reviewer reads what
	// happened.
	fmt.Fprintln(tw, "WAITING\tJOB\tGATE\tPHASE\tDEADLINE\tWHO MAY OPEN IT\tWHAT HAPPENED")
	for _, g := range gates {
		if g.Unreadable != "" {
			fmt.Fprintf(tw, "?\t%s\t?\t?\t?\t?\tnot read: %s\n", g.JobID, g.Unreadable)
			continue
		}
		deadline, who := "-", g.Who()
		if g.Deadline != nil {
			deadline = fmt.Sprintf("%s (in %s)", g.Deadline.Format(time.RFC3339), time.Until(*g.Deadline).Round(time.Second))
		}
		if g.OperatorPaused {
			who = "nobody until an operator unpauses it (" + ops.UnpauseCommand(g.JobID) + ")"
		}
		gate := g.GateID
		if g.Attempt > 1 {
			gate += fmt.Sprintf(" (run %d of %s)", g.Attempt, g.Phase)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Wait.Round(time.Second), g.JobID, gate, g.Phase, deadline, who, gateWhy(g.Evidence, g.Reason))
	}
	tw.Flush()
	if len(gates) == 0 {
		fmt.Fprintln(out, "(nothing waits at a gate)")
	}
	if len(gates) < all {
		fmt.Fprintf(out, "(the %d oldest of %d open gates; --limit 0 or no --limit lists them all)\n", len(gates), all)
	}
	return err
}

func bandLabel(b string) string {
	if b == "" {
		return "-"
	}
	return overseer.Band(b).String()
}

// JobRow is one job in `overseer list`.
type JobRow = ops.Job

// formatP prints P(on objective), or "-" when the judge abstained.
func formatP(a overseer.Answers) string {
	if a.OnObjectiveUnknown {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.OnObjective)
}

// basisName is the head of a basis ("telemetry sub-model", "heuristic
// rules"), for lines too short for the inputs it lists.
func basisName(basis string) string { return overseer.ShortBasis(basis) }

// late is ", 5.1s late" for a deadline that acted late (no worker ran the
// job at its time), "" for one on time.
func late(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return ", " + d.String() + " late"
}

// writeRedo says whether the open gate g can be redone, and how.
func writeRedo(tw io.Writer, id string, s overseer.Status, g overseer.Gate) {
	switch {
	case s.CanRedo(g):
		fmt.Fprintf(tw, "Redo\t%d of %d left (overseer resume %s --gate %s --redo --by NAME --note TEXT runs %s again)\n",
			s.MaxRedos-max(g.Attempt, 1)+1, s.MaxRedos, id, g.ID, g.Phase)
	case s.RedoSafe(g.Phase):
		fmt.Fprintf(tw, "Redo\tnone left: %s was redone %d time(s), the most this job allows\n", g.Phase, max(g.Attempt, 1)-1)
	case s.MaxRedos > 0:
		fmt.Fprintf(tw, "Redo\tnone: phase %s is not declared safe to run again (the worker's RedoSafe)\n", g.Phase)
	}
}

// budgetLine says a job's spend against its budget in one line.
func budgetLine(b overseer.BudgetStatus) string {
	line := "limit " + b.Limit.String()
	switch {
	case b.Exceeded != "":
		line += "; reached: " + b.Exceeded
	case b.Warning != "" && b.Warning != b.RelativeReached:
		line += "; " + b.Warning
	}
	if b.Relative != nil {
		line += "; relative budget " + b.Relative.String()
		if b.RelativeReached != "" {
			line += ": reached: " + b.RelativeReached
		}
	}
	if len(b.Unchecked) > 0 {
		line += "; unchecked (the phases report none): " + strings.Join(b.Unchecked, ", ")
	}
	return line
}
