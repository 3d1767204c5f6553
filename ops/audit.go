package ops

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/overseer"
)

// The formats of an audit record (docs/audit.schema.json).
const (
	// AuditFormat is the format WriteAudit writes: one chain through the
	// whole file, whatever the records' jobs.
	AuditFormat = "overseer-audit/v2"
	// AuditFormatV1 chained each job's records apart, from a genesis anyone
	// could compute, so a job's records dropped or added whole, or a file
	// cut between two jobs, went unseen. VerifyAudit still reads it (a file
	// may outlive the histories it came from) and says what it cannot show.
	AuditFormatV1 = "overseer-audit/v1"
)

// AuditGenesis is the text whose SHA-256 the first line of an audit file
// carries as its prev.
const AuditGenesis = AuditFormat + " genesis"

// DefaultAuditQuery selects the jobs `overseer audit` reads when no query
// is given: every workflow the overseer assessed.
const DefaultAuditQuery = "OverseerStatus IS NOT NULL"

// The kinds of gate event an audit record says.
const (
	AuditOpened    = "opened"
	AuditEscalated = "escalated"
	AuditExpired   = "expired"
	AuditResumed   = "resumed"
	AuditRedone    = "redone"
	AuditAborted   = "aborted"
	// AuditResumeSignal: a resume signal arrived. A signal cannot be
	// refused, and its history does not say whether the overseer took it:
	// the record says who claimed to send it, and what it asked.
	AuditResumeSignal = "resume_signal"
)

// Where an audit record was read from in a run's history.
const (
	// SourceResumeUpdate: the closed gate an accepted overseer.resume
	// update returned.
	SourceResumeUpdate = "resume_update"
	// SourceAbortFailure: the gate a job aborted at failed with
	// (OverseerAborted).
	SourceAbortFailure = "abort_failure"
	// SourceNotification: the input of an overseer.notify activity, or of
	// the notifier workflow a run handed its notifications to (runs whose
	// worker had a notifier).
	SourceNotification = "notification"
	// SourceSignal: an overseer.resume signal.
	SourceSignal = "signal"
)

// AuditJob is the job an audit record belongs to.
type AuditJob struct {
	WorkflowID string `json:"workflow_id"`
	// RunID is the job's run the query listed (its latest): a job that
	// continued as new is one job, and its records chain together.
	RunID        string `json:"run_id"`
	WorkflowType string `json:"workflow_type"`
	// StartedBy is who started the job (memo overseer.started_by), when
	// it says.
	StartedBy string `json:"started_by,omitempty"`
}

// AuditPolicy is the pause policy a run pinned when it started.
type AuditPolicy struct {
	Name             string  `json:"name,omitempty"`
	PauseAtOrBelow   float64 `json:"pause_at_or_below"`
	BreachConfidence float64 `json:"breach_confidence"`
	BreachSeverity   float64 `json:"breach_severity"`
	// Promise is the policy's false-pause promise in words; empty when its
	// thresholds were not certified.
	Promise string `json:"promise,omitempty"`
	// SHA256 is the hex SHA-256 of the policy's JSON as the run pinned it
	// (in its configuration marker), so two records name the same policy
	// exactly when it is equal.
	SHA256 string `json:"sha256"`
}

