package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// Demo runs the four scenario jobs and the four agent-loop jobs in manage
// mode on an embedded dev server,
// shows them as they go, resumes the paused ones as a human would, and ends
// with a summary table. With --traces it runs recorded real agent runs
// instead (the shipped ones: examples/traces/mini-swe-agent).
type Demo struct{}

// Synopsis implements Command.
func (*Demo) Synopsis() string {
	return "run the four scenario jobs and five agent loops, one stopped by its budget (or, with --traces DIR, recorded real agent runs) on an embedded dev server and show the overseer at work"
}

// reviewerNotes are what the demo's human reviewer writes per scenario.
var reviewerNotes = map[activities.Scenario]string{
	activities.Looping:  "Stop patching the same tests; find the root cause first.",
	activities.Drifting: "Stay on the feature lane; the refactor is out of scope.",
	activities.Blocked:  "Added the registry credentials to the job's secrets.",
	activities.OnTrack:  "Looks fine, carry on.",
}

// loopReviewerNotes are what the demo's reviewer writes to the agent
// loops (CoroAgentLoop); the simulated agent heeds only the blocked one's.
var loopReviewerNotes = map[activities.LoopScenario]string{
	activities.LoopToolFailing: "The export test needs its fixture; fix that before running it again.",
	activities.LoopRepeating:   "You have read export.go; edit it.",
	activities.LoopBlocked:     "DEPLOY_TOKEN is in the staging vault.",
	activities.LoopHealthy:     "Looks fine, carry on.",
}

// loopOutcomes are how the demo's agent loops end: the simulated agent
// ignores a note unless it gives it credentials, so the failing and the
// looping one give up at their last turn, paused wherever a person was
// needed on the way.
var loopOutcomes = map[activities.LoopScenario]string{
	activities.LoopHealthy: "done", activities.LoopBlocked: "done",
	activities.LoopToolFailing: "gave up", activities.LoopRepeating: "gave up",
}

type demoJob struct {
	scenario activities.Scenario
	// loop is the agent-loop scenario of a CoroAgentLoop job ("" for a
	// CoroJob); label names the job in the output.
	loop    activities.LoopScenario
	label   string
	id      string
	run     client.WorkflowRun
	seen    int // highest assessment seq printed
	resumed int // pauses the reviewer has resumed
	done    bool
	outcome string
	status  overseer.Status
	latency time.Duration
	latN    int
	// budget is the job's budget (a memo, as a job spec gives it), "" for
	// none; its reviewer continues a budget's gate with raised.
	budget string
	raised *overseer.Budget
	// patience is how the job's reads wait out a slow server
	// (demoPatience).
	patience ops.Patience
}

// How a demo waits out a slow server: on a busy machine the embedded
// server and its worker answer late, not never, so a call that timed out
// is made again, each within demoCallTimeout, until demoWait has passed
// (the demo's --deadline may end it sooner); the demo says so once per
// job, and fails only after that, saying how long it waited.
const (
	demoCallTimeout = 10 * time.Second
	demoWait        = 2 * time.Minute
)

// demoPatience is the patience of a demo job's reads, saying on out, once,
// that the server is slow to answer the job.
func demoPatience(out io.Writer) ops.Patience {
	return ops.Patience{CallTimeout: demoCallTimeout, Wait: demoWait, Say: &onceWriter{w: out}}
}

// onceWriter passes on its first write and drops the others.
type onceWriter struct {
	w    io.Writer
	done bool
}

func (o *onceWriter) Write(p []byte) (int, error) {
	if o.done {
		return len(p), nil
	}
	o.done = true
	return o.w.Write(p)
}

// describePatiently describes the job's latest run, waiting out a slow
// server as p says.
func describePatiently(ctx context.Context, c client.Client, id string, p ops.Patience) (*client.WorkflowExecutionDescription, error) {
	return ops.Patiently(ctx, id, p, func(ctx context.Context) (*client.WorkflowExecutionDescription, error) {
		d, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return nil, ops.JobError(id, err)
		}
		return d, nil
	})
}

