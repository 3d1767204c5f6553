package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// A replay is linear: each learn round reads only the histories of the
// jobs closed since the round before (the rest it finds in its record
// store), however many windows came before it. (That a round's Read is
// the histories it read is TestE2ELearnRoundReadsOnlyTheJobsClosedSinceTheLast.)
func TestReplayRoundsReadOnlyTheJobsClosedSinceTheLast(t *testing.T) {
	srv := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	typ := strings.ReplaceAll("ReplayTestLinear"+time.Now().Format("150405.000000"), ".", "")
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Jobs: 8, Concurrency: 2, Mode: overseer.ModeObserve,
		LearnEvery: 2, Type: typ, Namespace: srv.Namespace(), Speed: 1e6})
	require.NoError(t, err)
	require.NoError(t, res.check())
	require.Len(t, res.Rounds, 3)
	for i, r := range res.Rounds {
		assert.Equal(t, 2, r.Read, "round %d read the 2 jobs closed since the round before, no earlier one", i+1)
		assert.Equal(t, 2*(i+1), r.Stored, "round %d keeps every job closed before it", i+1)
		assert.Equal(t, 2*(i+1), r.Readiness.Runs, "round %d learned from every job closed before it", i+1)
		assert.Equal(t, res.Rounds[0].Series, r.Series)
	}
}
