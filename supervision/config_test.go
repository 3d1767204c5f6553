package supervision_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/supervision"
)

const seedConfig = `{
  "jev": {
    "supervision": {
      "mode": "SHADOW",
      "version": "supervision-v1",
      "threshold": 0.8,
      "rejectionThreshold": 0.2,
      "budgetMillis": 3000,
      "minIntervalMillis": 5000,
      "periodicIntervalMillis": 30000,
      "maxAssessments": 60,
      "maxConsecutiveFailures": 3
    }
  }
}`

func TestParseSeedConfig(t *testing.T) {
	cfg, err := supervision.ParseConfig([]byte(seedConfig))
	require.NoError(t, err)
	assert.Equal(t, supervision.ModeShadow, cfg.Mode)
	assert.Equal(t, "supervision-v1", cfg.Version)
	assert.Equal(t, 3*time.Second, cfg.Budget)
	assert.Equal(t, supervision.Thresholds{No: 0.2, Yes: 0.8}, cfg.Thresholds)
	assert.Equal(t, supervision.DefaultSchedule(), cfg.Schedule)
	assert.Equal(t, supervision.DefaultLimits(), cfg.Limits)

	off, err := supervision.ParseConfig([]byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, supervision.ModeOff, off.Mode, "the service default is OFF")
	s, err := off.Supervisor(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, s, "OFF builds nothing")
}

func TestConfigIsValidatedStrictly(t *testing.T) {
	sup := func(body string) string { return `{"jev":{"supervision":{` + body + `}}}` }
	enabled := `"mode":"SHADOW","threshold":0.8,"rejectionThreshold":0.2`
	for _, tc := range []struct{ name, doc, want string }{
		{"enforce", sup(`"mode":"ENFORCE","threshold":0.8,"rejectionThreshold":0.2`), "ENFORCE"},
		{"bad mode", sup(`"mode":"LOUD"`), "unknown mode"},
		{"missing yes threshold", sup(`"mode":"SHADOW","rejectionThreshold":0.2`), "threshold is required"},
		{"missing no threshold", sup(`"mode":"SHADOW","threshold":0.8`), "rejectionThreshold is required"},
		{"inverted thresholds", sup(`"mode":"SHADOW","threshold":0.2,"rejectionThreshold":0.8`), "thresholds"},
		{"budget over 30 s", sup(enabled + `,"budgetMillis":30001`), "budgetMillis"},
		{"assessments over 120", sup(enabled + `,"maxAssessments":121`), "maxAssessments"},
		{"interval under 1 s", sup(enabled + `,"minIntervalMillis":999`), "minIntervalMillis"},
		{"period under interval", sup(enabled + `,"minIntervalMillis":6000,"periodicIntervalMillis":5000`), "period"},
		{"text limit above default", sup(enabled + `,"maxTextChars":12001`), "maxTextChars"},
		{"diff limit above default", sup(enabled + `,"maxDiffChars":30001`), "maxDiffChars"},
		{"files above default", sup(enabled + `,"maxFiles":101`), "maxFiles"},
		{"state above default", sup(enabled + `,"maxStateChars":100001`), "maxStateChars"},
		{"fractional integer", sup(enabled + `,"maxFiles":10.5`), "maxFiles must be an integer"},
		{"string integer", sup(enabled + `,"maxFiles":"10"`), "maxFiles must be an integer"},
		{"unknown field", sup(enabled + `,"colour":"blue"`), "Unknown supervision setting"},
		{"api key", sup(enabled + `,"apiKey":"sk-123"`), "Unknown supervision setting"},
		{"endpoint override", sup(enabled + `,"endpoint":"http://evil"`), "Unknown supervision setting"},
		{"unknown purpose", `{"jev":{"routing":{}}}`, "unknown jev purpose"},
		{"purpose not an object", `{"jev":{"supervision":3}}`, "must be an object"},
		{"not json", `{"jev":`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := supervision.ParseConfig([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