// The demo's budgeted job: a healthy agent loop whose token budget is
// reached at its third turn (its model calls report 2,150, 2,550, 2,950
// … tokens), so that it stops at a budget's gate and the reviewer
// continues it with a raised budget.
const demoBudget = `{"tokens": 6000}`

var demoRaisedBudget = overseer.Budget{Tokens: 20_000}

// Run implements Command.
func (*Demo) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("demo", out)
	agentWork := fs.Duration("agent-work", 150*time.Millisecond, "how long each simulated phase agent works")
	reviewDelay := fs.Duration("review-delay", time.Second, "how long the demo reviewer looks at a paused job before resuming it")
	retryDelay := fs.Duration("retry-delay", 2*time.Second, "how long a job waits before re-running a failed phase")
	deadline := fs.Duration("deadline", 5*time.Minute, "give up after this long")
	traces := fs.String("traces", "", "run these recorded agent runs as jobs instead of the scenarios (any format eval reads), e.g. examples/traces/mini-swe-agent")
	format := fs.String("format", "", "format of --traces (default: detected)")
	speed := fs.Float64("speed", 200, "with --traces: a recorded phase takes its recorded time divided by this")
	asPhases := asPhasesFlag(fs)
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if !(*speed > 0) {
		return fmt.Errorf("%w: --speed %v: give a factor above 0, e.g. 200", ErrUsage, *speed)
	}
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()
	if *traces != "" {
		return runTraceDemo(ctx, out, traceDemoOptions{traces: *traces, format: *format, speed: *speed, reviewDelay: *reviewDelay, asPhases: *asPhases})
	}

	fmt.Fprintf(out, "temporal-overseer demo: four Coro-style jobs and five agent loops (one with a token budget) in manage mode, judged by the %s.\n", worker.JudgeConfig{})
	printDemoPolicy(out)
	c, taskQueue, stop, err := startDemoServer(ctx, out, worker.Config{AgentWork: *agentWork}, nil)
	if err != nil {
		return err
	}
	defer stop()

	stamp := time.Now().Format("150405")
	var jobs []*demoJob
	for _, sc := range activities.Scenarios {
		j := &demoJob{scenario: sc, label: string(sc), id: fmt.Sprintf("demo-%s-%s", sc, stamp), patience: demoPatience(out)}
		j.run, err = startJob(ctx, c, taskQueue, JobSpec{
			ID: j.id, Objective: "Add CSV export to the reports page", Scenario: string(sc),
			Mode: string(overseer.ModeManage), RetryDelay: Duration(*retryDelay),
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "started  %-22s scenario %s\n", j.id, sc)
		jobs = append(jobs, j)
	}
	for _, sc := range activities.LoopScenarios {
		j := &demoJob{loop: sc, label: "loop/" + string(sc), id: fmt.Sprintf("demo-agent-loop-%s-%s", sc, stamp), patience: demoPatience(out)}
		j.run, err = startJob(ctx, c, taskQueue, JobSpec{
			ID: j.id, Objective: "Add CSV export to the reports page", Loop: string(sc), Mode: string(overseer.ModeManage),
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "started  %-22s agent loop (%s), scenario %s\n", j.id, workflows.AgentLoopWorkflowName, sc)
		jobs = append(jobs, j)
	}
	budgeted := &demoJob{loop: activities.LoopHealthy, label: "budget", id: "demo-agent-loop-budget-" + stamp, budget: demoBudget, raised: &demoRaisedBudget,
		patience: demoPatience(out)}
	budgeted.run, err = startJob(ctx, c, taskQueue, JobSpec{ID: budgeted.id, Objective: "Add CSV export to the reports page",
		Loop: string(activities.LoopHealthy), Mode: string(overseer.ModeManage), Budget: budgeted.budget})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "started  %-22s agent loop (%s), scenario %s, budget %s\n", budgeted.id, workflows.AgentLoopWorkflowName, activities.LoopHealthy, budgeted.budget)
	jobs = append(jobs, budgeted)
	fmt.Fprintln(out)

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !allDone(jobs) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo did not finish within %s: %w", *deadline, ctx.Err())
		case <-tick.C:
		}
		for _, j := range jobs {
			if err := j.poll(ctx, c, out, *reviewDelay); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(out)
	writeSummary(out, jobs)
	fmt.Fprintln(out, falsePausesLine(jobs))
	for _, j := range jobs {
		if want := j.expectedOutcome(); j.outcome != want {
			return fmt.Errorf("job %s ended %s, not %s", j.id, j.outcome, want)
		}
		if j.budget != "" && !raisedAtABudgetGate(j.status) {
			return fmt.Errorf("job %s never stopped at its budget (%s): its gates are %v", j.id, j.budget, j.status.Gates)
		}
	}
	fmt.Fprintln(out, "\nAll Coro jobs delivered; the healthy and the blocked agent loops are done, the failing and the looping one gave up "+
		"(their simulated agent ignores a note); the budgeted loop stopped at its budget and finished with a raised one. "+
		"The dev server keeps no data; run `overseer dev` for one that stays up.")
	return nil
}

