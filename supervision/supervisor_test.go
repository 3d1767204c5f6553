package supervision_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/supervision"
)

var scope = supervision.Scope{UserID: "u1", SessionID: "s1", RunID: "r1"}

// probs are the default answers: an idle worker whose job looks complete.
func probs(over map[string]float64) map[string]float64 {
	p := map[string]float64{
		supervision.CheckNeedsHuman: 0.05, supervision.CheckAgentsMDDrift: 0.05, supervision.CheckMeaningfulProgress: 0.9,
		supervision.CheckWorkerStuck: 0.05, supervision.CheckWorkOffTrack: 0.05, supervision.CheckImplementationComplete: 0.95,
		supervision.CheckRequirementsSatisfied: 0.9, supervision.CheckReadyToFinish: 0.9, supervision.CheckTestsSufficient: 0.9,
		supervision.CheckNeedsVerification: 0.5, supervision.CheckDocumentationSufficient: 0.9,
	}
	for k, v := range over {
		p[k] = v
	}
	return p
}

// judgeFor answers every asked check from p and counts calls.
type judgeFor struct {
	mu    sync.Mutex
	p     map[string]float64
	calls int
	last  jev.Request
	edit  func(*jev.Response)
}

func (j *judgeFor) Decide(_ context.Context, req jev.Request) (*jev.Response, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	j.last = req
	resp := &jev.Response{ModelVersion: "jev-test", Usage: jev.Usage{InputTokens: 10, OutputTokens: 2}, Answers: map[string]jev.Answer{}}
	for k := range req.Questions {
		id := k[strings.Index(k, "__")+2:]
		resp.Answers[k] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(j.p[id])}
	}
	if j.edit != nil {
		j.edit(resp)
	}
	return resp, nil
}

func newSupervisor(t *testing.T, j jev.Judge, records *[]supervision.Record) *supervision.Supervisor {
	t.Helper()
	th, err := supervision.NewThresholds(0.2, 0.8)
	require.NoError(t, err)
	var mu sync.Mutex
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: j, Thresholds: th,
		OnRecord: func(r supervision.Record) {
			if records != nil {
				mu.Lock()
				*records = append(*records, r)
				mu.Unlock()
			}
		}})
	require.NoError(t, err)
	return s
}

func verifiedEvidence() *supervision.Evidence {
	return &supervision.Evidence{Revision: "rev-2", ChangedFiles: []string{"a.go"}, Verification: &supervision.Verification{
		UserID: "u1", SessionID: "s1", RunID: "r1", Revision: "rev-2", Source: "ci/go-test", Passed: true, Summary: "ok"}}
}

func idle(ev *supervision.Evidence) supervision.Snapshot {
	return supervision.Snapshot{Scope: scope, Sequence: 7, Task: "Fix the export bug", Output: "done", Evidence: ev}
}

func TestClassifyBoundsAreInclusive(t *testing.T) {
	th, err := supervision.NewThresholds(0.2, 0.8)
	require.NoError(t, err)
	for p, want := range map[float64]supervision.Truth{0: supervision.TruthNo, 0.2: supervision.TruthNo, 0.2001: supervision.TruthUnknown,
		0.5: supervision.TruthUnknown, 0.7999: supervision.TruthUnknown, 0.8: supervision.TruthYes, 1: supervision.TruthYes} {
		assert.Equal(t, want, th.Classify(p), "p=%v", p)
	}
	for _, bad := range [][2]float64{{0.8, 0.2}, {0.5, 0.5}, {-0.1, 0.8}, {0.2, 1.1}, {math.NaN(), 0.8}, {0.2, math.Inf(1)}} {
		_, err := supervision.NewThresholds(bad[0], bad[1])
		assert.ErrorIs(t, err, supervision.ErrInvalidConfig, "%v", bad)
	}
}

