package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
)

// JobWorkflowName is the registered name of Job.
const JobWorkflowName = "CoroJob"

// JobInput starts a job.
type JobInput struct {
	Objective string              `json:"objective"`
	Scenario  activities.Scenario `json:"scenario"`
	// Phases is the phase order. If not set, activities.DefaultPhases.
	// Failed checks loop back to code when it is in the list.
	Phases []string `json:"phases,omitempty"`
	// MaxLoops bounds test/review failures looping back to code. If not
	// set, 8.
	MaxLoops int `json:"max_loops,omitempty"`
	// MaxPhaseFailures bounds consecutive failures of one phase before the
	// job fails. If not set, 5.
	MaxPhaseFailures int `json:"max_phase_failures,omitempty"`
	// RetryDelay is the wait before re-running a failed phase. If not set,
	// 10 seconds.
	RetryDelay time.Duration `json:"retry_delay,omitempty"`
	// PhaseTimeout bounds one phase run. If not set, 1 hour.
	PhaseTimeout time.Duration `json:"phase_timeout,omitempty"`
	// HeartbeatTimeout fails a phase run whose agent has sent no heartbeat
	// for this long, and the job runs the phase again after RetryDelay, as
	// after any failure. Without it, a phase whose worker died, or whose
	// task the server recorded as started but no worker received (a poll
	// that timed out under load), would hold the job for all of
	// PhaseTimeout. If not set, 1 minute; the agents must heartbeat more
	// often (activities.Agents does, every third of it).
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// ContinueAsNewAfter continues the job as new after this many phase
	// runs in one run. If not set, only when the server suggests it.
	ContinueAsNewAfter int `json:"continue_as_new_after,omitempty"`
	// State is set by the job itself when it continues as new.
	State *JobState `json:"state,omitempty"`
}

// JobState is the job's progress, carried across continue-as-new.
type JobState struct {
	Next  string         `json:"next"`
	Lane  string         `json:"lane"`
	Loops int            `json:"loops"`
	Runs  map[string]int `json:"runs"`
	Noted bool           `json:"noted,omitempty"`
	// Log is the latest phase runs, for the result.
	Log []string `json:"log"`
}

// JobResult is what a finished job returns.
type JobResult struct {
	Outcome    string   `json:"outcome"`
	Loops      int      `json:"loops"`
	Lane       string   `json:"lane"`
	Evaluation string   `json:"evaluation"`
	Log        []string `json:"log"`
}

const maxLog = 40

func (in *JobInput) defaults() error {
	if in.Objective == "" {
		return errors.New("job input: objective is required")
	}
	if _, err := activities.ParseScenario(string(in.Scenario)); err != nil {
		return fmt.Errorf("job input: %w", err)
	}
	if len(in.Phases) == 0 {
		in.Phases = activities.DefaultPhases
	}
	for _, p := range in.Phases {
		if !slices.Contains(activities.DefaultPhases, p) {
			return fmt.Errorf("job input: unknown phase %q: use phases from %v", p, activities.DefaultPhases)
		}
	}
	if in.MaxLoops == 0 {
		in.MaxLoops = 8
	}
	if in.MaxPhaseFailures == 0 {
		in.MaxPhaseFailures = 5
	}
	if in.RetryDelay == 0 {
		in.RetryDelay = 10 * time.Second
	}
	if in.PhaseTimeout == 0 {
		in.PhaseTimeout = time.Hour
	}
	if in.HeartbeatTimeout == 0 {
		in.HeartbeatTimeout = time.Minute
	}
	if in.State == nil {
		in.State = &JobState{Next: in.Phases[0], Lane: "feature", Runs: map[string]int{}}
	}
	return nil
}

