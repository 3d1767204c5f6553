package overseer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A run of the first structure cannot redo: its refusal says so in one
// sentence, whatever the bound.
func TestRedoIsRefusedInRunsOfTheFirstStructure(t *testing.T) {
	r := &run{open: []*Gate{{ID: "code-1", Phase: "code", Attempt: 1}}}
	err := r.checkRedo(ResumeRequest{By: "alice", Action: ActionRedo})
	assert.Equal(t, RedoRefusedErrorType, ErrorType(err))
	assert.ErrorContains(t, err, "gate code-1 cannot be redone: this run started on an overseer from before redo (its first structure)")
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice"}), "a continue is not a redo")
	assert.Equal(t, -1, r.status().MaxRedos)

	r.loop = true
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice", Action: ActionRedo}), "runs pinned before MaxRedos get the default")
	assert.Equal(t, DefaultMaxRedos, r.status().MaxRedos)
}
