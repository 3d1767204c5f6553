package bench

import (
	"context"
	"encoding/json"
	"net"
	"sync"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
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

// serveJudge puts judge behind a Jev HTTP server on 127.0.0.1, as
// `overseer judge serve` does, and returns the HTTP judge that asks it.
func serveJudge(ctx context.Context, judge jev.Judge) (jev.Judge, func(), error) {
	srv, err := jevhttp.NewServer(judge, jevhttp.ServerOptions{})
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop := func() { cancel(); <-done }
	client, err := jevhttp.New(jevhttp.Options{URL: "http://" + ln.Addr().String() + jevhttp.DecidePath})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return client, stop, nil
}