// AuditRecord is one gate event of a job: one line of an audit file. Its
// fields are encoded in this order, and Prev and Digest chain it to the
// line before it (see [VerifyAudit]).
type AuditRecord struct {
	Format string `json:"format"`
	// Line is the record's line in the file, from 1, and Lines how many the
	// file has, so a file cut between two jobs says so at its last line.
	// WriteAudit fills them in; absent in overseer-audit/v1.
	Line  int      `json:"line,omitempty"`
	Lines int      `json:"lines,omitempty"`
	Job   AuditJob `json:"job"`
	// Seq is the record's number among its job's records, from 1; Of is
	// how many the job has in the file.
	Seq int `json:"seq"`
	Of  int `json:"of"`
	// Run is the run the event happened in.
	Run   string `json:"run"`
	Gate  string `json:"gate,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Kind is opened, escalated, expired, resumed, redone, aborted or
	// resume_signal.
	Kind string    `json:"kind"`
	At   time.Time `json:"at"`
	// By is who resumed, redid or aborted (as the request said); Identity
	// is the Temporal client identity that sent the update or signal.
	By       string   `json:"by,omitempty"`
	Identity string   `json:"identity,omitempty"`
	Action   string   `json:"action,omitempty"`
	Note     string   `json:"note,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Evidence []string `json:"evidence,omitempty"`
	// Needed and NeededBy are the judgement of the pause once its gate
	// closed (overseer.Gate.Needed).
	Needed   *bool  `json:"needed,omitempty"`
	NeededBy string `json:"needed_by,omitempty"`
	// Rule is the deadline rule that escalated or closed the gate.
	Rule string `json:"rule,omitempty"`
	// Sources are where in the history the event was read, sorted.
	Sources []string `json:"sources"`
	// Mode, Policy and ModelVersion are the run's pinned configuration and
	// the model of the latest assessment of the gate's phase before the
	// event; Stage is the calibration stage that assessment's basis names.
	Mode         string       `json:"mode,omitempty"`
	Policy       *AuditPolicy `json:"policy,omitempty"`
	ModelVersion string       `json:"model_version,omitempty"`
	Stage        string       `json:"calibration_stage,omitempty"`
	// Prev is the hex SHA-256 of the file's previous line (without its
	// newline), whichever job it is of, or for the first line of
	// AuditGenesis. (In overseer-audit/v1: of the job's previous line, or
	// for its first of "overseer-audit/v1 genesis WORKFLOW_ID RUN_ID".)
	Prev string `json:"prev"`
	// Digest is the hex SHA-256 of the record's line with Digest empty.
	Digest string `json:"digest"`
}

