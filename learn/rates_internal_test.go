package learn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// When the current model's promise cannot be read, the sentence says so,
// and not that the policy makes none.
func TestRatesSayThePromiseCouldNotBeRead(t *testing.T) {
	got := measureRates([]eval.Record{{}, {}}, 0, "", overseer.Promise{}, errors.New("registry unreachable"))
	assert.Equal(t, 2, got.Jobs)
	assert.Nil(t, got.Check)
	assert.Contains(t, got.Sentence, "; the current model's promise could not be read: registry unreachable")
	assert.NotContains(t, got.Sentence, "makes no false-pause promise")
}
