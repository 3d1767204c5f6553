package eval

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditSchema validates the audit file ops writes for a recorded job
// (ops/testdata, its golden file) against the documented JSON Schema of
// overseer audit's records, and a record with a field the schema does not
// know fails.
func TestAuditSchema(t *testing.T) {
	schemaFile, err := os.Open(filepath.Join("..", "docs", "audit.schema.json"))
	require.NoError(t, err)
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "audit.schema.json"
	require.NoError(t, c.AddResource(url, doc))
	schema, err := c.Compile(url)
	require.NoError(t, err)

	f, err := os.Open(filepath.Join("..", "ops", "testdata", "audit_job_with_plugin.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	var first string
	for sc.Scan() {
		lines++
		if first == "" {
			first = sc.Text()
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Text()))
		require.NoError(t, err)
		assert.NoError(t, schema.Validate(inst), "line %d", lines)
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 4, lines)

	extra := first[:len(first)-1] + `,"made_up":1}`
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(extra))
	require.NoError(t, err)
	assert.Error(t, schema.Validate(inst), "a field the schema does not know")
}