// raisedAtABudgetGate says a gate of the job's budget was continued with
// a raised budget.
func raisedAtABudgetGate(s overseer.Status) bool {
	for _, g := range s.Gates {
		if g.Kind == overseer.GateKindBudget && g.RaisedBudget != nil {
			return true
		}
	}
	return false
}

// expectedOutcome is how the job should end.
func (j *demoJob) expectedOutcome() string {
	if j.loop != "" {
		return loopOutcomes[j.loop]
	}
	return "delivered"
}

func allDone(jobs []*demoJob) bool {
	for _, j := range jobs {
		if !j.done {
			return false
		}
	}
	return true
}

// poll prints the job's new assessments, resumes it when paused, and
// notices when it finished. Its reads wait out a slow server
// (j.patience).
func (j *demoJob) poll(ctx context.Context, c client.Client, out io.Writer, reviewDelay time.Duration) error {
	if j.done {
		return nil
	}
	s, err := ops.StatusPatiently(ctx, c, j.id, "", j.patience)
	if err != nil {
		return err
	}
	j.status = s
	for _, a := range s.Assessments {
		if a.Seq <= j.seen {
			continue
		}
		j.seen = a.Seq
		j.latency += a.Latency
		j.latN++
		fmt.Fprintf(out, "%-10s %s\n", j.label, describeAssessment(a))
	}
	if s.Paused && s.Counters.Pauses > j.resumed {
		j.resumed = s.Counters.Pauses
		var evidence []string
		if g := openGate(s); g != nil {
			evidence = g.Evidence
		}
		writePause(out, j.label, 10, s.Phase, evidence, s.PauseReason)
		if s.PendingNote != "" {
			fmt.Fprintf(out, "%-10s    note for the next %s: %s\n", j.label, s.Step(), s.PendingNote)
		}
		select {
		case <-time.After(reviewDelay): // the reviewer reads the reason
		case <-ctx.Done():
			return ctx.Err()
		}
		note := reviewerNotes[j.scenario]
		if j.loop != "" {
			note = loopReviewerNotes[j.loop]
		}
		req := overseer.ResumeRequest{By: "demo-reviewer", Note: note, Gate: s.GateID}
		if g := openGate(s); g != nil && g.Kind == overseer.GateKindBudget && j.raised != nil {
			// The job reached its budget: the reviewer raises it.
			req.Note, req.Budget = "Worth finishing: the budget is raised.", j.raised
			note = fmt.Sprintf("%s (budget raised to %s)", req.Note, *j.raised)
		} else if j.scenario == activities.OnTrack || j.loop == activities.LoopHealthy {
			// "Looks fine": the reviewer calls the pause a false alarm. The
			// other notes redirect their jobs: needed, by the rule.
			req.Needed = new(false)
		}
		// The update waits for the worker to take it: as long as a read
		// waits out a slow server.
		rctx, cancel := context.WithTimeout(ctx, cmp.Or(j.patience.Wait, ops.DefaultPatience))
		g, err := ops.Resume(rctx, c, j.id, req)
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-10s ▶  resumed by demo-reviewer: %q\n", j.label, note)
		if jm := g.Judgement(); jm != "" {
			fmt.Fprintf(out, "%-10s    %s\n", j.label, jm)
		}
	}
	desc, err := describePatiently(ctx, c, j.id, j.patience)
	if err != nil {
		return err
	}
	if desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	// The outcome of either result (workflows.JobResult,
	// workflows.AgentLoopResult).
	var res struct {
		Outcome string `json:"outcome"`
	}
	gctx, cancel := context.WithTimeout(ctx, cmp.Or(j.patience.Wait, ops.DefaultPatience))
	defer cancel()
	if err := j.run.Get(gctx, &res); err != nil {
		j.outcome = "failed (" + err.Error() + ")"
	} else {
		j.outcome = res.Outcome
	}
	// One last status read: the final assessment is recorded before the
	// run completes.
	if s, err := ops.StatusPatiently(ctx, c, j.id, "", j.patience); err == nil {
		j.status = s
		for _, a := range s.Assessments {
			if a.Seq > j.seen {
				j.seen = a.Seq
				j.latency += a.Latency
				j.latN++
				fmt.Fprintf(out, "%-10s %s\n", j.label, describeAssessment(a))
			}
		}
	}
	j.done = true
	fmt.Fprintf(out, "%-10s ■  finished: %s — %s\n", j.label, j.outcome, j.status.Label())
	return nil
}

