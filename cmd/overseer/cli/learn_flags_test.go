package cli

import (
	"context"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/worker"
)

// A round's flags reach its input; a count of no runs is refused in one
// sentence that says what to give.
func TestRoundFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    learn.Input
		refused string
	}{
		{nil, learn.Input{MaxRuns: learn.DefaultMaxRuns}, ""},
		{[]string{"--learn-task-queue", "overseer-learn", "--max-runs", "800"}, learn.Input{TaskQueue: "overseer-learn", MaxRuns: 800}, ""},
		{[]string{"--max-runs", "0"}, learn.Input{}, "--max-runs 0: give how many of the newest closed jobs a round learns from, 1 or more"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var rf roundFlags
		rf.register(fs)
		require.NoError(t, fs.Parse(tt.args))
		var in learn.Input
		err := rf.apply(&in)
		if tt.refused != "" {
			require.ErrorIs(t, err, ErrUsage)
			assert.Contains(t, err.Error(), tt.refused)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, in)
	}
}

// A worker given a record store it cannot open does not start, and says
// what to give; `learn run` refuses a bad --max-runs before it dials.
func TestLearnRecordsThatDoNotOpenStopTheWorker(t *testing.T) {
	_, err := hostLearnWith(nil, nil, true, worker.Config{}, learnFlags{records: "nosuch://bucket"})
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--learn-records: ")
	assert.Contains(t, err.Error(), "give a folder, or a bucket URL")

	err = (&LearnCmd{}).Run(context.Background(), []string{"run", "--type", "T", "--max-runs", "-1"}, io.Discard)
	require.ErrorIs(t, err, ErrUsage)
	assert.Contains(t, err.Error(), "--max-runs -1")
}
