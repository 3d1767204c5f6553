package overseer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// ResumeRequest is the argument of the overseer.resume signal and update.
// It is decoded strictly: a field not listed here is refused.
type ResumeRequest struct {
	// By names who resumes. Required, at most maxResumeByBytes.
	By string `json:"by"`
	// Note is passed to the next phase with the process note. At most
	// MaxResumeNoteBytes.
	Note string `json:"note,omitempty"`
	// Action is continue, redo or abort. Empty means continue.
	Action Action `json:"action,omitempty"`
	// Needed is the reviewer's judgement of the pause: true, it was needed;
	// false, it was a false alarm. Nil lets the rule decide (see
	// Gate.Needed): a continue with a note was needed, one without a note
	// was not; a redo or an abort always was.
	Needed *bool `json:"needed,omitempty"`
	// Gate is the id of the gate this resume is meant for (Status.GateID).
	// If set, the resume is refused unless that gate is still open, so a
	// decision taken at one gate never closes a later one. If empty, the
	// oldest open gate is closed.
	Gate string `json:"gate,omitempty"`
	// Groups are the groups the caller says it belongs to, for approvers
	// lists that name groups ([Approval]); the dashboard fills them from
	// the login.
	Groups []string `json:"groups,omitempty"`
	// Budget, if set, raises the job's budget ([Budget]): each bound it
	// sets replaces the job's. A gate the budget opened continues only
	// with one that lifts the bound the job reached above its spend.
	Budget *Budget `json:"budget,omitempty"`
}

// Limits of a ResumeRequest. They keep a resume far below Temporal's payload
// and gRPC message limits: the note is stored on the gate, in the status and
// in the next phase's process note.
const (
	// MaxResumeNoteBytes caps ResumeRequest.Note (4 KiB).
	MaxResumeNoteBytes = 4 << 10
	// maxResumeByBytes caps ResumeRequest.By.
	maxResumeByBytes = 200
)

// Application error types of the overseer.resume update's refusals. They
// are stable: clients test them with [ErrorType] (errors.As on
// *temporal.ApplicationError), never by matching the message.
const (
	// NotPausedErrorType: nothing is paused, so there is nothing to resume.
	NotPausedErrorType = "OverseerNotPaused"
	// WrongGateErrorType: the request names a gate that is not open (it was
	// resumed already, or the job is paused at another gate). The error's
	// details hold the ids of the open gates ([]string).
	WrongGateErrorType = "OverseerWrongGate"
	// InvalidResumeErrorType: the request itself is wrong (undecodable,
	// unknown field, no by, unknown action, note too long).
	InvalidResumeErrorType = "OverseerInvalidResume"
)

// ErrorType is the type of the temporal.ApplicationError in err's chain, or
// "" when it has none. It looks through wrapping, including the SDK's
// workflow, update and activity errors. The overseer's types are
// AbortedErrorType, NotPausedErrorType, WrongGateErrorType,
// InvalidResumeErrorType, NotAuthorizedErrorType, RedoRefusedErrorType, InvalidAnswerErrorType, RejectedErrorType and
// InvalidRequestErrorType: compare with them, never with message text.
func ErrorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return ""
}

func refusal(typ, msg string, details ...any) error {
	return temporal.NewApplicationErrorWithOptions(msg, typ, temporal.ApplicationErrorOptions{NonRetryable: true, Details: details})
}

func invalidResume(format string, args ...any) error {
	return refusal(InvalidResumeErrorType, "overseer: "+fmt.Sprintf(format, args...))
}

// Validate checks a resume request on its own (without the job's state). A
// refusal is an application error of type InvalidResumeErrorType.
func (r ResumeRequest) Validate() error {
	switch {
	case strings.TrimSpace(r.By) == "":
		return invalidResume(`resume needs "by": who resumes the job`)
	case len(r.By) > maxResumeByBytes:
		return invalidResume(`resume "by" is %d bytes; keep it to %d`, len(r.By), maxResumeByBytes)
	case len(r.Note) > MaxResumeNoteBytes:
		return invalidResume("resume note is %d bytes; keep it to %d bytes (4 KiB)", len(r.Note), MaxResumeNoteBytes)
	case r.Needed != nil && !*r.Needed && (r.Action == ActionAbort || r.Action == ActionRedo):
		return invalidResume(`resume action %q is always a needed pause: drop "needed": false, or continue instead`, r.Action)
	}
	if r.Budget != nil {
		if err := r.Budget.Validate(); err != nil {
			return invalidResume("%s", err.Error())
		}
	}
	switch r.Action {
	case "", ActionContinue, ActionRedo, ActionAbort:
		return nil
	}
	return invalidResume(`resume action must be "continue", "redo" or "abort", not %q`, trajectory.Clip(string(r.Action), 40))
}