// auditGenesisV1 is the text whose SHA-256 the first record of a job
// carries as Prev in overseer-audit/v1.
func auditGenesisV1(workflowID, runID string) string {
	return AuditFormatV1 + " genesis " + workflowID + " " + runID
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// encodeAudit is a record's canonical line: JSON with the struct's field
// order, times in UTC, no HTML escaping, no newline.
func encodeAudit(r AuditRecord) ([]byte, error) {
	r.At = r.At.UTC()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// sealAudit numbers the records in order and chains each to the one
// before it, and returns their lines.
func sealAudit(recs []AuditRecord) ([][]byte, error) {
	prev := sha256Hex([]byte(AuditGenesis))
	lines := make([][]byte, 0, len(recs))
	for i, r := range recs {
		r.Format, r.Line, r.Lines = AuditFormat, i+1, len(recs)
		r.Prev, r.Digest = prev, ""
		unsealed, err := encodeAudit(r)
		if err != nil {
			return nil, err
		}
		r.Digest = sha256Hex(unsealed)
		line, err := encodeAudit(r)
		if err != nil {
			return nil, err
		}
		prev = sha256Hex(line)
		lines = append(lines, line)
	}
	return lines, nil
}

// WriteAudit writes records as JSONL, one line each, in the order given
// (Audit's: by job, and a job's by Seq), in the format AuditFormat: Line,
// Lines, Prev and Digest filled in. It returns the head: the hex SHA-256 of
// the file (what sha256sum prints), which `overseer audit verify` prints
// too and checks with --head, to keep apart from the file.
func WriteAudit(w io.Writer, recs []AuditRecord) (string, error) {
	lines, err := sealAudit(recs)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, l := range lines {
		l = append(l, '\n')
		h.Write(l)
		if _, err := w.Write(l); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// AuditSummary is what VerifyAudit read from a valid file.
type AuditSummary struct {
	Records, Jobs int
	// Head is the hex SHA-256 of the whole file, as WriteAudit returned it.
	Head string
	// Format is the file's format: AuditFormat, or AuditFormatV1, whose
	// chain cannot show a job dropped or added whole (only the head can).
	Format string
}

// ErrAuditTampered: an audit file is not as `overseer audit` wrote it.
var ErrAuditTampered = errors.New("the audit file was changed after it was written")

// ErrBadAuditHead: the head given to check an audit file against is not a
// hex SHA-256.
var ErrBadAuditHead = errors.New("invalid audit head")

// VerifyAudit checks an audit file: every line is a canonical record whose
// digest matches it; each job's records come together and in order (Seq
// 1…Of), the jobs in order, and no job's records stop before Of; each line
// says its place in the file (Line of Lines, the same Lines throughout)
// and carries the SHA-256 of the line before it (of AuditGenesis for the
// first), and the file does not stop before Lines. So a job's records
// dropped whole, a file cut between two jobs, and records inserted from
// another audit file each fail at a line. The problem is returned in one
// sentence naming the line, wrapping ErrAuditTampered: the first a record
// or its job's order shows, else the first line the file's chain breaks at
// (a record moved breaks both, and its job says better what happened).
//
// A file in AuditFormatV1 is checked by its own rule: each job's records
// chained apart (Prev), with no Line or Lines.
//
// What the chain cannot show, since it holds no secret, is a file sealed
// again after it was changed: [VerifyAuditHead] compares the head too.
func VerifyAudit(r io.Reader) (AuditSummary, error) {
	type chain struct {
		prev     string
		seq, of  int
		lastLine int
	}
	jobs := map[[2]string]*chain{}
	var order [][2]string
	var fileFormat string // line 1's
	lines := 0            // how many records line 1 says the file has
	prev := sha256Hex([]byte(AuditGenesis))
	h := sha256.New()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	bad := func(format string, args ...any) (AuditSummary, error) {
		return AuditSummary{}, fmt.Errorf("%w: line %d %s", ErrAuditTampered, n, fmt.Sprintf(format, args...))
	}
	// The first line the file's chain breaks at: said only once the jobs'
	// own order held to the end (see above).
	var broken error
	breaks := func(format string, args ...any) {
		if broken == nil {
			_, broken = bad(format, args...)
		}
	}
	for sc.Scan() {
		n++
		line := sc.Bytes()
		h.Write(line)
		h.Write([]byte("\n"))
		var rec AuditRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return bad("is not an audit record (%s): it was edited or is not from overseer audit", strings.TrimPrefix(err.Error(), "json: "))
		}
		switch {
		case n == 1 && rec.Format != AuditFormat && rec.Format != AuditFormatV1:
			return bad("has format %q, not %s (or the older %s)", rec.Format, AuditFormat, AuditFormatV1)
		case n == 1:
			fileFormat, lines = rec.Format, rec.Lines
		case rec.Format != fileFormat:
			return bad("has format %q where line 1 has %q: records from another audit file were inserted", rec.Format, fileFormat)
		}
		canon, err := encodeAudit(rec)
		if err != nil || !bytes.Equal(canon, line) {
			return bad("of job %q was edited: it is not the canonical encoding of its record", rec.Job.WorkflowID)
		}
		digest := rec.Digest
		rec.Digest = ""
		unsealed, _ := encodeAudit(rec)
		if sha256Hex(unsealed) != digest {
			return bad("(record %d of job %q) was edited: its digest does not match its content", rec.Seq, rec.Job.WorkflowID)
		}
		if fileFormat == AuditFormatV1 && (rec.Line != 0 || rec.Lines != 0) {
			return bad("has format %s but a line and lines, which that format has not: it was edited", fileFormat)
		}
		key := [2]string{rec.Job.WorkflowID, rec.Job.RunID}
		c, ok := jobs[key]
		last := len(order) - 1
		switch {
		case !ok && last >= 0 && (key[0] < order[last][0] || key[0] == order[last][0] && key[1] < order[last][1]):
			return bad("(job %q) comes after job %q: records were reordered", key[0], order[last][0])
		case ok && key != order[last]:
			return bad("(record %d of job %q) comes after records of job %q: records were reordered", rec.Seq, key[0], order[last][0])
		case !ok:
			c = &chain{prev: sha256Hex([]byte(auditGenesisV1(key[0], key[1]))), of: rec.Of}
			jobs[key] = c
			order = append(order, key)
		}
		switch {
		case rec.Seq <= c.seq:
			return bad("is record %d of job %q, after its record %d: records were reordered or repeated", rec.Seq, key[0], c.seq)
		case rec.Seq != c.seq+1:
			return bad("is record %d of job %q where its record %d belongs: a record was dropped or moved", rec.Seq, key[0], c.seq+1)
		case rec.Of != c.of:
			return bad("says job %q has %d records where its first said %d: a record was edited", key[0], rec.Of, c.of)
		case fileFormat == AuditFormatV1 && rec.Prev != c.prev:
			return bad("(record %d of job %q) does not follow the job's previous record: a record before it was edited, dropped or moved", rec.Seq, key[0])
		}
		c.prev, c.seq, c.lastLine = sha256Hex(line), rec.Seq, n
		if fileFormat == AuditFormat {
			// The file's own chain: what a job's chain cannot see.
			switch {
			case rec.Lines != lines:
				breaks("says its file has %s where line 1 says %d: records from another audit file were inserted", records(rec.Lines), lines)
			case rec.Line > n:
				breaks("is the file's record %d where its record %d belongs: %s before it %s dropped", rec.Line, n, records(rec.Line-n), wasWere(rec.Line-n))
			case rec.Line < n:
				breaks("is the file's record %d where its record %d belongs: records were inserted or repeated before it", rec.Line, n)
			case rec.Line > rec.Lines:
				breaks("says it is record %d of a file of %d: records were added after the file's last", rec.Line, rec.Lines)
			case rec.Prev != prev && n == 1:
				breaks("does not start the file's chain (its prev is not the SHA-256 of %q): records before it were dropped", AuditGenesis)
			case rec.Prev != prev:
				breaks("does not follow line %d (its prev is not that line's SHA-256): records were dropped or inserted before it and the file renumbered", n-1)
			}
			prev = sha256Hex(line)
		}
	}
	if err := sc.Err(); err != nil {
		return AuditSummary{}, fmt.Errorf("read the audit file: %w", err)
	}
	last := n
	for _, key := range order {
		if c := jobs[key]; c.seq != c.of {
			n = c.lastLine
			return bad("is the last of job %q's records, record %d of %d: the records after it were dropped", key[0], c.seq, c.of)
		}
	}
	if broken != nil {
		return AuditSummary{}, broken
	}
	if fileFormat == AuditFormat && last < lines {
		n = last
		return bad("is the file's last, record %d of %d: the %s after it %s dropped", last, lines, records(lines-last), wasWere(lines-last))
	}
	return AuditSummary{Records: last, Jobs: len(jobs), Head: hex.EncodeToString(h.Sum(nil)), Format: fileFormat}, nil
}

// VerifyAuditHead is VerifyAudit, and checks that the file's head is head,
// the one WriteAudit returned (`overseer audit` printed) when it wrote the
// file: a file changed and sealed again passes VerifyAudit, and only the
// head, kept apart from the file, shows it.
func VerifyAuditHead(r io.Reader, head string) (AuditSummary, error) {
	want, err := ParseAuditHead(head)
	if err != nil {
		return AuditSummary{}, err
	}
	sum, err := VerifyAudit(r)
	if err != nil {
		return AuditSummary{}, err
	}
	if sum.Head != want && sum.Records == 0 {
		return AuditSummary{}, fmt.Errorf("%w: the file holds no record, and the head you kept (%s) is not an empty file's: its records were all dropped", ErrAuditTampered, want)
	}
	if sum.Head != want {
		return AuditSummary{}, fmt.Errorf("%w: line %d is the file's last, and the file's head sha256 is %s, not the head you kept (%s): records were cut, added or changed and the file sealed again, or that head is another file's",
			ErrAuditTampered, sum.Records, sum.Head, want)
	}
	return sum, nil
}

// ParseAuditHead reads a head as `overseer audit` printed it: 64 hex
// digits, either case, "sha256:" before them allowed.
func ParseAuditHead(head string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(head), "sha256:"))
	if _, err := hex.DecodeString(h); err != nil || len(h) != 2*sha256.Size {
		return "", fmt.Errorf("%w: %q is not 64 hex digits: give the head sha256 overseer audit printed", ErrBadAuditHead, head)
	}
	return h, nil
}

// wasWere is the verb for n records.
func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// records is "1 record" or "N records".
func records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}

