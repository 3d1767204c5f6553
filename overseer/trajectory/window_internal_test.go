package trajectory

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWindowKeepsTheLastElements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     []int
		limit int
		want  []int
	}{
		{"room left", []int{1, 2}, 4, []int{1, 2, 9}},
		{"full: the oldest goes", []int{1, 2, 3}, 3, []int{2, 3, 9}},
		{"over a lower limit", []int{1, 2, 3, 4, 5}, 3, []int{4, 5, 9}},
		{"limit of one", []int{1}, 1, []int{9}},
		{"no window", []int{1, 2}, 0, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Window(tc.s, 9, tc.limit))
		})
	}
}

func TestAFullTrajectoryShiftsWithoutTouchingItsClones(t *testing.T) {
	var tr Trajectory
	for i := range maxRecentPhases {
		tr.RecordPhase(PhaseRun{Phase: "code", Turns: i}, nil)
	}
	before := tr.Clone()
	tr.RecordPhase(PhaseRun{Phase: "test", Turns: 100}, nil)
	assert.Len(t, tr.RecentPhases, maxRecentPhases)
	assert.Equal(t, "test", tr.RecentPhases[maxRecentPhases-1].Phase)
	assert.Equal(t, 0, before.RecentPhases[0].Turns, "a clone taken before keeps its phases")
	assert.Equal(t, "code", before.RecentPhases[maxRecentPhases-1].Phase)
}

func TestACloneSharesNoPhaseRunThatLaterRecordsChange(t *testing.T) {
	var tr Trajectory
	tr.RecordPhase(PhaseRun{Phase: "test"}, &PhaseReport{FailedToolCategories: []string{"pytest"}, MissingOutputs: []string{"patch"}})
	before := tr.Clone()
	for range maxRecentPhases + 1 {
		tr.RecordPhase(PhaseRun{Phase: "code"}, &PhaseReport{FailedToolCategories: []string{"lint"}, MissingOutputs: []string{"diff"}})
	}
	assert.Equal(t, []string{"pytest"}, before.RecentPhases[0].FailedToolCategories, "later phases never write an earlier run's names")
	assert.Equal(t, []string{"patch"}, before.RecentPhases[0].MissingOutputs)
}
