package overseer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// answer builds a valid judge response.
func answer(onObjective float64, breach string, confidence, severity float64) jev.Step {
	return jev.Step{Response: &jev.Response{
		ModelVersion: "scripted-1",
		Usage:        jev.Usage{InputTokens: 100, OutputTokens: 10},
		Answers: map[string]jev.Answer{
			overseer.QuestionBreach:   {Type: jev.Choice, Choice: breach, Confidence: jev.Prob(confidence)},
			overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(onObjective)},
			overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(severity), Confidence: jev.Prob(0.7)},
			overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
		},
	}}
}

func onTrack() jev.Step { return answer(0.9, overseer.BreachNone, 0.9, 0.2) }

// phaseInput opts in to the process note.
type phaseInput struct {
	Phase string
	Note  *overseer.Note
}

func (p *phaseInput) SetProcessNote(n overseer.Note) { p.Note = &n }

type phaseResult struct {
	overseer.ReportCarrier
	Phase string
}

// phaseCall is what a phase activity saw.
type phaseCall struct {
	Phase      string
	InputNote  *overseer.Note
	ContextNte *overseer.Note
}

type recorder struct {
	mu    sync.Mutex
	calls []phaseCall
	// started is closed by the phase named in startedPhase.
	startedPhase string
	started      chan struct{}
}

func (r *recorder) phase(ctx context.Context, in *phaseInput) (phaseResult, error) {
	c := phaseCall{Phase: in.Phase, InputNote: in.Note}
	if n, ok := overseer.ProcessNote(ctx); ok {
		c.ContextNte = &n
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	if r.started != nil && in.Phase == r.startedPhase {
		close(r.started)
		r.started = nil
	}
	r.mu.Unlock()
	return phaseResult{Phase: in.Phase, ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 3, CostUSD: 0.5}}}, nil
}

func (r *recorder) Calls() []phaseCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]phaseCall(nil), r.calls...)
}

// phasesWorkflow runs the named phases in order.
func phasesWorkflow(ctx workflow.Context, phases []string) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	overseer.SetObjective(ctx, "ship the export feature")
	overseer.SetLane(ctx, "feature")
	var done []string
	for _, p := range phases {
		var res phaseResult
		if err := workflow.ExecuteActivity(ctx, p, &phaseInput{Phase: p}).Get(ctx, &res); err != nil {
			return done, err
		}
		done = append(done, res.Phase)
	}
	return done, nil
}

var testPhases = []string{"spec", "code", "test"}

type harness struct {
	env   *testsuite.TestWorkflowEnvironment
	rec   *recorder
	judge *jev.Scripted
}

// newHarness runs phasesWorkflow under the plugin with opts; a scripted
// judge answers with steps unless opts names another. A judge that is not
// pure answers in a local activity unless opts places it, so that its
// scripted steps go to the boundaries in order (in observe mode the
// automatic placement, a regular activity, lets assessments overlap and
// finish in any order): newAutoHarness keeps the automatic placement.
func newHarness(t *testing.T, opts overseer.Options, steps ...jev.Step) *harness {
	t.Helper()
	if _, pure := opts.Judge.(overseer.PureJudge); !pure && opts.Placement == overseer.PlacementAuto && opts.AssessTaskQueue == "" {
		opts.Placement = overseer.PlacementLocalActivity
	}
	return newAutoHarness(t, opts, steps...)
}

// newAutoHarness is newHarness with the placement opts resolves to.
func newAutoHarness(t *testing.T, opts overseer.Options, steps ...jev.Step) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(steps...)
	if opts.Judge == nil {
		opts.Judge = judge
	}
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	rec := &recorder{}
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: p})
	}
	return &harness{env: env, rec: rec, judge: judge}
}

func (h *harness) status(t *testing.T) overseer.Status {
	t.Helper()
	return envStatus(t, h.env)
}

// envStatus queries the run's overseer status in the test environment.
func envStatus(t *testing.T, env *testsuite.TestWorkflowEnvironment) overseer.Status {
	t.Helper()
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st
}

// updateResult captures an update's outcome in the test environment.
type updateResult struct {
	rejected, failed error
	gate             overseer.Gate
	accepted, done   bool
}

func (h *harness) update(req overseer.ResumeRequest) *updateResult { return h.updateRaw(req) }

// updateRaw sends any argument, e.g. a json.RawMessage the SDK sends as is.
func (h *harness) updateRaw(req any) *updateResult {
	res := &updateResult{}
	h.env.UpdateWorkflow(overseer.ResumeName, "", &testsuite.TestUpdateCallback{
		OnAccept: func() { res.accepted = true },
		OnReject: func(err error) { res.rejected = err },
		OnComplete: func(v any, err error) {
			res.done, res.failed = true, err
			if g, ok := v.(overseer.Gate); ok {
				res.gate = g
			}
		},
	}, req)
	return res
}
