package jev_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

var questions = map[string]jev.Question{
	"ok":     {Type: jev.Noul, Instructions: "It is fine."},
	"pick":   {Type: jev.Choice, Options: []jev.ChoiceOption{{Name: "none", Description: "Nothing."}, {Name: "a"}}},
	"rating": {Type: jev.Score, Levels: []string{"low", "mid", "high"}},
}

func valid() *jev.Response {
	return &jev.Response{ModelVersion: "m", Answers: map[string]jev.Answer{
		"ok":     {Type: jev.Noul, Probability: jev.Prob(0.7)},
		"pick":   {Type: jev.Choice, Choice: "a", Confidence: jev.Prob(0.6), Probabilities: map[string]float64{"none": 0.4, "a": 0.6}},
		"rating": {Type: jev.Score, Score: jev.Prob(1.5), Confidence: jev.Prob(0.5)},
	}}
}

func TestValidate(t *testing.T) {
	req := jev.Request{State: json.RawMessage(`{}`), Questions: questions}
	require.NoError(t, jev.Validate(req, valid()))
	for _, tc := range []struct {
		name   string
		mutate func(r *jev.Response)
		want   string
	}{
		{"missing question", func(r *jev.Response) { delete(r.Answers, "ok") }, `"ok": missing answer`},
		{"extra answer", func(r *jev.Response) { r.Answers["zzz"] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(1)} }, `"zzz": no such question`},
		{"wrong type", func(r *jev.Response) { r.Answers["ok"] = jev.Answer{Type: jev.Score, Score: jev.Prob(1)} }, `answer type "score", want "noul"`},
		{"NaN", func(r *jev.Response) { r.Answers["ok"] = jev.Answer{Probability: jev.Prob(math.NaN())} }, "outside [0,1]"},
		{"negative", func(r *jev.Response) { r.Answers["ok"] = jev.Answer{Probability: jev.Prob(-1)} }, "-1 outside [0,1]"},
		{"above one", func(r *jev.Response) { r.Answers["ok"] = jev.Answer{Probability: jev.Prob(1.1)} }, "1.1 outside [0,1]"},
		{"missing probability", func(r *jev.Response) { r.Answers["ok"] = jev.Answer{Type: jev.Noul} }, "missing probability"},
		{"unknown option", func(r *jev.Response) { a := r.Answers["pick"]; a.Choice = "b"; r.Answers["pick"] = a }, `unknown choice option "b"`},
		{"bad option probability", func(r *jev.Response) {
			a := r.Answers["pick"]
			a.Probabilities = map[string]float64{"a": 2}
			r.Answers["pick"] = a
		}, `probability of "a" 2 outside`},
		{"score above scale", func(r *jev.Response) { a := r.Answers["rating"]; a.Score = jev.Prob(2.1); r.Answers["rating"] = a }, "outside the scale 0…2"},
		{"score below scale", func(r *jev.Response) { a := r.Answers["rating"]; a.Score = jev.Prob(-0.1); r.Answers["rating"] = a }, "outside the scale"},
		{"missing confidence", func(r *jev.Response) { a := r.Answers["rating"]; a.Confidence = nil; r.Answers["rating"] = a }, "missing confidence"},
		{"negative tokens", func(r *jev.Response) { r.Usage.InputTokens = -1 }, "negative token count"},
		{"empty", func(r *jev.Response) { r.Answers = nil }, "empty response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := valid()
			tc.mutate(r)
			err := jev.Validate(req, r)
			require.ErrorIs(t, err, jev.ErrInvalidAnswer)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	assert.ErrorIs(t, jev.Validate(req, nil), jev.ErrInvalidAnswer)
}

func TestQuestionWireShape(t *testing.T) {
	b, err := json.Marshal(questions["pick"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"choice","criteria":{"none":"Nothing.","a":null}}`, string(b))
	assert.Equal(t, `{"criteria":{"none":"Nothing.","a":null},"type":"choice"}`, string(b), "options keep their order")
	var back jev.Question
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, questions["pick"], back)

	b, err = json.Marshal(questions["rating"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"score","criteria":["low","mid","high"]}`, string(b))
	b, err = json.Marshal(questions["ok"])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"noul","instructions":"It is fine."}`, string(b))
}
