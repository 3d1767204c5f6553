package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExampleSpecParses(t *testing.T) {
	spec, err := LoadJobSpec(filepath.Join("..", "..", "..", "examples", "job.yaml"))
	require.NoError(t, err)
	assert.Equal(t, JobSpec{ID: "csv-export-1", Objective: "Add CSV export to the reports page", Scenario: "looping",
		Phases: []string{"spec", "plan", "code", "test", "review", "evaluate"}, Mode: "manage", MaxLoops: 3,
		GateDeadline: "24h:escalate,72h:abort", RetryDelay: Duration(10 * time.Second)}, spec)
	require.NoError(t, spec.Validate())
	bad := spec
	bad.GateDeadline = "24h:skip"
	assert.ErrorContains(t, bad.Validate(), "job spec: gate_deadline: overseer: gate deadline action \"skip\"")
}

func TestSpecErrorsNameTheFieldAndLine(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"job.yaml", "objective: x\nscenario: on_track\ncolour: blue\n",
			`line 3: unknown field "colour"; the fields are id, objective, scenario, phases, mode, max_loops, gate_deadline, started_by, retry_delay`},
		{"job.yaml", "objective: x\nscenario: on_track\n\nmax_loops: many\n", `line 4: max_loops: "many" is not a whole number`},
		{"job.yaml", "objective: x\nretry_delay: soon\n", `line 2: retry_delay: duration "soon": use a number with a unit`},
		{"job.yaml", "objective: x\n  scenario: on_track\n", "line 2"},
		{"job.yaml", "- objective\n", "line 1: expected fields"},
		{"job.json", "{\n  \"objective\": \"x\",\n  \"colour\": \"blue\"\n}", `line 3: unknown field "colour"`},
		{"job.json", "{\n  \"objective\": \"x\",\n  \"max_loops\": \"many\"\n}", "line 3: max_loops: a JSON string cannot be a int"},
		{"job.json", "{\n  \"objective\": \"x\",\n  \"scenario\" \"on_track\"\n}", "line 3: expected colon after object key"},
		{"job.json", `{"objective": "x"`, "the JSON ends too early"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), tc.name)
			require.NoError(t, os.WriteFile(p, []byte(tc.doc), 0o600))
			_, err := LoadJobSpec(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "is not a valid job spec: "+tc.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.NotContains(t, err.Error(), "cli.JobSpec", "no Go type names")
		})
	}
}
