package learn

import "github.com/corohq/temporal-overseer/eval"

// MeasureRescue estimates rescue against disruption for workflowType on
// the records a round reads (the newest Input.MaxRuns closed jobs, labelled
// by eval.UseGateLabels): its paused jobs, with the reviewers' judgement
// and what became of them, against its flagged jobs left alone in observe
// mode (eval.EstimateRescue). It uses every record the round reads, not
// only the rate window: the estimate needs MinRescueJobs jobs of each
// kind, and a deployment flags few of its jobs.
func MeasureRescue(workflowType string, records []eval.Record) *eval.RescueEstimate {
	e := eval.EstimateRescue(workflowType, records)
	return &e
}