// AuditOptions select the jobs Audit reads.
type AuditOptions struct {
	// Query is a Temporal visibility query. If not set, DefaultAuditQuery.
	Query string
	// Limit caps the number of workflows listed. If not set, no cap.
	Limit int
	// DataConverter reads the histories' payloads, as in ExportOptions.
	DataConverter converter.DataConverter
	// Namespace is the client's namespace, as in ExportOptions.
	Namespace string
}

// AuditResult is what Audit found.
type AuditResult struct {
	// Records are the gate events, ordered by job (workflow id, then run
	// id) and within a job by time; not yet sealed (WriteAudit does).
	Records []AuditRecord
	// Jobs counts the jobs read; Running those of them still running
	// (their open gates may not be recorded yet).
	Jobs, Running int
	// Encrypted lists the jobs skipped because a codec encrypted their
	// histories and no DataConverter with it was given.
	Encrypted []string
}

// Audit reads the gate events of the jobs that match the query from their
// histories (see [AuditOfHistory]), running jobs included.
func Audit(ctx context.Context, c client.Client, opts AuditOptions) (AuditResult, error) {
	query := strings.TrimSpace(opts.Query)
	if query == "" {
		query = DefaultAuditQuery
	}
	dc := opts.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	var res AuditResult
	var encrypted error
	err := listJobs(ctx, c, query, opts.Limit, func(e *workflowpb.WorkflowExecutionInfo) error {
		id, runID := e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()
		recs, err := auditOfJob(ctx, c, opts.Namespace, id, runID, e.GetMemo(), dc, opts.DataConverter == nil)
		if errors.Is(err, ErrEncrypted) {
			res.Encrypted = append(res.Encrypted, id)
			if encrypted == nil {
				encrypted = err
			}
			return nil
		}
		if err != nil {
			return err
		}
		res.Jobs++
		if st := e.GetStatus(); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || st == enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED {
			res.Running++
		}
		res.Records = append(res.Records, recs...)
		return nil
	})
	if err != nil {
		return AuditResult{}, err
	}
	if res.Jobs == 0 && encrypted != nil {
		return AuditResult{}, encrypted
	}
	sortAudit(res.Records)
	return res, nil
}