func describeAssessment(a overseer.Assessment) string {
	if a.Answers == nil {
		return fmt.Sprintf("%-9s judge error: %s", a.Phase, a.Error)
	}
	band := a.Verdict.Band
	if a.Verdict.Flagged {
		// A flag pauses a managed job: it never reads as On track.
		band = overseer.PausedBand(band)
	}
	line := fmt.Sprintf("%-9s %-13s P(on objective) %-4s  basis: %s", a.Phase, band, formatP(*a.Answers), basisName(a.Answers.Basis))
	if s := overseer.StandingOf(a.Answers.Basis); s != "" {
		line += " (" + s + ")"
	}
	if a.Verdict.Flagged {
		why := a.Verdict.Reason
		if len(a.Evidence) > 0 {
			why = a.Evidence[0]
		}
		line += "  flagged: " + why
	}
	if a.Answers.Breach != overseer.BreachNone {
		line += fmt.Sprintf("  breach %s (%.2f)", a.Answers.Breach, a.Answers.BreachConfidence)
	}
	return line
}

func writeSummary(out io.Writer, jobs []*demoJob) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tOUTCOME\tFINAL STATUS\tBASIS\tPAUSES\tASSESSMENTS\tFLAGGED\tJUDGE LATENCY (AVG)")
	for _, j := range jobs {
		avg := time.Duration(0)
		if j.latN > 0 {
			avg = j.latency / time.Duration(j.latN)
		}
		k := j.status.Counters
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", j.id, j.outcome, j.status.Label(), basisName(j.status.Basis), k.Pauses, k.Assessments, k.Flags, avg.Round(time.Microsecond))
	}
	tw.Flush()
}

