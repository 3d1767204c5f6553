package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// The version every verdict of a job without a promoted model names is the
// shipped model's: model show shows it, saying where it comes from.
func TestModelShowOfTheShippedVersion(t *testing.T) {
	shipped := overseer.DefaultLearnedModel().Version
	assert.True(t, isShippedVersion(shipped))
	assert.True(t, isShippedVersion(shipped+"/telemetry"), "as a verdict names it")
	assert.False(t, isShippedVersion("learned-other"))

	var out bytes.Buffer
	require.NoError(t, writeShipped(&out, false))
	text := out.String()
	assert.Regexp(t, `Version\s+`+shipped+`\n`, text)
	assert.Regexp(t, `Source\s+shipped with the overseer \(overseer.DefaultLearnedModel and DefaultLearnedPolicy\), not from the model registry`, text)
	assert.Regexp(t, `Sub-model\s+telemetry`, text)
	assert.Regexp(t, `Policy\s+`+regexp.QuoteMeta(overseer.DefaultLearnedPolicy().Name), text)
	assert.Regexp(t, `Promise\s+\S`, text)

	out.Reset()
	require.NoError(t, writeShipped(&out, true))
	var got struct {
		Version string                `json:"version"`
		Source  string                `json:"source"`
		Model   overseer.LearnedModel `json:"model"`
		Policy  overseer.Policy       `json:"policy"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	assert.Equal(t, shipped, got.Version)
	assert.Equal(t, shipped, got.Model.Version)
	assert.Len(t, got.Model.SubModels, len(overseer.DefaultLearnedModel().SubModels))
	assert.Equal(t, overseer.DefaultLearnedPolicy().PauseAtOrBelow, got.Policy.PauseAtOrBelow)
}
