package overseer

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A run of the first structure cannot redo: its refusal says so in one
// sentence, whatever the bound.
func TestRedoIsRefusedInRunsOfTheFirstStructure(t *testing.T) {
	r := &run{open: []*Gate{{ID: "code-1", Phase: "code", Attempt: 1}}, unpinnedRedos: -1}
	err := r.checkRedo(ResumeRequest{By: "alice", Action: ActionRedo})
	assert.Equal(t, RedoRefusedErrorType, ErrorType(err))
	assert.ErrorContains(t, err, "gate code-1 cannot be redone: this run started on an overseer from before redo (its first structure)")
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice"}), "a continue is not a redo")
	assert.Equal(t, -1, r.status().MaxRedos)

	// Runs pinned before MaxRedos existed started on an overseer that could
	// not redo: none, never the default.
	r.loop = true
	err = r.checkRedo(ResumeRequest{By: "alice", Action: ActionRedo})
	assert.Equal(t, RedoRefusedErrorType, ErrorType(err))
	assert.ErrorContains(t, err, "gate code-1 cannot be redone: this job allows no redo")
	assert.Equal(t, -1, r.status().MaxRedos)
	assert.False(t, r.redoable(r.open[0]), "no Redo: command in the current details")

	// Pinned since MaxRedos, before RedoSafe: as it was started to.
	r.cfg.MaxRedos = DefaultMaxRedos
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice", Action: ActionRedo}))
	assert.Equal(t, DefaultMaxRedos, r.status().MaxRedos)
}

// TestRedoIsOffUnlessThePhaseIsDeclaredSafe: a new run pins no redo unless
// Options.RedoSafe names its type or the phase, and a run that names only
// some phases refuses a redo of the others in one sentence.
func TestRedoIsOffUnlessThePhaseIsDeclaredSafe(t *testing.T) {
	o, err := Options{}.withDefaults()
	assert.NoError(t, err)
	assert.Equal(t, -1, o.runConfigFor("CoroJob", ModeManage).MaxRedos, "nothing declared: no redo")
	o.RedoSafe = []string{"coro.test"}
	cfg := o.runConfigFor("CoroJob", ModeManage)
	assert.Equal(t, DefaultMaxRedos, cfg.MaxRedos)

	r := &run{loop: true, wfType: "CoroJob", cfg: cfg, open: []*Gate{{ID: "code-1", Phase: "code", Attempt: 1}, {ID: "test-2", Phase: "test", Attempt: 1}}}
	err = r.checkRedo(ResumeRequest{By: "alice", Gate: "code-1", Action: ActionRedo})
	assert.Equal(t, RedoRefusedErrorType, ErrorType(err))
	assert.ErrorContains(t, err, "gate code-1 cannot be redone: phase code is not declared safe to run again")
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice", Gate: "test-2", Action: ActionRedo}))
	s := r.status()
	assert.Equal(t, []string{"test"}, s.RedoPhases)
	assert.False(t, s.CanRedo(*r.open[0]))
	assert.True(t, s.CanRedo(*r.open[1]))

	o.RedoSafe = []string{"CoroJob"}
	r.cfg = o.runConfigFor("CoroJob", ModeManage)
	assert.NoError(t, r.checkRedo(ResumeRequest{By: "alice", Gate: "code-1", Action: ActionRedo}), "the whole type declared")
	assert.Nil(t, r.status().RedoPhases)

	// A history that dropped a redo signal before the overseer could redo
	// never redoes, and offers none.
	r.redoDropped = true
	err = r.checkRedo(ResumeRequest{By: "alice", Gate: "code-1", Action: ActionRedo})
	assert.Equal(t, RedoRefusedErrorType, ErrorType(err))
	assert.Equal(t, -1, r.status().MaxRedos)
	assert.False(t, r.redoable(r.open[0]))
}