// Job runs the reference job. It knows nothing of the overseer beyond the
// optional trajectory calls; the plugin oversees its phases.
func Job(ctx workflow.Context, in JobInput) (JobResult, error) {
	if err := in.defaults(); err != nil {
		return JobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidJobInput", nil)
	}
	st := in.State
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: in.PhaseTimeout,
		HeartbeatTimeout:    in.HeartbeatTimeout,
		// The workflow decides what a failed phase means; no blind retries.
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	overseer.SetObjective(ctx, in.Objective)
	overseer.SetLane(ctx, st.Lane)

	runsThisRun, failures := 0, 0
	for {
		if shouldContinueAsNew(ctx, in, runsThisRun) {
			next := in
			next.State = st
			return JobResult{}, workflow.NewContinueAsNewError(ctx, JobWorkflowName, next)
		}
		phase := st.Next
		st.Runs[phase]++
		runsThisRun++
		pin := &activities.PhaseInput{Objective: in.Objective, Scenario: in.Scenario, Phase: phase, Lane: st.Lane, Run: st.Runs[phase], Noted: st.Noted}
		var out activities.PhaseOutput
		err := workflow.ExecuteActivity(ctx, activities.ActivityName(phase), pin).Get(ctx, &out)
		if pin.Note != nil {
			st.Noted = true
		}
		if err != nil {
			st.Log = appendLog(st.Log, fmt.Sprintf("%s#%d failed", phase, st.Runs[phase]))
			failures++
			if failures >= in.MaxPhaseFailures || temporal.IsCanceledError(err) {
				return result("failed", st), fmt.Errorf("phase %s failed %d times: %w", phase, failures, err)
			}
			if err := workflow.Sleep(ctx, in.RetryDelay); err != nil {
				return result("cancelled", st), err
			}
			continue
		}
		failures = 0
		st.Log = appendLog(st.Log, fmt.Sprintf("%s#%d %s", phase, st.Runs[phase], passWord(out.Passed)))
		for _, id := range sortedKeys(out.WorkItems) {
			overseer.SetWorkItem(ctx, id, out.WorkItems[id])
		}
		if out.NextLane != "" && out.NextLane != st.Lane {
			st.Lane = out.NextLane
			overseer.SetLane(ctx, st.Lane)
		}
		next, done, err := transition(in.Phases, phase, out.Passed, st, in.MaxLoops)
		if err != nil {
			return result("failed", st), err
		}
		if done {
			r := result("delivered", st)
			r.Evaluation = out.Summary
			return r, nil
		}
		st.Next = next
	}
}

// transition picks the next phase: failed checks loop back to code (or
// re-run the phase when there is no code phase); the last phase ends the job.
func transition(phases []string, phase string, passed bool, st *JobState, maxLoops int) (next string, done bool, err error) {
	if !passed {
		st.Loops++
		if st.Loops > maxLoops {
			return "", false, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("gave up after %d loops back to code", maxLoops), "TooManyLoops", nil)
		}
		if slices.Contains(phases, activities.PhaseCode) {
			return activities.PhaseCode, false, nil
		}
		return phase, false, nil
	}
	i := slices.Index(phases, phase)
	if i < 0 {
		return "", false, fmt.Errorf("unknown phase %q", phase)
	}
	if i == len(phases)-1 {
		return "", true, nil
	}
	return phases[i+1], false, nil
}

func shouldContinueAsNew(ctx workflow.Context, in JobInput, runs int) bool {
	if runs == 0 {
		return false
	}
	if in.ContinueAsNewAfter > 0 && runs >= in.ContinueAsNewAfter {
		return true
	}
	return workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

func result(outcome string, st *JobState) JobResult {
	return JobResult{Outcome: outcome, Loops: st.Loops, Lane: st.Lane, Log: st.Log}
}

func appendLog(log []string, entry string) []string {
	log = append(log, entry)
	if len(log) > maxLog {
		log = log[len(log)-maxLog:]
	}
	return log
}

func passWord(passed bool) string {
	if passed {
		return "ok"
	}
	return "failed checks"
}

// Register registers the job workflow under JobWorkflowName on a worker,
// a replayer or the SDK's test environment.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Job, workflow.RegisterOptions{Name: JobWorkflowName})
}