// sortAudit orders records by job, and each job's (already numbered)
// records by Seq.
func sortAudit(recs []AuditRecord) {
	sort.SliceStable(recs, func(i, j int) bool {
		a, b := recs[i].Job, recs[j].Job
		if a.WorkflowID != b.WorkflowID {
			return a.WorkflowID < b.WorkflowID
		}
		if a.RunID != b.RunID {
			return a.RunID < b.RunID
		}
		return recs[i].Seq < recs[j].Seq
	})
}

// auditOfJob reads the gate events of the job whose latest run is runID,
// and of the runs it continued from, numbered in order. Its starter is
// that of memo, the job's memo as listed (it may have been upserted), else
// that of the memo its runs started with.
func auditOfJob(ctx context.Context, c client.Client, namespace, id, runID string, memo *commonpb.Memo, dc converter.DataConverter, withoutCodec bool) ([]AuditRecord, error) {
	job := AuditJob{WorkflowID: id, RunID: runID, StartedBy: memoString(memo, overseer.StartedByMemoKey, HistoryConverter(dc, namespace, id, nil))}
	var runs [][]AuditRecord
	seen := map[string]bool{}
	for r := runID; r != "" && !seen[r]; {
		seen[r] = true
		events, err := runHistory(ctx, c, id, r, withoutCodec)
		if err != nil {
			return nil, err
		}
		rdc := HistoryConverter(dc, namespace, id, events)
		recs, from := auditOfRun(events, r, rdc)
		runs = append([][]AuditRecord{recs}, runs...)
		if started := startedOf(events); started != nil {
			if job.WorkflowType == "" {
				job.WorkflowType = started.GetWorkflowType().GetName()
			}
			if by := memoString(started.GetMemo(), overseer.StartedByMemoKey, rdc); by != "" && job.StartedBy == "" {
				job.StartedBy = by
			}
		}
		r = from
	}
	var out []AuditRecord
	for _, recs := range runs {
		out = append(out, recs...)
	}
	for i := range out {
		out[i].Job, out[i].Seq, out[i].Of = job, i+1, len(out)
	}
	return out, nil
}

