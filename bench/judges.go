package bench

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// remoteJudge is the shipped judge as the plugin sees an HTTP judge: not
// pure, so it answers in an activity.
type remoteJudge struct{ judge jev.Judge }

func (j remoteJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	return j.judge.Decide(ctx, req)
}

// hangingJudge never answers: it holds every call for the whole budget the
// overseer gives it.
type hangingJudge struct{}

func (hangingJudge) Decide(ctx context.Context, _ jev.Request) (*jev.Response, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// sizingJudge is a pure judge that records the size of every request it
// gets, by the phase count of its trajectory (phase runs across
// continue-as-new).
type sizingJudge struct {
	overseer.LearnedJudge
	mu    sync.Mutex
	sizes map[int]int
}

func (j *sizingJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var st overseer.State
	if err := json.Unmarshal(req.State, &st); err != nil {
		return nil, err
	}
	j.mu.Lock()
	if j.sizes == nil {
		j.sizes = map[int]int{}
	}
	j.sizes[st.Trajectory.PhaseRuns] = len(b)
	j.mu.Unlock()
	return j.LearnedJudge.Decide(ctx, req)
}

func (j *sizingJudge) size(phase int) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sizes[phase]
}
