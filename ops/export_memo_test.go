package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func TestFamilyOfMemo(t *testing.T) {
	p, err := converter.GetDefaultDataConverter().ToPayload(" billing-service ")
	require.NoError(t, err)
	assert.Equal(t, "billing-service", familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: p}}))
	n, err := converter.GetDefaultDataConverter().ToPayload(3)
	require.NoError(t, err)
	assert.Empty(t, familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: n}}), "not a string")
	assert.Empty(t, familyOfMemo(nil))
}
