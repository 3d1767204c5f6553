package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// traceDemoOptions configure the demo on recorded runs.
type traceDemoOptions struct {
	traces, format string
	speed          float64
	reviewDelay    time.Duration
	asPhases       bool
}

// traceJob is one recorded job of the demo.
type traceJob struct {
	rec     eval.Record
	id      string
	run     client.WorkflowRun
	seen    int
	handled map[string]bool // gates the reviewer decided
	aborted bool
	done    bool
	outcome eval.Outcome
	status  overseer.Status
	// patience is how the job's reads wait out a slow server
	// (demoPatience).
	patience ops.Patience
}

// startRecordedJobs starts one job per recorded run on the task queue, in
// manage mode, with the run's task family in the memo, and returns them:
// an agent's run as the loop a team writes (workflows.RecordedLoop, its
// calls answered by loops, registered with registerRecordedLoops), any
// other as a recorded job of phases.
func startRecordedJobs(ctx context.Context, c client.Client, taskQueue string, recs []eval.Record, speed float64, stamp string,
	loops *workflows.RecordedLoopActivities) ([]*traceJob, error) {
	var jobs []*traceJob
	for _, rec := range recs {
		j := &traceJob{rec: rec, id: fmt.Sprintf("recorded-%s-%s", rec.ID, stamp), handled: map[string]bool{}}
		opts := client.StartWorkflowOptions{ID: j.id, TaskQueue: taskQueue, Memo: map[string]any{ops.TaskFamilyMemoKey: rec.FamilyName()}}
		var err error
		if eval.ShapeOfRecord(rec) == overseer.ShapeAgentLoop {
			loop := eval.LoopInput(rec)
			loops.Add(j.id, loop)
			j.run, err = c.ExecuteWorkflow(ctx, opts, workflows.RecordedLoopWorkflowName, loop)
		} else {
			in := eval.RecordedJob(rec)
			in.Speed = speed
			j.run, err = c.ExecuteWorkflow(ctx, opts, workflows.RecordedJobWorkflowName, in)
		}
		if err != nil {
			return nil, fmt.Errorf("start the recorded job of %s: %w", rec.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// registerRecordedLoops registers the recorded loop and the activities
// that answer its calls from loops on w.
func registerRecordedLoops(w sdkworker.Worker, loops *workflows.RecordedLoopActivities) {
	workflows.RegisterRecordedLoop(w)
	loops.Register(w)
}

// runTraceDemo runs each recorded run as a recorded job in manage mode on an
// embedded dev server, prints every verdict with its basis as the jobs go,
// and plays the reviewer at each gate as the recording ended: continue a
// run that succeeded, abort one that failed.
func runTraceDemo(ctx context.Context, out io.Writer, o traceDemoOptions) error {
	recs, src, err := eval.LoadSource(o.traces, o.format)
	if err != nil {
		return err
	}
	recs = recast(recs, o.asPhases)
	fmt.Fprintf(out, "temporal-overseer demo: %d recorded real agent runs replayed as %s in manage mode, judged live by the %s.\n",
		len(recs), recordedShape(recs), worker.JudgeConfig{})
	fmt.Fprintln(out, src)
	if note := src.SkippedNote(); note != "" {
		fmt.Fprintln(out, note)
	}
	printDemoPolicy(out)
	if eval.ShapeOfRecords(recs) != overseer.ShapeAgentLoop {
		fmt.Fprintf(out, "Each recorded phase takes its recorded time / %g.", o.speed)
	} else {
		fmt.Fprint(out, "Each call answers as soon as it is asked.")
	}
	fmt.Fprintln(out, " At a gate the demo reviewer decides as the recording ended: continue a run that succeeded, abort one that failed. A process note cannot change a recording.")
	loops := &workflows.RecordedLoopActivities{}
	c, taskQueue, stop, err := startDemoServer(ctx, out, worker.Config{}, loops)
	if err != nil {
		return err
	}
	defer stop()

	jobs, err := startRecordedJobs(ctx, c, taskQueue, recs, o.speed, time.Now().Format("150405"), loops)
	if err != nil {
		return err
	}
	width := 0
	for _, j := range jobs {
		j.patience = demoPatience(out)
		width = max(width, len(j.rec.ID))
		fmt.Fprintf(out, "started  %s (recorded: %s, %d steps)\n", j.id, j.rec.Outcome, j.rec.NumSteps())
	}
	fmt.Fprintln(out)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		open := 0
		for _, j := range jobs {
			if err := j.poll(ctx, c, out, width, o.reviewDelay); err != nil {
				return err
			}
			if !j.done {
				open++
			}
		}
		if open == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo did not finish in time: %w", ctx.Err())
		case <-tick.C:
		}
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tRECORDED\tJOB ENDED\tFINAL STATUS\tBASIS\tPAUSES\tASSESSMENTS\tFLAGGED")
	var bad []string
	for _, j := range jobs {
		k := j.status.Counters
		ended := string(j.outcome)
		if j.aborted {
			ended += " (aborted at a gate)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", j.rec.ID, j.rec.Outcome, ended, j.status.Label(), basisName(j.status.Basis), k.Pauses, k.Assessments, k.Flags)
		if want := expectedOutcome(j.rec.Outcome, j.aborted); j.outcome != want {
			bad = append(bad, fmt.Sprintf("%s ended %s, recorded %s", j.id, j.outcome, j.rec.Outcome))
		}
	}
	tw.Flush()
	if len(bad) > 0 {
		return fmt.Errorf("not every job ended as recorded: %s", strings.Join(bad, "; "))
	}
	fmt.Fprintln(out, "\nEvery job ended as its recording did (a job aborted at a gate counts as failed). The dev server keeps no data; run `overseer dev --traces DIR` for one that stays up.")
	return nil
}

// recordedShape says how recorded runs are started: agents' runs as the
// loop a team writes, or as jobs of phases.
func recordedShape(recs []eval.Record) string {
	if eval.ShapeOfRecords(recs) == overseer.ShapeAgentLoop {
		return "the agent loop a team writes on Temporal (a model-call activity, then the tool activity it asked for; --as-phases: jobs of phases)"
	}
	return "jobs of phases"
}

// expectedOutcome is how a recorded job must end: as recorded, and failed
// when a reviewer aborted it.
func expectedOutcome(recorded eval.Outcome, aborted bool) eval.Outcome {
	if aborted || recorded.Failed() {
		return eval.OutcomeFailed
	}
	return eval.OutcomeSucceeded
}

// poll prints the job's new verdicts, decides its open gates, and notices
// when it closed.
func (j *traceJob) poll(ctx context.Context, c client.Client, out io.Writer, width int, reviewDelay time.Duration) error {
	if j.done {
		return nil
	}
	// A busy worker answers the query late: it is asked again, and the
	// demo says so.
	s, err := ops.StatusPatiently(ctx, c, j.id, "", j.patience)
	if err != nil {
		return err
	}
	j.status = s
	j.print(out, width)
	for _, g := range ops.OpenGates(s) {
		if j.handled[g.ID] {
			continue
		}
		j.handled[g.ID] = true
		writePause(out, j.rec.ID, width, g.Phase, g.Evidence, g.Reason)
		select {
		case <-time.After(reviewDelay): // the reviewer reads the reason
		case <-ctx.Done():
			return ctx.Err()
		}
		// The recording says how the run ended whatever the reviewer
		// writes: a pause on a run that succeeded was not needed.
		req := overseer.ResumeRequest{By: "demo-reviewer", Gate: g.ID, Note: "The recording succeeded: carry on.", Needed: new(false)}
		if j.rec.Outcome.Failed() {
			req.Action, req.Note, req.Needed = overseer.ActionAbort, "The recording failed: stop here.", nil
		}
		rctx, cancel := context.WithTimeout(ctx, cmp.Or(j.patience.Wait, ops.DefaultPatience))
		_, err := ops.Resume(rctx, c, j.id, req)
		cancel()
		if err != nil {
			return err
		}
		j.aborted = j.aborted || req.Action == overseer.ActionAbort
		verb := "▶  continued"
		if req.Action == overseer.ActionAbort {
			verb = "■  aborted"
		}
		fmt.Fprintf(out, "%-*s %s by demo-reviewer: %q\n", width, j.rec.ID, verb, req.Note)
	}
	desc, err := describePatiently(ctx, c, j.id, j.patience)
	if err != nil {
		return err
	}
	st := desc.RawResponse.GetWorkflowExecutionInfo().GetStatus()
	if st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil
	}
	j.outcome = eval.OutcomeFailed
	if st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		j.outcome = eval.OutcomeSucceeded
	}
	// One last status read: the final assessment is recorded before the
	// run completes.
	if s, err := ops.StatusPatiently(ctx, c, j.id, "", j.patience); err == nil {
		j.status = s
		j.print(out, width)
	}
	j.done = true
	fmt.Fprintf(out, "%-*s ■  finished: %s (recorded: %s) — %s\n", width, j.rec.ID, j.outcome, j.rec.Outcome, j.status.Label())
	return nil
}

func (j *traceJob) print(out io.Writer, width int) {
	for _, a := range j.status.Assessments {
		if a.Seq <= j.seen {
			continue
		}
		j.seen = a.Seq
		fmt.Fprintf(out, "%-*s %s\n", width, j.rec.ID, describeAssessment(a))
	}
}