// decodeResume decodes one resume request from its raw payload into a fresh
// value, refusing unknown fields, and validates it.
func decodeResume(raw converter.RawValue) (ResumeRequest, error) {
	var req ResumeRequest
	p := raw.Payload()
	if p == nil {
		return req, req.Validate()
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingJSON {
		dec := json.NewDecoder(bytes.NewReader(p.GetData()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return ResumeRequest{}, invalidResume("resume request is not valid: %s; send {\"by\": NAME} with optional note, action, needed and gate",
				strings.TrimPrefix(trajectory.Clip(err.Error(), 200), "json: "))
		}
		if dec.More() {
			return ResumeRequest{}, invalidResume("resume request has data after its JSON object; send one object")
		}
	} else if err := defaultConverter.FromPayload(p, &req); err != nil {
		return ResumeRequest{}, invalidResume("resume request cannot be decoded: %s", trajectory.Clip(err.Error(), 200))
	}
	return req, req.Validate()
}

// accept decodes a resume request and checks it against the open gates:
// the one rule of the signal, the update and its validator.
// starter is the job's starter as the four-eyes rule reads it:
// r.startedBy for an update, signalStarter for a signal. commands is
// false where no command may be sent (the update's validator).
func (r *run) accept(ctx workflow.Context, raw converter.RawValue, starter string, commands bool) (ResumeRequest, error) {
	req, err := decodeResume(raw)
	if err != nil {
		return req, err
	}
	if commands {
		r.settleUnpinnedRedos(ctx, req)
		r.settleBudgetRules(ctx, req)
	}
	return req, r.check(ctx, req, starter)
}

// check refuses a valid request the job's gates cannot take.
func (r *run) check(ctx workflow.Context, req ResumeRequest, starter string) error {
	if len(r.open) == 0 {
		return refusal(NotPausedErrorType, "overseer: the job is not paused")
	}
	if g := r.gateFor(req); g != nil {
		if err := r.cfg.Approval.allows(req, starter); err != nil {
			return err
		}
		if err := r.checkBudgetResume(ctx, g, req); err != nil {
			return err
		}
		return r.checkRedo(req)
	}
	ids := r.openIDs()
	return refusal(WrongGateErrorType, fmt.Sprintf("overseer: gate %q is not open; the job is paused at gate %q (after phase %s): read its reason before resuming it",
		trajectory.Clip(req.Gate, 80), ids[0], r.open[0].Phase), ids)
}

// gateFor is the open gate req is for: the one it names, else the oldest;
// nil when it names a gate that is not open, or none is.
func (r *run) gateFor(req ResumeRequest) *Gate {
	if len(r.open) == 0 {
		return nil
	}
	if req.Gate == "" {
		return r.open[0]
	}
	if i := r.openGate(req.Gate); i >= 0 {
		return r.open[i]
	}
	return nil
}

func (r *run) openGate(id string) int {
	return slices.IndexFunc(r.open, func(g *Gate) bool { return g.ID == id })
}

func (r *run) openIDs() []string {
	ids := make([]string, len(r.open))
	for i, g := range r.open {
		ids[i] = g.ID
	}
	return ids
}

// signalInbox is the run's two signal channels: resumes and in-phase advice.
type signalInbox struct {
	resumes, advice workflow.ReceiveChannel
}

func signalChannels(ctx workflow.Context) signalInbox {
	return signalInbox{
		resumes: workflow.GetSignalChannelWithOptions(ctx, ResumeName, workflow.SignalChannelOptions{
			Description: "Resume (redo the held phase, or abort) a job paused at an overseer gate; cannot be refused, so prefer the update. " +
				`Argument: {"by": NAME, "note": TEXT, "action": "continue"|"redo"|"abort", "needed": true|false, "gate": GATE_ID}.`,
		}),
		advice: workflow.GetSignalChannelWithOptions(ctx, InPhaseSignalName, workflow.SignalChannelOptions{
			Description: "In-phase advice from the supervisor of a running phase activity; shown in the status, never acted on.",
		}),
	}
}

// addTo makes sel receive (and handle) one signal of either channel.
//
// Each signal is received as its raw payload into a fresh value, so a
// signal that cannot be decoded is counted and dropped and never leaves
// fields behind for the next one.
func (s signalInbox) addTo(ctx workflow.Context, sel workflow.Selector, r *run) {
	sel.AddReceive(s.resumes, func(c workflow.ReceiveChannel, _ bool) {
		var raw converter.RawValue
		c.Receive(ctx, &raw)
		r.resumeSignal(ctx, raw)
	})
	sel.AddReceive(s.advice, func(c workflow.ReceiveChannel, _ bool) {
		var a InPhaseAdvice
		c.Receive(ctx, &a)
		r.recordInPhase(a)
	})
}

// pending says a signal waits in either channel.
func (s signalInbox) pending() bool { return s.resumes.Len() > 0 || s.advice.Len() > 0 }

// drain handles the signals already received and waiting in the channels.
func (s signalInbox) drain(ctx workflow.Context, r *run) {
	for {
		var raw converter.RawValue
		if !s.resumes.ReceiveAsync(&raw) {
			break
		}
		r.resumeSignal(ctx, raw)
	}
	for {
		var a InPhaseAdvice
		if !s.advice.ReceiveAsync(&a) {
			break
		}
		r.recordInPhase(a)
	}
}

// listen registers the resume update and starts the run's one signal
// listener: resume signals and in-phase advice. It is the structure of runs
// pinned before runStructureV2 (see ExecuteWorkflow).
func (r *run) listen(ctx workflow.Context) error {
	sel := workflow.NewSelector(ctx)
	signalChannels(ctx).addTo(ctx, sel, r)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for ctx.Err() == nil {
			sel.Select(ctx)
		}
	})
	return r.registerResumeUpdate(ctx)
}

