package jev_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// request asks two questions about a job: a probability and a choice.
func request() jev.Request {
	return jev.Request{
		State: json.RawMessage(`{"phase": "test", "failed_runs": 3}`),
		Questions: map[string]jev.Question{
			"blocked": {Type: jev.Noul, Instructions: "The agent is blocked."},
			"next": {Type: jev.Choice, Options: []jev.ChoiceOption{
				{Name: "continue"},
				{Name: "ask_a_human", Description: "A person should look before the job goes on."},
			}},
		},
	}
}

// A request goes on the wire as JSON: a choice's options become its
// criteria, in order, each with its description (null: the option's name
// says it all).
func ExampleRequest() {
	b, err := json.MarshalIndent(request(), "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// {
	//   "state": {
	//     "phase": "test",
	//     "failed_runs": 3
	//   },
	//   "questions": {
	//     "blocked": {
	//       "instructions": "The agent is blocked.",
	//       "type": "noul"
	//     },
	//     "next": {
	//       "criteria": {
	//         "continue": null,
	//         "ask_a_human": "A person should look before the job goes on."
	//       },
	//       "type": "choice"
	//     }
	//   }
	// }
}

// Validate refuses a response that does not fit the questions, naming
// every problem; such an answer is never acted on.
func ExampleValidate() {
	req := request()
	bad := &jev.Response{Answers: map[string]jev.Answer{
		"blocked": {Type: jev.Noul, Probability: jev.Prob(1.3)},
		"next":    {Type: jev.Choice, Choice: "retry", Confidence: jev.Prob(0.9)},
		"mood":    {Type: jev.Noul, Probability: jev.Prob(0.5)},
	}}
	err := jev.Validate(req, bad)
	fmt.Println(err)
	fmt.Println("invalid answer:", errors.Is(err, jev.ErrInvalidAnswer))

	good := &jev.Response{Answers: map[string]jev.Answer{
		"blocked": {Type: jev.Noul, Probability: jev.Prob(0.8)},
		"next":    {Type: jev.Choice, Choice: "ask_a_human", Confidence: jev.Prob(0.7)},
	}}
	fmt.Println("valid:", jev.Validate(req, good) == nil)
	// Output:
	// jev: invalid answer: question "blocked": probability 1.3 outside [0,1]
	// question "next": unknown choice option "retry"
	// answer "mood": no such question
	// invalid answer: true
	// valid: true
}

// A scripted judge stands in for a real one in tests: it answers with its
// steps in order, then reports that its script is used up, and keeps the
// requests it received.
func ExampleNewScripted() {
	judge := jev.NewScripted(
		jev.Step{Response: &jev.Response{ModelVersion: "scripted", Answers: map[string]jev.Answer{
			"blocked": {Type: jev.Noul, Probability: jev.Prob(0.8)},
			"next":    {Type: jev.Choice, Choice: "ask_a_human", Confidence: jev.Prob(0.7)},
		}}},
		jev.Step{Err: errors.New("backend unavailable")},
	)
	ctx := context.Background()
	for range 3 {
		resp, err := judge.Decide(ctx, request())
		switch {
		case errors.Is(err, jev.ErrScriptExhausted):
			fmt.Println("no step left")
		case err != nil:
			fmt.Println("error:", err)
		default:
			fmt.Printf("%s: P(blocked) %.2f, next %s\n", resp.ModelVersion, *resp.Answers["blocked"].Probability, resp.Answers["next"].Choice)
		}
	}
	fmt.Println("requests:", len(judge.Requests()))
	// Output:
	// scripted: P(blocked) 0.80, next ask_a_human
	// error: backend unavailable
	// no step left
	// requests: 3
}

// A judge is any type with a Decide method; JudgeFunc turns a function
// into one. A judge should validate its own answer before it returns it.
func ExampleJudgeFunc() {
	var judge jev.Judge = jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		resp := &jev.Response{ModelVersion: "always-continue", Answers: map[string]jev.Answer{
			"blocked": {Type: jev.Noul, Probability: jev.Prob(0.1)},
			"next":    {Type: jev.Choice, Choice: "continue", Confidence: jev.Prob(0.9)},
		}}
		return resp, jev.Validate(req, resp)
	})
	resp, err := judge.Decide(context.Background(), request())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Answers["next"].Choice)
	// Output:
	// continue
}