// falsePausesLine says how many of the jobs' pauses were false ones: a
// continue judged not needed on a job that then delivered, as export,
// train and the learn round count them.
func falsePausesLine(jobs []*demoJob) string {
	pauses, falses, budgets := 0, 0, 0
	for _, j := range jobs {
		rec := eval.Record{Outcome: eval.OutcomeFailed}
		if j.outcome == "delivered" || j.outcome == "done" {
			rec.Outcome = eval.OutcomeSucceeded
		}
		for _, g := range j.status.Gates {
			if g.Needed != nil {
				rec.Gates = append(rec.Gates, eval.GateDecision{Action: string(g.Action), Needed: g.Needed, Kind: g.Kind})
			}
		}
		pauses, falses = pauses+len(rec.JudgeGates()), falses+rec.FalsePauses()
		budgets += len(rec.Gates) - len(rec.JudgeGates())
	}
	// A budget's stop is the team's bound, not the judge's pause: said
	// apart, as learn and eval count it.
	apart := ""
	if budgets > 0 {
		apart = fmt.Sprintf(" Apart from them, %d %s at a budget.", budgets, map[bool]string{true: "stop", false: "stops"}[budgets == 1])
	}
	switch {
	case pauses == 0:
		return "False pauses: none; the judge paused no job." + apart
	case falses == 0:
		return fmt.Sprintf("False pauses: none; each of the judge's %d pauses was judged needed (resumed with a note that redirected its job).", pauses) + apart
	}
	return fmt.Sprintf("False pauses: %d of the judge's %d pauses, continued and judged not needed on jobs that then delivered.", falses, pauses) + apart
}

// printDemoPolicy prints the line both demos start with: the default
// policy and what its pause threshold stands for.
func printDemoPolicy(out io.Writer) {
	policy := overseer.DefaultLearnedPolicy()
	fmt.Fprintf(out, "Policy: %s; Off track (pause) at or below P %.3f, On track from %.3f; %s.\n",
		policy.Name, policy.PauseAtOrBelow, policy.OnTrackAt, policy.Guarantee())
	if l := policy.Loop; l != nil {
		fmt.Fprintf(out, "Agent loops: %s; Off track (pause) at or below P %.3f, On track from %.3f; %s.\n",
			l.Name, l.PauseAtOrBelow, l.OnTrackAt, l.Guarantee())
	}
}

// startDemoServer starts the embedded dev server and a manage-mode worker
// with cfg on the demo's task queue, and says where they are; stop stops
// both.
func startDemoServer(ctx context.Context, out io.Writer, cfg worker.Config, loops *workflows.RecordedLoopActivities) (c client.Client, taskQueue string, stop func(), err error) {
	fmt.Fprintln(out, "Starting the embedded Temporal dev server…")
	quiet := zap.NewNop()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard, Logger: worker.SDKLogger(quiet)})
	if err != nil {
		return nil, "", nil, err
	}
	taskQueue = "overseer-demo"
	cfg.TaskQueue, cfg.Mode, cfg.Logger = taskQueue, overseer.ModeManage, quiet
	w, err := worker.New(srv.Client(), cfg)
	if err != nil {
		srv.Stop()
		return nil, "", nil, err
	}
	if loops != nil {
		registerRecordedLoops(w, loops)
	}
	if err := w.Start(); err != nil {
		srv.Stop()
		return nil, "", nil, fmt.Errorf("start worker: %w", err)
	}
	fmt.Fprintf(out, "Temporal %s, namespace %s, task queue %s\n\n", srv.FrontendHostPort(), srv.Namespace(), taskQueue)
	return srv.Client(), taskQueue, func() { w.Stop(); srv.Stop() }, nil
}

// writePause prints a pause as the demos show it, in columns of width
// under label: what happened first, in plain words, then the rule that
// fired (a gate recorded without evidence says only its reason).
func writePause(out io.Writer, label string, width int, phase string, evidence []string, reason string) {
	fmt.Fprintf(out, "%-*s ⏸  PAUSED after %s: %s\n", width, label, phase, gateWhy(evidence, reason))
	if len(evidence) > 0 {
		fmt.Fprintf(out, "%-*s    rule: %s\n", width, label, reason)
	}
}