func TestConstruction(t *testing.T) {
	_, err := supervision.New(supervision.Options{})
	assert.ErrorIs(t, err, supervision.ErrModeRequired)
	_, err = supervision.New(supervision.Options{Mode: supervision.Mode("ENFORCE")})
	assert.ErrorIs(t, err, supervision.ErrEnforce)
	_, err = supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: &judgeFor{}})
	assert.ErrorContains(t, err, "thresholds")
	_, err = supervision.New(supervision.Options{Mode: supervision.ModeOff})
	assert.NoError(t, err)
	th := supervision.Thresholds{No: 0.2, Yes: 0.8}
	_, err = supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: &judgeFor{}, Thresholds: th, Budget: jev.MaxBudget + time.Second})
	assert.ErrorIs(t, err, supervision.ErrInvalidConfig)
	assert.ErrorIs(t, err, jev.ErrBudget, "the judge protocol's budget bounds")
	for _, e := range []error{supervision.ErrModeRequired, supervision.ErrEnforce} {
		assert.ErrorIs(t, e, supervision.ErrInvalidConfig)
	}
}

func TestCompletionReviewNeedsCurrentScopedVerification(t *testing.T) {
	mutate := func(f func(e *supervision.Evidence)) *supervision.Evidence { e := verifiedEvidence(); f(e); return e }
	for _, tc := range []struct {
		name   string
		ev     *supervision.Evidence
		advice supervision.Advice
		reason supervision.Reason
	}{
		{"valid receipt", verifiedEvidence(), supervision.AdviceReviewCompletion, supervision.ReasonCompletionReviewReady},
		{"no evidence source", nil, supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"no receipt", mutate(func(e *supervision.Evidence) { e.Verification = nil }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"failed check", mutate(func(e *supervision.Evidence) { e.Verification.Passed = false }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"stale revision", mutate(func(e *supervision.Evidence) { e.Verification.Revision = "rev-1" }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"blank revision", mutate(func(e *supervision.Evidence) { e.Revision, e.Verification.Revision = "", "" }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"blank source", mutate(func(e *supervision.Evidence) { e.Verification.Source = " " }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"other user", mutate(func(e *supervision.Evidence) { e.Verification.UserID = "u2" }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"other session", mutate(func(e *supervision.Evidence) { e.Verification.SessionID = "s2" }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"other run", mutate(func(e *supervision.Evidence) { e.Verification.RunID = "r0" }), supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification},
		{"truncated diff", mutate(func(e *supervision.Evidence) { e.Diff = strings.Repeat("x", 30001) }), supervision.AdviceManualReview, supervision.ReasonEvidenceTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSupervisor(t, &judgeFor{p: probs(nil)}, nil).ObserveSnapshot(context.Background(), idle(tc.ev))
			require.NotNil(t, d.Report, "%+v", d)
			assert.Equal(t, tc.advice, d.Report.Selected.Advice)
			assert.Equal(t, tc.reason, d.Reason)
			if tc.advice != supervision.AdviceReviewCompletion {
				for _, p := range d.Report.Proposals {
					assert.NotEqual(t, supervision.AdviceReviewCompletion, p.Advice, "no completion review proposal at all")
				}
			}
		})
	}
}

func TestVerifiedButInsufficientTests(t *testing.T) {
	d := newSupervisor(t, &judgeFor{p: probs(map[string]float64{supervision.CheckTestsSufficient: 0.1})}, nil).ObserveSnapshot(context.Background(), idle(verifiedEvidence()))
	assert.Equal(t, supervision.ReasonTestCoverageInsufficient, d.Reason)
	assert.Equal(t, supervision.StatusDecided, d.Status)
}

func TestTruncationFlagsAndAbstention(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name    string
		mutate  func(s *supervision.Snapshot)
		status  supervision.Status
		reason  supervision.Reason
		noJudge bool
	}{
		{"snapshot flag", func(s *supervision.Snapshot) { s.Truncated = true }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"long output", func(s *supervision.Snapshot) { s.Output = long(12001) }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"long status", func(s *supervision.Snapshot) { s.Evidence.RepositoryStatus = long(12001) }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"too many files", func(s *supervision.Snapshot) { s.Evidence.ChangedFiles = make([]string, 101) }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"long file name", func(s *supervision.Snapshot) { s.Evidence.ChangedFiles = []string{long(1025)} }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"33 events", func(s *supervision.Snapshot) { s.RecentEvents = make([]string, 33) }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"long receipt summary", func(s *supervision.Snapshot) { s.Evidence.Verification.Summary = long(12001) }, supervision.StatusInconclusive, supervision.ReasonEvidenceTruncated, false},
		{"output at the limit", func(s *supervision.Snapshot) { s.Output = long(12000) }, supervision.StatusDecided, supervision.ReasonCompletionReviewReady, false},
		{"blank task", func(s *supervision.Snapshot) { s.Task = "  " }, supervision.StatusInconclusive, supervision.ReasonConstraintLimitMissingTask, true},
		{"long task", func(s *supervision.Snapshot) { s.Task = long(12001) }, supervision.StatusInconclusive, supervision.ReasonConstraintLimitMissingTask, true},
		{"long instructions", func(s *supervision.Snapshot) { s.Evidence.Instructions = long(12001) }, supervision.StatusInconclusive, supervision.ReasonConstraintLimitMissingTask, true},
		{"state over 100,000", func(s *supervision.Snapshot) {
			s.Task, s.Evidence.Instructions, s.Evidence.Diff, s.Output = long(12000), long(12000), long(30000), long(12000)
			s.Evidence.RepositoryStatus = long(12000)
			s.Evidence.ChangedFiles = make([]string, 100)
			for i := range s.Evidence.ChangedFiles {
				s.Evidence.ChangedFiles[i] = long(1000)
			}
		}, supervision.StatusInconclusive, supervision.ReasonStateLimit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &judgeFor{p: probs(nil)}
			snap := idle(verifiedEvidence())
			tc.mutate(&snap)
			d := newSupervisor(t, j, nil).ObserveSnapshot(context.Background(), snap)
			assert.Equal(t, tc.status, d.Status)
			assert.Equal(t, tc.reason, d.Reason)
			if tc.noJudge {
				assert.Zero(t, j.calls, "abstain makes no model call")
				assert.Nil(t, d.Report)
				return
			}
			require.NotNil(t, d.Report)
			assert.Equal(t, tc.status == supervision.StatusInconclusive, d.Report.Truncated)
			var st struct {
				Output string   `json:"latest_worker_output"`
				Events []string `json:"recent_events"`
			}
			require.NoError(t, jsonUnmarshal(j.last.State, &st))
			assert.LessOrEqual(t, len([]rune(st.Output)), 12000+len("[earlier content omitted]\n"))
			assert.LessOrEqual(t, len(st.Events), 32)
		})
	}
}

func TestInvalidAnswersAreErrors(t *testing.T) {
	for name, edit := range map[string]func(*jev.Response){
		"NaN":         func(r *jev.Response) { setAll(r, math.NaN()) },
		"negative":    func(r *jev.Response) { setAll(r, -1) },
		"above one":   func(r *jev.Response) { setAll(r, 1.1) },
		"empty":       func(r *jev.Response) { r.Answers = nil },
		"missing key": func(r *jev.Response) { delete(r.Answers, "core.human-escalation__needs_human") },
		"extra key":   func(r *jev.Response) { r.Answers["x__y"] = jev.Answer{Probability: jev.Prob(0.5)} },
		"blank model": func(r *jev.Response) { r.ModelVersion = " " },
		"tokens":      func(r *jev.Response) { r.Usage.OutputTokens = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			var recs []supervision.Record
			d := newSupervisor(t, &judgeFor{p: probs(nil), edit: edit}, &recs).ObserveSnapshot(context.Background(), idle(verifiedEvidence()))
			assert.Equal(t, supervision.StatusError, d.Status)
			assert.Equal(t, supervision.ReasonCallOrResponseError, d.Reason)
			assert.Nil(t, d.Report, "never a verdict")
			require.Len(t, recs, 1)
			assert.Equal(t, supervision.StatusError, recs[0].Status)
		})
	}
}

func setAll(r *jev.Response, p float64) {
	for k, a := range r.Answers {
		a.Probability = jev.Prob(p)
		r.Answers[k] = a
	}
}

func TestOffSkipsWithoutReadingEvidence(t *testing.T) {
	var recs []supervision.Record
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeOff, OnRecord: func(r supervision.Record) { recs = append(recs, r) }})
	require.NoError(t, err)
	read := false
	d := s.Observe(context.Background(), func(context.Context) (supervision.Snapshot, error) { read = true; return idle(nil), nil })
	assert.False(t, read)
	assert.Equal(t, supervision.StatusSkipped, d.Status)
	assert.Equal(t, supervision.ReasonDisabled, d.Reason)
	require.Len(t, recs, 1)
	assert.Equal(t, string(supervision.ReasonDisabled), recs[0].Reason)
}

func TestBudgetTimeoutAndCancellation(t *testing.T) {
	blocking := jev.JudgeFunc(func(ctx context.Context, _ jev.Request) (*jev.Response, error) { <-ctx.Done(); return nil, ctx.Err() })
	th, _ := supervision.NewThresholds(0.2, 0.8)
	var recs []supervision.Record
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: blocking, Thresholds: th, Budget: 20 * time.Millisecond,
		OnRecord: func(r supervision.Record) { recs = append(recs, r) }})
	require.NoError(t, err)
	d := s.ObserveSnapshot(context.Background(), idle(verifiedEvidence()))
	assert.Equal(t, supervision.StatusError, d.Status)
	assert.Equal(t, supervision.ReasonTimeout, d.Reason)

	// An evidence read that exceeds the budget is a timeout, never evidence.
	d = s.Observe(context.Background(), func(ctx context.Context) (supervision.Snapshot, error) {
		<-ctx.Done()
		return supervision.Snapshot{}, ctx.Err()
	})
	assert.Equal(t, supervision.ReasonTimeout, d.Reason)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d = s.ObserveSnapshot(ctx, idle(verifiedEvidence()))
	assert.Equal(t, supervision.StatusCancelled, d.Status)
	assert.Equal(t, supervision.StatusCancelled, recs[len(recs)-1].Status)
	assert.Empty(t, recs[len(recs)-1].Recommendation)
}

