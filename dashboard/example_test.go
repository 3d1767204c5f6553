package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// jobs is a Backend that knows one paused job instead of asking Temporal.
type jobs struct{ job ops.Job }

func (b jobs) List(context.Context, ops.ListOptions) ([]ops.Job, error) { return []ops.Job{b.job}, nil }
func (b jobs) Describe(context.Context, string) (ops.Job, error)        { return b.job, nil }
func (b jobs) Status(context.Context, string, string) (overseer.Status, error) {
	return overseer.Status{Mode: overseer.ModeManage, Paused: true, GateID: "code-1"}, nil
}
func (b jobs) Resume(context.Context, string, overseer.ResumeRequest) (overseer.Gate, error) {
	return overseer.Gate{}, errors.New("not in this example")
}

// The dashboard is an http.Handler; here it reads its jobs from a stand-in
// backend instead of a Temporal client. It answers only to loopback host
// names unless Options.AllowedHosts names more.
func ExampleNew() {
	started := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	d, err := dashboard.New(dashboard.Options{Backend: jobs{ops.Job{
		ID: "job-42", Type: "BuildJob", State: "running", Band: "not_assessed", Paused: true, Started: started,
	}}})
	if err != nil {
		log.Fatal(err)
	}
	for _, host := range []string{"localhost:8080", "evil.example"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		d.ServeHTTP(rec, req)
		fmt.Println(host, rec.Code, strings.Contains(rec.Body.String(), "job-42"))
	}
	// Output:
	// localhost:8080 200 true
	// evil.example 421 false
}
