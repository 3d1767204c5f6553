package ops_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/ops"
)

// Both ways the judge leaves its answers in history — a side effect when it
// answers in workflow code, a local-activity marker otherwise — export as
// one assessment per phase.
func TestRecordOfHistoryReadsEveryPlacement(t *testing.T) {
	for _, file := range []string{"job_with_plugin.json", "job_with_plugin_local_activity.json"} {
		t.Run(file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "workflows", "testdata", file))
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			rec := ops.RecordOfHistory(h.GetEvents())
			require.NotEmpty(t, rec.Steps)
			for i, s := range rec.Steps {
				require.NotNil(t, s.Assessment, "step %d (%s)", i, s.Phase)
				assert.Empty(t, s.Assessment.Error, "step %d", i)
				assert.NotEmpty(t, s.Assessment.ModelVersion, "step %d", i)
				assert.NotEmpty(t, s.Assessment.Band, "step %d", i)
			}
		})
	}
}