func TestArbitration(t *testing.T) {
	active := func() supervision.Snapshot {
		s := idle(verifiedEvidence())
		s.WorkerActive = true
		return s
	}
	for _, tc := range []struct {
		name   string
		snap   supervision.Snapshot
		p      map[string]float64
		advice supervision.Advice
		reason supervision.Reason
		status supervision.Status
	}{
		{"needs human beats everything", active(), map[string]float64{supervision.CheckNeedsHuman: 0.9, supervision.CheckWorkerStuck: 0.99}, supervision.AdviceManualReview, supervision.ReasonNeedsHuman, supervision.StatusDecided},
		{"drift before off-track before stuck at equal probability", active(), map[string]float64{supervision.CheckAgentsMDDrift: 0.9, supervision.CheckWorkOffTrack: 0.9, supervision.CheckWorkerStuck: 0.9}, supervision.AdviceReviewDirection, supervision.ReasonAgentsMDDrift, supervision.StatusDecided},
		{"higher confidence wins the tie", active(), map[string]float64{supervision.CheckAgentsMDDrift: 0.85, supervision.CheckWorkOffTrack: 0.95}, supervision.AdviceReviewDirection, supervision.ReasonWorkOffTrack, supervision.StatusDecided},
		{"active worker continues", active(), map[string]float64{supervision.CheckImplementationComplete: 0.5}, supervision.AdviceContinue, supervision.ReasonWorkerMayContinue, supervision.StatusDecided},
		{"active: unknown health is uncertain", active(), map[string]float64{supervision.CheckWorkerStuck: 0.5}, supervision.AdviceManualReview, supervision.ReasonUncertainChecks, supervision.StatusInconclusive},
		{"active: informational checks never count", active(), map[string]float64{supervision.CheckMeaningfulProgress: 0.5, supervision.CheckNeedsVerification: 0.5}, supervision.AdviceContinue, supervision.ReasonWorkerMayContinue, supervision.StatusDecided},
		{"idle: unknown completion is uncertain", idle(verifiedEvidence()), map[string]float64{supervision.CheckImplementationComplete: 0.5}, supervision.AdviceManualReview, supervision.ReasonUncertainChecks, supervision.StatusInconclusive},
		{"idle: health checks are ignored", idle(verifiedEvidence()), map[string]float64{supervision.CheckWorkerStuck: 0.99}, supervision.AdviceReviewCompletion, supervision.ReasonCompletionReviewReady, supervision.StatusDecided},
		{"idle: work remains", idle(verifiedEvidence()), map[string]float64{supervision.CheckImplementationComplete: 0.1}, supervision.AdviceContinue, supervision.ReasonWorkRemains, supervision.StatusDecided},
		{"idle: unknown readiness with verification", idle(verifiedEvidence()), map[string]float64{supervision.CheckReadyToFinish: 0.5}, supervision.AdviceManualReview, supervision.ReasonUncertainChecks, supervision.StatusInconclusive},
		{"idle: unknown readiness without verification asks for it", idle(nil), map[string]float64{supervision.CheckReadyToFinish: 0.5}, supervision.AdviceRequestVerification, supervision.ReasonCurrentVerification, supervision.StatusDecided},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSupervisor(t, &judgeFor{p: probs(tc.p)}, nil).ObserveSnapshot(context.Background(), tc.snap)
			require.NotNil(t, d.Report)
			assert.Equal(t, tc.advice, d.Report.Selected.Advice)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, tc.status, d.Status)
			require.Len(t, d.Report.Findings, 10)
			assert.Equal(t, "core.human-escalation__needs_human", d.Report.Findings[0].Key)
			assert.Equal(t, supervision.WorkerMayContinueLast(d.Report.Proposals), true)
		})
	}
}

