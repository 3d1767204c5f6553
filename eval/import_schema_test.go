package eval

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// TestRunRecordSchema validates the documented example file against the
// documented JSON Schema, and reads it as the commands do.
func TestRunRecordSchema(t *testing.T) {
	docs := filepath.Join("..", "docs")
	schemaFile, err := os.Open(filepath.Join(docs, "run-record.schema.json"))
	require.NoError(t, err)
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "run-record.schema.json"
	require.NoError(t, c.AddResource(url, doc))
	schema, err := c.Compile(url)
	require.NoError(t, err)

	example := filepath.Join(docs, "examples", "runs.jsonl")
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		lines++
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Text()))
		require.NoError(t, err)
		assert.NoError(t, schema.Validate(inst), "line %d", lines)
	}
	require.NoError(t, sc.Err())

	recs, err := LoadRuns(example, "")
	require.NoError(t, err)
	assert.Len(t, recs, lines)
	assert.GreaterOrEqual(t, lines, 3)

	// A job's calls as overseer export writes them: the model call, then
	// the tool it asked for, failing.
	calls := `{"format":"overseer-run/v1","id":"loop-1","outcome":"failed","unit":"call","shape":"agent_loop","steps":[` +
		`{"phase":"model","text":"agent.model","call":"a1","output":"b1","turns":1,"input_tokens":900},` +
		`{"phase":"bash","text":"agent.bash","failed":true,"error":"exit status 1","call":"c1"}]}`
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(calls))
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(inst))
	exported, err := ReadRecords(strings.NewReader(calls))
	require.NoError(t, err)
	assert.Equal(t, "exit status 1", exported[0].Steps[1].Error)
	assert.Equal(t, overseer.ShapeAgentLoop, ShapeOfRecord(exported[0]))

	// An importer's record keeps the step's texts for a model judge.
	texts, err := ParseSWEAgent("t-1", []byte(`{"trajectory":[{"action":"cat a.py","observation":"x = 1","thought":"Look."}]}`), false)
	require.NoError(t, err)
	require.Equal(t, "x = 1", texts.Steps[0].Printed)
	var line bytes.Buffer
	require.NoError(t, WriteRecords(&line, []Record{texts}))
	inst, err = jsonschema.UnmarshalJSON(&line)
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(inst), "command, printed and message are in the schema")

	// A record with the reviewers' gate decisions (overseer export).
	withGates := `{"format":"overseer-run/v1","id":"g-1","outcome":"succeeded","unit":"phase","steps":[{"phase":"plan"},{"phase":"code"}],` +
		`"gates":[{"gate":"plan-1","phase":"plan","after":1,"by":"ana","action":"continue","note":"fine","wait_ms":1200}]}`
	inst, err = jsonschema.UnmarshalJSON(strings.NewReader(withGates))
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(inst))
	got, err := ReadRecords(strings.NewReader(withGates))
	require.NoError(t, err)
	assert.Equal(t, []GateDecision{{Gate: "plan-1", Phase: "plan", After: 1, By: "ana", Action: GateContinue, Note: "fine", WaitMS: 1200}}, got[0].Gates)

	// A decision carries the rule that paused and its evidence.
	withEvidence := `{"format":"overseer-run/v1","id":"g-2","outcome":"succeeded","unit":"phase","steps":[{"phase":"plan"},{"phase":"code"}],` +
		`"gates":[{"gate":"code-1","phase":"code","after":2,"by":"ana","action":"continue","reason":"P(on objective) 0.200 is at or below the pause threshold 0.250",` +
		`"evidence":["code failed twice in a row, each time with the same error: cannot push"]}]}`
	inst, err = jsonschema.UnmarshalJSON(strings.NewReader(withEvidence))
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(inst))
	got, err = ReadRecords(strings.NewReader(withEvidence))
	require.NoError(t, err)
	assert.Equal(t, []string{"code failed twice in a row, each time with the same error: cannot push"}, got[0].Gates[0].Evidence)
	assert.Equal(t, "P(on objective) 0.200 is at or below the pause threshold 0.250", got[0].Gates[0].Reason)
	// And whether the pause was needed, and which rule said so.
	withNeeded := strings.Replace(withGates, `"note":"fine"`, `"note":"fine","needed":false,"needed_by":"reviewer"`, 1)
	inst, err = jsonschema.UnmarshalJSON(strings.NewReader(withNeeded))
	require.NoError(t, err)
	assert.NoError(t, schema.Validate(inst))
	got, err = ReadRecords(strings.NewReader(withNeeded))
	require.NoError(t, err)
	require.NotNil(t, got[0].Gates[0].Needed)
	assert.False(t, *got[0].Gates[0].Needed)
	assert.Equal(t, "reviewer", got[0].Gates[0].NeededBy)
	inst, err = jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(withNeeded, `"needed_by":"reviewer"`, `"needed_by":"a hunch"`, 1)))
	require.NoError(t, err)
	assert.Error(t, schema.Validate(inst), "needed_by names a known rule")
	for _, bad := range []string{`"evidence":"not a list"`, `"evidence":[3]`} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(withEvidence,
			`"evidence":["code failed twice in a row, each time with the same error: cannot push"]`, bad, 1)))
		require.NoError(t, err)
		assert.Error(t, schema.Validate(inst), bad)
	}

	// The schema refuses what ReadRecords refuses.
	for _, bad := range []string{
		`{"format":"overseer-run/v1","id":"a-1","steps":[{"phase":"read"}]}`,                                                                        // no outcome
		`{"format":"overseer-run/v1","id":"a-1","outcome":"ok","steps":[{"phase":"read"}]}`,                                                         // unknown outcome
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[]}`,                                                                     // no steps
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"duration_ms":5}]}`,                                                    // no phase, not failed
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","unit":"phase","steps":[{"failed":true}]}`,                                       // a phase run needs its phase
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"phase":"read","cost_usd":-1}]}`,                                       // negative cost
		`{"format":"overseer-run/v2","id":"a-1","outcome":"failed","steps":[{"phase":"read"}]}`,                                                     // another version
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"phase":"read","tokens":3}]}`,                                          // unknown field
		`{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"phase":"read"}],"gates":[{"phase":"read","by":"a","action":"skip"}]}`, // unknown gate action
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		require.NoError(t, err)
		assert.Error(t, schema.Validate(inst), bad)
		_, err = ReadRecords(strings.NewReader(bad))
		assert.ErrorIs(t, err, ErrInvalidRecord, bad)
	}
}