// resumeSignal resumes the job if the signal is a valid request for an open
// gate; otherwise it counts the signal and drops it.
func (r *run) resumeSignal(ctx workflow.Context, raw converter.RawValue) {
	starter := r.startedBy
	if r.cfg.Approval.FourEyes {
		starter = signalStarter(ctx)
	}
	req, err := r.accept(ctx, raw, starter, true)
	if err == nil {
		_, err = r.resume(ctx, req)
	}
	if err == nil {
		return
	}
	r.st.Counters.IgnoredResumes++
	metricRefusedResume(ctx, viaSignal, err)
	msg := err.Error()
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		msg = app.Message()
	}
	// A signal carries no sender identity the workflow can read; "by" is
	// the sender's own claim, when it decoded.
	r.logger.Warn("overseer: dropped resume signal", "reason", msg, "by", trajectory.Clip(req.By, maxResumeByBytes),
		"ignored_resumes", r.st.Counters.IgnoredResumes)
}

func (r *run) registerResumeUpdate(ctx workflow.Context) error {
	err := workflow.SetUpdateHandlerWithOptions(ctx, ResumeName,
		func(ctx workflow.Context, raw converter.RawValue) (Gate, error) {
			req, err := r.accept(ctx, raw, r.startedBy, true)
			var g Gate
			if err == nil {
				g, err = r.resume(ctx, req)
			}
			if err != nil {
				// Accepted, then refused: the gate closed between the
				// validator and the handler.
				metricRefusedResume(ctx, viaUpdate, err)
			}
			return g, err
		},
		workflow.UpdateHandlerOptions{
			// A refusal here writes no history: the metric (the SDK runs
			// validators only outside replay) and the caller's log are its
			// only record.
			Validator: func(ctx workflow.Context, raw converter.RawValue) error {
				req, err := r.accept(ctx, raw, r.startedBy, false)
				if err != nil {
					metricRefusedResume(ctx, viaUpdate, err)
					r.logger.Info("overseer: refused resume update", "type", ErrorType(err), "by", trajectory.Clip(req.By, maxResumeByBytes))
				}
				return err
			},
			Description: "Resume (redo the held phase, or abort) a job paused at an overseer gate; refused unless the job is paused (at the named gate). " +
				`Argument: {"by": NAME, "note": TEXT, "action": "continue"|"redo"|"abort", "needed": true|false, "gate": GATE_ID}; returns the closed gate.`,
		})
	if err != nil {
		return fmt.Errorf("overseer: register %s update: %w", ResumeName, err)
	}
	return nil
}

