package overseer

import (
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// tagsHandler records each series' tags and count, as "name{k=v,…}".
type tagsHandler struct {
	tags   map[string]string
	counts map[string]int64
}

func (h *tagsHandler) WithTags(tags map[string]string) client.MetricsHandler {
	t := maps.Clone(h.tags)
	if t == nil {
		t = map[string]string{}
	}
	maps.Copy(t, tags)
	return &tagsHandler{tags: t, counts: h.counts}
}

func (h *tagsHandler) series(name string) string {
	var kv []string
	for k, v := range h.tags {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

type tagsCounter struct {
	h    *tagsHandler
	name string
}

func (c tagsCounter) Inc(n int64) { c.h.counts[c.h.series(c.name)] += n }

func (h *tagsHandler) Counter(name string) client.MetricsCounter { return tagsCounter{h, name} }
func (h *tagsHandler) Gauge(string) client.MetricsGauge          { return client.MetricsNopHandler.Gauge("") }
func (h *tagsHandler) Timer(string) client.MetricsTimer          { return client.MetricsNopHandler.Timer("") }

// The handles a run keeps tag each series as tagging at every boundary
// did: a verdict's series carries its band, the abstained one's empty band
// included; a failed assessment's carries none; counts add up per series.
// A boundary not waited for because the judge's circuit is open is an
// error outcome but not a judge error, whichever way the run's end met it.
func TestAssessmentMetersTagEachSeries(t *testing.T) {
	h := &tagsHandler{counts: map[string]int64{}}
	a := &assessmentMeters{m: h, mode: string(ModeManage), outcomes: map[assessmentSeries]client.MetricsCounter{},
		latency: h.Timer(metricJudgeLatency), input: h.Counter("in"), output: h.Counter("out")}
	onTrack := Verdict{Band: BandOnTrack}
	abstained := Verdict{Band: BandUnknown}
	flagged := Verdict{Band: BandOffTrack, Flagged: true}
	for _, v := range []*Verdict{&onTrack, &onTrack, &abstained, &flagged} {
		a.record(Assessment{Verdict: v, Latency: time.Millisecond}, nil)
	}
	a.record(Assessment{}, assertError("judge down"))
	a.record(Assessment{}, notWaitedFor) // as notAssessed records
	a.record(Assessment{}, temporal.NewNonRetryableApplicationError("judge failing", JudgeFailingErrorType, nil))
	assert.Equal(t, map[string]int64{
		"overseer_assessments{band=on_track,mode=manage,outcome=ok}":       2,
		"overseer_assessments{band=,mode=manage,outcome=ok}":               1,
		"overseer_assessments{band=off_track,mode=manage,outcome=flagged}": 1,
		"overseer_assessments{mode=manage,outcome=error}":                  3,
		"overseer_judge_errors{kind=error}":                                1,
		"in{}":                                                             0,
		"out{}":                                                            0,
	}, h.counts)
}

type assertError string

func (e assertError) Error() string { return string(e) }
