package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// A --budget that is not one is refused in one sentence before any call.
func TestResumeBudgetMustBeABudget(t *testing.T) {
	for _, tc := range []struct{ budget, want string }{
		{`{"tokens": "many"}`, "--budget: not a budget"},
		{`{"tokns": 5}`, "--budget: not a budget"},
		{`{"tokens": -5}`, "--budget: overseer: a budget's bound is negative"},
	} {
		var out bytes.Buffer
		err := (&Resume{}).Run(context.Background(), []string{"job-1", "--by", "ana", "--budget", tc.budget, "--address", "127.0.0.1:1"}, &out)
		require.ErrorIs(t, err, ErrUsage, tc.budget)
		assert.ErrorContains(t, err, tc.want, tc.budget)
	}
}

// The status says the spend against the budget, and what it cannot check.
func TestStatusSaysTheBudget(t *testing.T) {
	s := overseer.Status{Mode: overseer.ModeManage, Budget: &overseer.BudgetStatus{Limit: overseer.Budget{Tokens: 2000, CostUSD: 5},
		Exceeded: "spent 2400 tokens of its budget of 2000 tokens (120%)", Unchecked: []string{"cost"}}}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	assert.Contains(t, out.String(), "limit 2000 tokens, $5.00; reached: spent 2400 tokens of its budget of 2000 tokens (120%); unchecked (the phases report none): cost")
}