// resume closes the gate req names (the oldest open one if it names none).
// The gate's own coroutine wakes up and lets its phase's result through,
// runs the phase again, on redo (redo.go), or the run ends, on abort. req
// has been checked.
func (r *run) resume(ctx workflow.Context, req ResumeRequest) (Gate, error) {
	if req.Action == ActionRedo && !redoVersioned(ctx) {
		// Replaying a run from before redo: it dropped the signal.
		r.redoDropped = true
		return Gate{}, invalidResume(`resume action must be "continue" or "abort", not "redo"`)
	}
	i := 0
	if req.Gate != "" {
		i = r.openGate(req.Gate)
	}
	now := workflow.Now(ctx)
	g := r.open[i]
	g.ResumedAt, g.By, g.Note, g.Action = &now, req.By, req.Note, req.Action
	if req.Budget != nil && req.Action != ActionAbort {
		// Raised for the rest of the run (checked: checkBudgetResume).
		raised := Budget{}
		if r.cfg.Budget != nil {
			raised = *r.cfg.Budget
		}
		raised = raised.raisedBy(*req.Budget)
		r.cfg.Budget, g.RaisedBudget = &raised, &raised
	}
	if g.Action == "" {
		g.Action = ActionContinue
	}
	if g.Kind == GateKindBudget && g.Action != ActionAbort && r.st.Budget != nil && r.st.Budget.RelativeReached != "" && r.cfg.RelativeGates {
		// A person looked at the relative budget: it opens its gate once.
		r.st.Budget.RelativeGated = true
	}
	g.judge(req)
	closed := []*Gate{g}
	r.open = slices.Delete(r.open, i, i+1)
	if g.Action == ActionAbort {
		// Aborting ends the job, so every other open gate ends with it.
		for _, o := range r.open {
			o.ResumedAt, o.By, o.Action = &now, req.By, ActionAbort
			o.Needed, o.NeededBy = ptrTo(true), NeededByAction
			closed = append(closed, o)
		}
		r.open = nil
		r.aborted = g
	} else {
		// A human looked: judge failures count afresh, so a judge that stays
		// down pauses again only after MaxConsecutiveFailures more; and the
		// trajectory says so, so that what the reviewer saw does not pause
		// the job again at its next call (PhaseRun.Reviewed).
		r.st.Counters.ConsecutiveFailures = 0
		r.markReviewed(ctx, g)
		if g.Action == ActionRedo {
			// The gate's coroutine runs the phase again, with the note.
			r.st.Counters.Redos++
		} else if r.note != nil && req.Note != "" {
			r.note.ReviewerNote, r.note.ReviewedBy = req.Note, req.By
		}
	}
	for _, c := range closed {
		c.clearDeadline()
		r.recordGate(*c)
		r.st.Counters.Resumes++
		metricResume(ctx, *c)
		r.reportGate(ctx, *c, now)
	}
	r.syncGates(ctx)
	r.logger.Info("overseer: job resumed", "by", g.By, "action", string(g.Action), "phase", g.Phase, "gate", g.ID)
	for _, c := range closed {
		kind := GateResumed
		switch c.Action {
		case ActionAbort:
			kind = GateAborted
		case ActionRedo:
			kind = GateRedone
		}
		r.notify(ctx, kind, *c)
	}
	return *g, nil
}

