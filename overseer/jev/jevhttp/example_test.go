package jevhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
)

var request = jev.Request{
	State: json.RawMessage(`{"phase": "test", "failed_runs": 3}`),
	Questions: map[string]jev.Question{
		"blocked": {Type: jev.Noul, Instructions: "The agent is blocked."},
	},
}

// Serve a judge over HTTP and call it: the handler runs in a test server
// here, `overseer judge serve` or your own http.Server in production. A
// client with the wrong key is refused for good (not worth retrying).
func Example() {
	judge := jev.NewScripted(jev.Step{Response: &jev.Response{
		ModelVersion: "rules-v1",
		Answers:      map[string]jev.Answer{"blocked": {Type: jev.Noul, Probability: jev.Prob(0.8)}},
	}})
	judge.Repeat = true // answer every call with the same step
	h, err := jevhttp.NewHandler(judge, jevhttp.HandlerOptions{APIKey: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// A URL without a path calls jevhttp.DecidePath.
	client, err := jevhttp.New(jevhttp.Options{URL: srv.URL, APIKey: "s3cret"})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Decide(context.Background(), request)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: P(blocked) %.2f\n", resp.ModelVersion, *resp.Answers["blocked"].Probability)

	intruder, err := jevhttp.New(jevhttp.Options{URL: srv.URL, APIKey: "guess"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = intruder.Decide(context.Background(), request)
	var status *jevhttp.StatusError
	if errors.As(err, &status) {
		fmt.Println(status.StatusCode, status.Code, "rejected:", errors.Is(err, jev.ErrRejected))
	}
	// Output:
	// rules-v1: P(blocked) 0.80
	// 401 unauthorized rejected: true
}

// The handler validates the judge's answer before it sends it: a judge
// that answers badly gets the client an invalid answer, never a decision.
func ExampleNewHandler() {
	sloppy := jev.JudgeFunc(func(context.Context, jev.Request) (*jev.Response, error) {
		return &jev.Response{Answers: map[string]jev.Answer{
			"blocked": {Type: jev.Noul, Probability: jev.Prob(7)},
		}}, nil
	})
	h, err := jevhttp.NewHandler(sloppy, jevhttp.HandlerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	client, err := jevhttp.New(jevhttp.Options{URL: srv.URL})
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Decide(context.Background(), request)
	var status *jevhttp.StatusError
	if errors.As(err, &status) {
		fmt.Println(status.StatusCode, status.Code, "invalid answer:", errors.Is(err, jev.ErrInvalidAnswer))
	}
	// Output:
	// 502 invalid_answer invalid answer: true
}