func TestFailedWorkerAndDocumentation(t *testing.T) {
	snap := idle(verifiedEvidence())
	snap.WorkerFailed = true
	d := newSupervisor(t, &judgeFor{p: probs(nil)}, nil).ObserveSnapshot(context.Background(), snap)
	assert.Equal(t, supervision.ReasonWorkerFailed, d.Reason)
	assert.Equal(t, supervision.AdviceManualReview, d.Report.Selected.Advice)

	snap = idle(verifiedEvidence())
	snap.Evidence.DocumentationRequired = true
	j := &judgeFor{p: probs(map[string]float64{supervision.CheckDocumentationSufficient: 0.1})}
	d = newSupervisor(t, j, nil).ObserveSnapshot(context.Background(), snap)
	assert.Len(t, j.last.Questions, 11)
	require.Len(t, d.Report.Findings, 11)
	assert.Equal(t, supervision.AdviceReviewDocumentation, d.Report.Selected.Advice, "750 outranks completion review at 700")
	found := false
	for _, p := range d.Report.Proposals {
		found = found || p.Advice == supervision.AdviceReviewCompletion
	}
	assert.True(t, found, "documentation NO does not suppress the completion proposal")

	assert.Equal(t, map[string]string{
		"runId": "r1", "sequence": "7", "advice": "REVIEW_DOCUMENTATION", "responsibility": "quality.documentation",
		"verifiedRevision": "true", "truncated": "false", "model": "jev-test", "inputTokens": "10", "outputTokens": "2",
	}, d.Recommendation)
}