// judge records whether the pause was needed (Needed, NeededBy) as its
// gate closes with req: the reviewer's judgement if req gives one, else a
// redo or an abort was needed, a continue with a note was needed and one
// without a note was a false alarm. Validate has refused a redo or an
// abort judged not needed.
func (g *Gate) judge(req ResumeRequest) {
	switch {
	case req.Needed != nil:
		g.Needed, g.NeededBy = ptrTo(*req.Needed), NeededByReviewer
	case g.Action == ActionRedo || g.Action == ActionAbort:
		g.Needed, g.NeededBy = ptrTo(true), NeededByAction
	case strings.TrimSpace(req.Note) != "":
		g.Needed, g.NeededBy = ptrTo(true), NeededByNote
	default:
		g.Needed, g.NeededBy = ptrTo(false), NeededByNoNote
	}
}

func ptrTo[T any](v T) *T { return &v }

// gateHold is what a gate holds until a person resumes the job.
type gateHold int

const (
	// holdsResult: the phase's result, which the workflow waits for.
	holdsResult gateHold = iota
	// holdsNext: the workflow has the phase's result; the gate holds its
	// next phase and the run's end (runStructureV3).
	holdsNext
	// holdsBoundary: the workflow's call of Boundary, which returns when
	// the gate closes (runStructureV4: such a gate offers no redo).
	holdsBoundary
)

// pause opens a gate and waits, durably, until a human resumes it. Gates of
// phases flagged in parallel queue up: each is recorded and resumed on its
// own, and each holds only its own phase's result. attempt is which run of
// the phase the gate holds (Gate.Attempt). It returns the gate once it is
// closed.
func (r *run) pause(ctx workflow.Context, phase string, why pauseCause, attempt int, hold gateHold) *Gate {
	now := workflow.Now(ctx)
	r.startedBy = startedBy(ctx)
	// The queue and the status say that nobody can open such a gate,
	// rather than list approvers who would all be refused.
	r.st.Approval.NoStarter = r.cfg.Approval.FourEyes && r.startedBy == ""
	if r.cfg.Approval.FourEyes {
		r.st.StartedBy = r.startedBy // so the dashboard can tell a starter they may not open it
	}
	r.st.Counters.Pauses++
	g := &Gate{ID: fmt.Sprintf("%s-%d", phase, r.st.Counters.Pauses), Phase: phase, Reason: why.reason, Evidence: why.evidence, PausedAt: now, Attempt: attempt,
		afterRun: why.afterRun, Kind: why.kind}
	switch hold {
	case holdsNext:
		g.holdsNext = true
		r.opening--
	case holdsBoundary:
		g.AtBoundary = true
	}
	r.open = append(r.open, g)
	r.st.Gates = trajectory.Window(r.st.Gates, *g, maxRecentGates)
	metricPause(ctx, g, r.st.Counters.ConsecutiveFailures > 0)
	if g.Kind == GateKindBudget {
		r.reportBudgetStop(ctx, *g)
	}
	r.syncGates(ctx)
	r.upsertSearchAttributes(ctx) // the summary once the deadline is set (awaitGate)
	r.logger.Info("overseer: job paused", "phase", phase, "gate", g.ID, "reason", why.reason, "evidence", strings.Join(why.evidence, "; "))
	if err := r.awaitGate(ctx, g); err != nil {
		// Cancelled at the gate: close it so that neither the status nor
		// the search attributes say "paused" once the run has ended. The
		// upsert needs a context that is not cancelled.
		if i := r.openGate(g.ID); i >= 0 {
			g.Cancelled = true
			g.clearDeadline()
			r.open = slices.Delete(r.open, i, i+1)
			r.recordGate(*g)
			r.reportGate(ctx, *g, workflow.Now(ctx))
		}
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.syncGates(dctx)
		r.publish(dctx)
		return g
	}
	r.publish(ctx)
	return g
}

// reviewedChangeID versions which phase run a resume marks as reviewed:
// the one the gate was opened after (version 1), not the latest one, which
// may have completed while the gate was open, unseen by the reviewer.
const reviewedChangeID = "temporal-overseer/reviewed-run"

