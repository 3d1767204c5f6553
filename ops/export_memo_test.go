package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/codec"
)

func TestFamilyOfMemo(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	p, err := dc.ToPayload(" billing-service ")
	require.NoError(t, err)
	assert.Equal(t, "billing-service", familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: p}}, dc))
	n, err := dc.ToPayload(3)
	require.NoError(t, err)
	assert.Empty(t, familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: n}}, dc), "not a string")
	assert.Empty(t, familyOfMemo(nil, dc))
}

func TestFamilyOfAnEncryptedMemo(t *testing.T) {
	aes, err := codec.NewAESGCM([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	enc := codec.DataConverter(aes)
	p, err := enc.ToPayload("billing-service")
	require.NoError(t, err)
	memo := &commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: p}}
	assert.Equal(t, "billing-service", familyOfMemo(memo, enc), "read with the deployment's converter")
	assert.Empty(t, familyOfMemo(memo, converter.GetDefaultDataConverter()), "unreadable without the codec")
}
