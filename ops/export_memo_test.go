package ops

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
)

func TestFamilyOfMemo(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	p, err := dc.ToPayload(" billing-service ")
	require.NoError(t, err)
	assert.Equal(t, "billing-service", familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: p}}, dc, "", "job-1"))
	n, err := dc.ToPayload(3)
	require.NoError(t, err)
	assert.Empty(t, familyOfMemo(&commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: n}}, dc, "", "job-1"), "not a string")
	assert.Empty(t, familyOfMemo(nil, dc, "", "job-1"))
}

func TestFamilyOfAnEncryptedMemo(t *testing.T) {
	aes, err := codec.NewAESGCM([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	enc := codec.DataConverter(aes)
	p, err := enc.ToPayload("billing-service")
	require.NoError(t, err)
	memo := &commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: p}}
	assert.Equal(t, "billing-service", familyOfMemo(memo, enc, "", "job-1"), "read with the deployment's converter")
	assert.Empty(t, familyOfMemo(memo, converter.GetDefaultDataConverter(), "", "job-1"), "unreadable without the codec")
}

// Under a codec that binds each payload to its serialization context, the
// memo fields a record and a view read (the task family, the overseer's
// summary) are read in the workflow's context, as a client wrote them at
// the start and the worker in its upserts; in any other context they do
// not open.
func TestMemoFieldsAreReadInTheWorkflowsSerializationContext(t *testing.T) {
	bound, err := testsuite.NewContextBoundCodec([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, err)
	dc := testsuite.ContextBoundDataConverter(bound)
	asWorkflow := func(ns, id string) converter.DataConverter {
		return converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{Namespace: ns, WorkflowID: id})
	}
	family, err := asWorkflow("default", "job-1").ToPayload("billing-service")
	require.NoError(t, err)
	summary, err := asWorkflow("team-a", "job-1").ToPayload(overseer.Summary{Band: overseer.BandNeedsALook, Phase: "code"})
	require.NoError(t, err)

	memo := &commonpb.Memo{Fields: map[string]*commonpb.Payload{TaskFamilyMemoKey: family}}
	assert.Equal(t, "billing-service", familyOfMemo(memo, dc, "", "job-1"), "the task family, in the default namespace")
	assert.Empty(t, familyOfMemo(memo, dc, "", "job-2"), "sealed for job-1")

	var j Job
	j.ID = "job-1"
	j.readSummary(&commonpb.Memo{Fields: map[string]*commonpb.Payload{overseer.SummaryMemoKey: summary}}, ListOptions{DataConverter: dc, Namespace: "team-a"})
	require.NotNil(t, j.Summary, j.SummaryError)
	assert.Equal(t, overseer.BandNeedsALook, j.Summary.Band)
	var other Job
	other.ID = "job-1"
	other.readSummary(&commonpb.Memo{Fields: map[string]*commonpb.Payload{overseer.SummaryMemoKey: summary}}, ListOptions{DataConverter: dc})
	assert.Nil(t, other.Summary, "sealed in namespace team-a, not default")
}