// markReviewed marks the phase run gate g was opened after as seen by the
// person who resumed it. The marker is recorded only where the two rules
// differ: a phase run completed while g was open.
func (r *run) markReviewed(ctx workflow.Context, g *Gate) {
	if g.afterRun == 0 || g.afterRun == r.traj.PhaseRuns ||
		workflow.GetVersion(ctx, reviewedChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		r.traj.MarkReviewed(r.traj.PhaseRuns)
		return
	}
	r.traj.MarkReviewed(g.afterRun)
}

// recordGate updates a gate's entry in the status.
func (r *run) recordGate(g Gate) {
	if i := slices.IndexFunc(r.st.Gates, func(s Gate) bool { return s.ID == g.ID }); i >= 0 {
		r.st.Gates[i] = g
	}
}

// syncGates makes the status and the workflow's current details describe
// the open gates (the oldest one first).
func (r *run) syncGates(ctx workflow.Context) {
	if len(r.open) == 0 {
		r.st.Paused, r.st.PausedSince, r.st.PauseReason, r.st.GateID, r.st.GateDeadline = false, nil, "", "", nil
		if r.detailsSet {
			workflow.SetCurrentDetails(ctx, r.userDetails)
			r.detailsSet = false
		}
		return
	}
	g := r.open[0]
	at := g.PausedAt
	r.st.Paused, r.st.PausedSince, r.st.PauseReason, r.st.GateID, r.st.GateDeadline = true, &at, g.Reason, g.ID, g.Deadline
	if !r.detailsSet {
		// Keep what the workflow itself shows, to put it back on resume.
		r.userDetails, r.detailsSet = workflow.GetCurrentDetails(ctx), true
	}
	workflow.SetCurrentDetails(ctx, r.gateDetails(ctx))
}

// gateDetails is the workflow's current details while it is paused: what a
// person sees in `temporal workflow metadata` and the Web UI, with the
// exact command that resumes each open gate.
func (r *run) gateDetails(ctx workflow.Context) string {
	info := workflow.GetInfo(ctx)
	target := "--workflow-id " + shellQuote(info.WorkflowExecution.ID)
	if info.Namespace != "" && info.Namespace != "default" {
		target += " --namespace " + shellQuote(info.Namespace)
	}
	step := stepNoun(ShapeOf(r.traj))
	var b strings.Builder
	fmt.Fprintf(&b, "Paused by the overseer (%s mode): %d gate(s) open.\n", r.cfg.Mode, len(r.open))
	for _, g := range r.open {
		fmt.Fprintf(&b, "\nGate %s, after %s %s, since %s.\n", g.ID, step, g.Phase, g.PausedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
		// What happened first, in plain words; the rule that fired after.
		for _, e := range g.Evidence {
			fmt.Fprintf(&b, "- %s\n", e)
		}
		fmt.Fprintf(&b, "Reason: %s\n", g.Reason)
		if g.EscalatedAt != nil {
			fmt.Fprintf(&b, "Escalated at %s (%s%s).\n", g.EscalatedAt.UTC().Format("2006-01-02 15:04:05 UTC"), g.EscalatedBy, lateText(g.EscalatedLate))
		}
		if g.Deadline != nil {
			fmt.Fprintf(&b, "Deadline: %s.\n", g.Deadline.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		fmt.Fprintf(&b, "Resume: temporal workflow update execute %s --name %s --input %s\n",
			target, ResumeName, shellQuote(fmt.Sprintf(`{"by":"YOUR_NAME","gate":%q,"note":"optional note"}`, g.ID)))
		if r.redoable(g) {
			fmt.Fprintf(&b, "Redo:   temporal workflow update execute %s --name %s --input %s\n",
				target, ResumeName, shellQuote(fmt.Sprintf(`{"by":"YOUR_NAME","gate":%q,"action":"redo","note":"what to do differently"}`, g.ID)))
		}
		fmt.Fprintf(&b, "Abort:  temporal workflow update execute %s --name %s --input %s\n",
			target, ResumeName, shellQuote(fmt.Sprintf(`{"by":"YOUR_NAME","gate":%q,"action":"abort"}`, g.ID)))
	}
	if r.note != nil {
		fmt.Fprintf(&b, "\nThe next %s will receive: %s\n", step, r.note.String())
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@,+", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
