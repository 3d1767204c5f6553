package overseer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopLevelFieldReadsOnlyTheObjectsOwnMember(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		found            bool
	}{
		{"first", `{"overseer_report":{"turns":3},"index":1}`, `{"turns":3}`, true},
		{"last", `{"index":1,"overseer_report":{"turns":3}}`, `{"turns":3}`, true},
		{"spaces", "{ \"overseer_report\" :\n {\"turns\": 3} , \"x\": 1 }", "\n {\"turns\": 3} ", true},
		{"null", `{"overseer_report":null}`, `null`, true},
		{"nested only", `{"inner":{"overseer_report":{"turns":3}}}`, "", false},
		{"in an array", `{"items":[{"overseer_report":{"turns":3}}]}`, "", false},
		{"as a string value", `{"note":"overseer_report","x":{"turns":3}}`, "", false},
		{"escaped quotes", `{"note":"a \"overseer_report\": b","overseer_report":{"turns":4}}`, `{"turns":4}`, true},
		{"braces in strings", `{"note":"}{,","overseer_report":{"summary":"a,}b","turns":5}}`, `{"summary":"a,}b","turns":5}`, true},
		{"absent", `{"index":1}`, "", false},
		{"not an object", `[1,2]`, "", false},
		{"empty", ``, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := topLevelField([]byte(tc.data), reportKey)
			require.Equal(t, tc.found, ok)
			assert.Equal(t, tc.want, string(got))
			if !ok || !json.Valid([]byte(tc.data)) {
				return
			}
			// The same report the whole document's decoding gives.
			var whole ReportCarrier
			require.NoError(t, json.Unmarshal([]byte(tc.data), &whole))
			var part *PhaseReport
			require.NoError(t, json.Unmarshal(got, &part))
			assert.Equal(t, whole.OverseerReport, part)
		})
	}
}