func startedOf(events []*historypb.HistoryEvent) *historypb.WorkflowExecutionStartedEventAttributes {
	if len(events) == 0 {
		return nil
	}
	return events[0].GetWorkflowExecutionStartedEventAttributes()
}

func memoString(m *commonpb.Memo, key string, dc converter.DataConverter) string {
	p, ok := m.GetFields()[key]
	if !ok {
		return ""
	}
	var s string
	if dc.FromPayload(p, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// AuditOfHistory reads the gate events of one run from its history, in
// order, without their job (Job, Seq, Of are left for the caller):
//
//   - the closed gate each accepted overseer.resume update returned, and
//     the gate a job aborted at failed with, say when the gate opened (with
//     its reason and evidence), when it was escalated, and how it closed:
//     resumed, redone, aborted or expired, by whom, with what note, and
//     whether the pause was needed;
//   - the notifications of a run whose worker had a notifier (the
//     overseer.notify activities' inputs and the notifier workflow's) say
//     every event of every gate, those still open and those closed by a
//     signal or a deadline included;
//   - each overseer.resume signal is a resume_signal record: who it says
//     sent it and what it asked, since its history does not say whether
//     the overseer took it.
//
// An event read from several places is one record, its Sources listing
// them. Each record carries the run's pinned mode and policy and the model
// version and calibration stage of the latest assessment of its phase.
func AuditOfHistory(events []*historypb.HistoryEvent, runID string, dc converter.DataConverter) []AuditRecord {
	recs, _ := auditOfRun(events, runID, dc)
	return recs
}

// auditKinds orders the kinds of one gate's events that share a time.
var auditKinds = map[string]int{AuditOpened: 0, AuditEscalated: 1, AuditResumeSignal: 2, AuditResumed: 3, AuditRedone: 3, AuditAborted: 3, AuditExpired: 3}

// auditOfRun is AuditOfHistory, and the run this one continued from.
func auditOfRun(events []*historypb.HistoryEvent, runID string, dc converter.DataConverter) ([]AuditRecord, string) {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	h := RecordOfHistoryWith(events, dc)
	type pinnedConfig struct {
		Mode         string           `json:"mode"`
		Policy       *overseer.Policy `json:"policy"`
		ModelVersion string           `json:"model_version"`
	}
	var cfg pinnedConfig
	var pinnedPolicy json.RawMessage // the policy's JSON as the run pinned it
	type found struct {
		rec AuditRecord
		// pos is the id of the event the record was read from.
		pos int64
	}
	var all []*found
	byKey := map[[2]string]*found{}
	add := func(r AuditRecord, source string, pos int64) {
		r.Format, r.Run, r.At = AuditFormat, runID, r.At.UTC()
		r.Sources = []string{source}
		if r.Kind == AuditResumeSignal {
			all = append(all, &found{r, pos})
			return
		}
		key := [2]string{r.Gate, r.Kind}
		f, ok := byKey[key]
		if !ok {
			f = &found{r, pos}
			byKey[key] = f
			all = append(all, f)
			return
		}
		// The same event read again: fill in what the first lacked.
		m := &f.rec
		for _, s := range m.Sources {
			if s == source {
				return
			}
		}
		m.Sources = append(m.Sources, source)
		sort.Strings(m.Sources)
		fill := func(dst *string, src string) {
			if *dst == "" {
				*dst = src
			}
		}
		fill(&m.Phase, r.Phase)
		fill(&m.By, r.By)
		fill(&m.Identity, r.Identity)
		fill(&m.Action, r.Action)
		fill(&m.Note, r.Note)
		fill(&m.Reason, r.Reason)
		fill(&m.NeededBy, r.NeededBy)
		fill(&m.Rule, r.Rule)
		if len(m.Evidence) == 0 {
			m.Evidence = r.Evidence
		}
		if m.Needed == nil {
			m.Needed = r.Needed
		}
	}
	fromGate := func(g overseer.Gate, source, identity string, pos int64) {
		add(AuditRecord{Gate: g.ID, Phase: g.Phase, Kind: AuditOpened, At: g.PausedAt, Reason: g.Reason, Evidence: g.Evidence}, source, pos)
		if g.EscalatedAt != nil {
			add(AuditRecord{Gate: g.ID, Phase: g.Phase, Kind: AuditEscalated, At: *g.EscalatedAt, Reason: g.Reason, Rule: g.EscalatedBy}, source, pos)
		}
		if g.ResumedAt == nil {
			return
		}
		r := AuditRecord{Gate: g.ID, Phase: g.Phase, Kind: closingKind(g.Action, g.Expired), At: *g.ResumedAt, By: g.By, Action: string(g.Action),
			Note: g.Note, Reason: g.Reason, Evidence: g.Evidence, Needed: g.Needed, NeededBy: string(g.NeededBy), Rule: g.ExpiredBy}
		if g.By != "" {
			r.Identity = identity
		}
		add(r, source, pos)
	}
	fromNotification := func(ev notifyEvent, pos int64) {
		kind := string(ev.Kind)
		switch ev.Kind {
		case overseer.GateResumed, overseer.GateAborted:
			kind = closingKind(ev.Action, false)
		case overseer.GateOpened:
			ev.At = ev.OpenedAt
		}
		add(AuditRecord{Gate: ev.Gate, Phase: ev.Phase, Kind: kind, At: ev.At, By: ev.By, Action: string(ev.Action), Note: ev.Note,
			Reason: ev.Reason, Evidence: ev.Evidence, Needed: ev.Needed, NeededBy: ev.NeededBy, Rule: ev.Rule}, SourceNotification, pos)
	}
	seenKeys := map[string]bool{}
	notification := func(ev notifyEvent, pos int64) {
		if ev.IdempotencyKey != "" {
			if seenKeys[ev.IdempotencyKey] {
				return // a retry of the same notification
			}
			seenKeys[ev.IdempotencyKey] = true
		}
		fromNotification(ev, pos)
	}
	updates := map[int64]string{} // accepted event id → the sender's identity
	pinned := false
	for _, e := range events {
		pos := e.GetEventId()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			if pinned || a.GetMarkerName() != "SideEffect" {
				continue
			}
			var c pinnedConfig
			if dc.FromPayloads(a.GetDetails()["data"], &c) == nil && c.Mode != "" && c.Policy != nil {
				cfg, pinned = c, true
				var raw struct {
					Policy json.RawMessage `json:"policy"`
				}
				if dc.FromPayloads(a.GetDetails()["data"], &raw) == nil {
					pinnedPolicy = raw.Policy
				}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			a := e.GetWorkflowExecutionUpdateAcceptedEventAttributes()
			if a.GetAcceptedRequest().GetInput().GetName() == overseer.ResumeName {
				updates[pos] = a.GetAcceptedRequest().GetMeta().GetIdentity()
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			a := e.GetWorkflowExecutionUpdateCompletedEventAttributes()
			identity, ok := updates[a.GetAcceptedEventId()]
			var g overseer.Gate
			if ok && a.GetOutcome().GetSuccess() != nil && dc.FromPayloads(a.GetOutcome().GetSuccess(), &g) == nil && g.ID != "" {
				fromGate(g, SourceResumeUpdate, identity, pos)
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			for f := e.GetWorkflowExecutionFailedEventAttributes().GetFailure(); f != nil; f = f.GetCause() {
				if info := f.GetApplicationFailureInfo(); info != nil && info.GetType() == overseer.AbortedErrorType {
					var g overseer.Gate
					if info.GetDetails() != nil && dc.FromPayloads(info.GetDetails(), &g) == nil && g.ID != "" {
						fromGate(g, SourceAbortFailure, "", pos)
					}
					break
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			var ev notifyEvent
			if a.GetActivityType().GetName() == overseer.NotifyActivityName && dc.FromPayloads(a.GetInput(), &ev) == nil && ev.Gate != "" {
				notification(ev, pos)
			}
		case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			var in struct {
				Events []notifyEvent `json:"events"`
			}
			if a.GetWorkflowType().GetName() == overseer.NotifyWorkflowName && dc.FromPayloads(a.GetInput(), &in) == nil {
				for _, ev := range in.Events {
					if ev.Gate != "" {
						notification(ev, pos)
					}
				}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
			a := e.GetWorkflowExecutionSignaledEventAttributes()
			if a.GetSignalName() != overseer.ResumeName {
				continue
			}
			r := AuditRecord{Kind: AuditResumeSignal, At: e.GetEventTime().AsTime(), Identity: a.GetIdentity()}
			var req overseer.ResumeRequest
			if err := dc.FromPayloads(a.GetInput(), &req); err != nil {
				r.Reason = "the signal's request cannot be read: " + err.Error()
			} else {
				r.Gate, r.By, r.Note, r.Action, r.Needed = req.Gate, req.By, req.Note, string(req.Action), req.Needed
			}
			add(r, SourceSignal, pos)
		}
	}
	// What was in force: the pinned configuration, and the latest
	// assessment of the gate's phase recorded before the event was read.
	var policy *AuditPolicy
	if pinned {
		p := *cfg.Policy
		raw := []byte(pinnedPolicy)
		if len(raw) == 0 {
			raw, _ = json.Marshal(p)
		}
		policy = &AuditPolicy{Name: p.Name, PauseAtOrBelow: p.PauseAtOrBelow, BreachConfidence: p.BreachConfidence,
			BreachSeverity: p.BreachSeverity, SHA256: sha256Hex(raw)}
		if p.Promise.Certified() {
			policy.Promise = p.Promise.String()
		}
	}
	phases := map[string]string{}
	for _, f := range all {
		if f.rec.Gate != "" && f.rec.Phase != "" {
			phases[f.rec.Gate] = f.rec.Phase
		}
	}
	out := make([]AuditRecord, 0, len(all))
	for _, f := range all {
		r := f.rec
		if r.Phase == "" {
			r.Phase = phases[r.Gate]
		}
		r.Mode, r.Policy, r.ModelVersion = cfg.Mode, policy, cfg.ModelVersion
		for i := len(h.assessedAt) - 1; i >= 0; i-- {
			s := h.Steps[i]
			if h.assessedAt[i] > f.pos || (r.Phase != "" && s.Phase != r.Phase) {
				continue
			}
			if a := s.Assessment; a != nil && a.Error == "" {
				if a.ModelVersion != "" {
					r.ModelVersion = a.ModelVersion
				}
				r.Stage = StageOfBasis(a.Basis)
			}
			break
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		if a.Gate != b.Gate {
			return a.Gate < b.Gate
		}
		return auditKinds[a.Kind] < auditKinds[b.Kind]
	})
	return out, h.continuedFrom
}

// notifyEvent is a notification as recorded, with the fields a newer
// GateEvent may carry.
type notifyEvent struct {
	overseer.GateEvent
	Evidence []string `json:"evidence"`
	Needed   *bool    `json:"needed"`
	NeededBy string   `json:"needed_by"`
}

func closingKind(a overseer.Action, expired bool) string {
	switch {
	case expired:
		return AuditExpired
	case a == overseer.ActionAbort:
		return AuditAborted
	case a == overseer.ActionRedo:
		return AuditRedone
	}
	return AuditResumed
}

// StageOfBasis is the calibration stage a learned verdict's basis names
// ("stage 1: recalibrated (intercept) on 34 CoroJob jobs"), or "" when it
// names none (another judge).
func StageOfBasis(basis string) string {
	for _, part := range strings.Split(basis, "; ") {
		if strings.HasPrefix(part, "stage ") {
			return part
		}
	}
	return ""
}
