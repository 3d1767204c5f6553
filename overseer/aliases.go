package overseer

// The plugin's names for the judges' and trajectory's types, constants and
// functions, which live in their own packages (judge, trajectory) below the
// plugin; a program written against the plugin keeps its names.

import (
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/judge"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// ActivityCall is [trajectory.ActivityCall].
type ActivityCall = trajectory.ActivityCall

// Answers is [trajectory.Answers].
type Answers = trajectory.Answers

// BreachNone is [trajectory.BreachNone].
const BreachNone = trajectory.BreachNone

// Count is [trajectory.Count].
type Count = trajectory.Count

// DefaultObligations is [trajectory.DefaultObligations].
func DefaultObligations() []string { return trajectory.DefaultObligations() }

// LaneSwitch is [trajectory.LaneSwitch].
type LaneSwitch = trajectory.LaneSwitch

// LoopStats is [trajectory.LoopStats].
type LoopStats = trajectory.LoopStats

// NewRequest is [trajectory.NewRequest].
func NewRequest(workflowType string, obligations []string, t trajectory.Trajectory) (jev.Request, error) {
	return trajectory.NewRequest(workflowType, obligations, t)
}

// ParseAnswers is [trajectory.ParseAnswers].
func ParseAnswers(req jev.Request, resp *jev.Response, obligations []string) (trajectory.Answers, error) {
	return trajectory.ParseAnswers(req, resp, obligations)
}

// PhaseReport is [trajectory.PhaseReport].
type PhaseReport = trajectory.PhaseReport

// PhaseRun is [trajectory.PhaseRun].
type PhaseRun = trajectory.PhaseRun

// QuestionBlocked is [trajectory.QuestionBlocked].
const QuestionBlocked = trajectory.QuestionBlocked

// QuestionBreach is [trajectory.QuestionBreach].
const QuestionBreach = trajectory.QuestionBreach

// QuestionOffTrack is [trajectory.QuestionOffTrack].
const QuestionOffTrack = trajectory.QuestionOffTrack

// QuestionSeverity is [trajectory.QuestionSeverity].
const QuestionSeverity = trajectory.QuestionSeverity

// ReportCarrier is [trajectory.ReportCarrier].
type ReportCarrier = trajectory.ReportCarrier

// Shape is [trajectory.Shape].
type Shape = trajectory.Shape

// ShapeAgentLoop is [trajectory.ShapeAgentLoop].
const ShapeAgentLoop = trajectory.ShapeAgentLoop

// ShapeDeclared is [trajectory.ShapeDeclared].
const ShapeDeclared = trajectory.ShapeDeclared

// ShapeOf is [trajectory.ShapeOf].
func ShapeOf(t trajectory.Trajectory) trajectory.Shape { return trajectory.ShapeOf(t) }

// ShapePhases is [trajectory.ShapePhases].
const ShapePhases = trajectory.ShapePhases

// State is [trajectory.State].
type State = trajectory.State

// Trajectory is [trajectory.Trajectory].
type Trajectory = trajectory.Trajectory

// TrajectoryRecorder is [trajectory.TrajectoryRecorder].
type TrajectoryRecorder = trajectory.TrajectoryRecorder

// WorkItem is [trajectory.WorkItem].
type WorkItem = trajectory.WorkItem

// Band is [judge.Band].
type Band = judge.Band

// BandNeedsALook is [judge.BandNeedsALook].
const BandNeedsALook = judge.BandNeedsALook

// BandOffTrack is [judge.BandOffTrack].
const BandOffTrack = judge.BandOffTrack

// BandOnTrack is [judge.BandOnTrack].
const BandOnTrack = judge.BandOnTrack

// BandUnknown is [judge.BandUnknown].
const BandUnknown = judge.BandUnknown

// Calibration is [judge.Calibration].
type Calibration = judge.Calibration

// DefaultLearnedModel is [judge.DefaultLearnedModel].
func DefaultLearnedModel() *judge.LearnedModel { return judge.DefaultLearnedModel() }

// DefaultLearnedPolicy is [judge.DefaultLearnedPolicy].
func DefaultLearnedPolicy() judge.Policy { return judge.DefaultLearnedPolicy() }

// DefaultLoopModel is [judge.DefaultLoopModel].
func DefaultLoopModel() *judge.LearnedModel { return judge.DefaultLoopModel() }

// DefaultPolicy is [judge.DefaultPolicy].
func DefaultPolicy() judge.Policy { return judge.DefaultPolicy() }

// DefaultPromiseKind is [judge.DefaultPromiseKind].
const DefaultPromiseKind = judge.DefaultPromiseKind

// ErrInvalidSpendBudget is [judge.ErrInvalidSpendBudget].
var ErrInvalidSpendBudget = judge.ErrInvalidSpendBudget

// ErrModel is [judge.ErrModel].
var ErrModel = judge.ErrModel

// ErrPolicy is [judge.ErrPolicy].
var ErrPolicy = judge.ErrPolicy

// FailureRepeats is [judge.FailureRepeats].
func FailureRepeats(t trajectory.Trajectory) int { return judge.FailureRepeats(t) }

// FeatureNames is [judge.FeatureNames].
func FeatureNames() []string { return judge.FeatureNames() }

// Features is [judge.Features].
func Features(t trajectory.Trajectory, names []string) ([]float64, error) {
	return judge.Features(t, names)
}

// HeuristicJudge is [judge.HeuristicJudge].
type HeuristicJudge = judge.HeuristicJudge

// IsCumulativeFeature is [judge.IsCumulativeFeature].
func IsCumulativeFeature(name string) bool { return judge.IsCumulativeFeature(name) }

// IsTelemetryFeature is [judge.IsTelemetryFeature].
func IsTelemetryFeature(name string) bool { return judge.IsTelemetryFeature(name) }

// LearnedJudge is [judge.LearnedJudge].
type LearnedJudge = judge.LearnedJudge

// LearnedModel is [judge.LearnedModel].
type LearnedModel = judge.LearnedModel

// LearnedModelFormat is [judge.LearnedModelFormat].
const LearnedModelFormat = judge.LearnedModelFormat

// LoadLearnedModel is [judge.LoadLearnedModel].
func LoadLearnedModel(path string) (*judge.LearnedModel, error) { return judge.LoadLearnedModel(path) }

// LoadPolicy is [judge.LoadPolicy].
func LoadPolicy(path string) (judge.Policy, error) { return judge.LoadPolicy(path) }

// LoopFeatures is [judge.LoopFeatures].
func LoopFeatures() []string { return judge.LoopFeatures() }

// MarshalPolicy is [judge.MarshalPolicy].
func MarshalPolicy(p judge.Policy, calibration any) ([]byte, error) {
	return judge.MarshalPolicy(p, calibration)
}

// MinPauseBudgetJobs is [judge.MinPauseBudgetJobs].
const MinPauseBudgetJobs = judge.MinPauseBudgetJobs

// MinReferenceRuns is [judge.MinReferenceRuns].
const MinReferenceRuns = judge.MinReferenceRuns

// ModelFeature is [judge.ModelFeature].
type ModelFeature = judge.ModelFeature

// NewReference is [judge.NewReference].
func NewReference(perRun [][]judge.PointP) *judge.Reference { return judge.NewReference(perRun) }

// ParseLearnedModel is [judge.ParseLearnedModel].
func ParseLearnedModel(data []byte) (*judge.LearnedModel, error) {
	return judge.ParseLearnedModel(data)
}

// ParsePolicy is [judge.ParsePolicy].
func ParsePolicy(data []byte) (judge.Policy, error) { return judge.ParsePolicy(data) }

// ParsePromiseKind is [judge.ParsePromiseKind].
func ParsePromiseKind(s string) (judge.PromiseKind, error) { return judge.ParsePromiseKind(s) }

// PauseBudget is [judge.PauseBudget].
type PauseBudget = judge.PauseBudget

// PhaseKind is [judge.PhaseKind].
type PhaseKind = judge.PhaseKind

// PhaseKindEdit is [judge.PhaseKindEdit].
const PhaseKindEdit = judge.PhaseKindEdit

// PhaseKindOf is [judge.PhaseKindOf].
func PhaseKindOf(phase string) judge.PhaseKind { return judge.PhaseKindOf(phase) }

// PhaseKindOther is [judge.PhaseKindOther].
const PhaseKindOther = judge.PhaseKindOther

// PhaseKindVerify is [judge.PhaseKindVerify].
const PhaseKindVerify = judge.PhaseKindVerify

// PointP is [judge.PointP].
type PointP = judge.PointP

// Policy is [judge.Policy].
type Policy = judge.Policy

// PolicyFor is [judge.PolicyFor].
func PolicyFor(j jev.Judge) judge.Policy { return judge.PolicyFor(j) }

// Promise is [judge.Promise].
type Promise = judge.Promise

// PromiseConfident is [judge.PromiseConfident].
const PromiseConfident = judge.PromiseConfident

// PromiseExpected is [judge.PromiseExpected].
const PromiseExpected = judge.PromiseExpected

// PromiseKind is [judge.PromiseKind].
type PromiseKind = judge.PromiseKind

// PureJudge is [judge.PureJudge].
type PureJudge = judge.PureJudge

// Recalibration is [judge.Recalibration].
type Recalibration = judge.Recalibration

// Reference is [judge.Reference].
type Reference = judge.Reference

// ReferenceBuckets is [judge.ReferenceBuckets].
var ReferenceBuckets = judge.ReferenceBuckets

// ReferencePoint is [judge.ReferencePoint].
type ReferencePoint = judge.ReferencePoint

// Restandardization is [judge.Restandardization].
type Restandardization = judge.Restandardization

// ShortBasis is [judge.ShortBasis].
func ShortBasis(basis string) string { return judge.ShortBasis(basis) }

// SpendBudget is [judge.SpendBudget].
type SpendBudget = judge.SpendBudget

// StageCertified is [judge.StageCertified].
const StageCertified = judge.StageCertified

// StageRecalibrated is [judge.StageRecalibrated].
const StageRecalibrated = judge.StageRecalibrated

// StageRefit is [judge.StageRefit].
const StageRefit = judge.StageRefit

// StageUncalibrated is [judge.StageUncalibrated].
const StageUncalibrated = judge.StageUncalibrated

// StagedBasis is [judge.StagedBasis].
func StagedBasis(basis string, p judge.Policy) string { return judge.StagedBasis(basis, p) }

// Standing is [judge.Standing].
type Standing = judge.Standing

// StandingOf is [judge.StandingOf].
func StandingOf(basis string) string { return judge.StandingOf(basis) }

// SubModel is [judge.SubModel].
type SubModel = judge.SubModel

// SubModelRecalibration is [judge.SubModelRecalibration].
type SubModelRecalibration = judge.SubModelRecalibration

// Verdict is [judge.Verdict].
type Verdict = judge.Verdict
