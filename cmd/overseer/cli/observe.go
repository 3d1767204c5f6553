package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/supervision"
)

// Observe runs the offline in-phase supervisor on one snapshot.
type Observe struct{}

// Synopsis implements Command.
func (*Observe) Synopsis() string {
	return "run the in-phase supervisor offline on a JSON snapshot (--snapshot FILE, --json)"
}

// Run implements Command.
func (*Observe) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("observe", out)
	snapPath := fs.String("snapshot", "", "snapshot file (JSON): scope, sequence, task, output, recent events, state, evidence")
	answers := fs.String("answers", "", "scripted judge: a JSON object of check id (or key) → probability; default: the heuristic judge")
	no := fs.Float64("no", 0.2, "probabilities at or below this are NO")
	yes := fs.Float64("yes", 0.8, "probabilities at or above this are YES")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if *snapPath == "" {
		return fmt.Errorf("%w: give --snapshot FILE", ErrUsage)
	}
	snap, err := loadSnapshot(*snapPath)
	if err != nil {
		return err
	}
	var judge jev.Judge = supervision.HeuristicJudge{}
	if *answers != "" {
		if judge, err = answersJudge(*answers); err != nil {
			return err
		}
	}
	sup, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: judge, Thresholds: supervision.Thresholds{No: *no, Yes: *yes}})
	if err != nil {
		return fmt.Errorf("%w: --no %v --yes %v: %v", ErrUsage, *no, *yes, err)
	}
	d := sup.ObserveSnapshot(ctx, snap)
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	writeDecision(out, d)
	return nil
}

func loadSnapshot(path string) (supervision.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return supervision.Snapshot{}, fmt.Errorf("read snapshot: %w", err)
	}
	var snap supervision.Snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&snap); err != nil {
		return supervision.Snapshot{}, fmt.Errorf("snapshot %s is not a valid snapshot: %w", path, err)
	}
	if err := snap.Scope.Validate(); err != nil {
		return supervision.Snapshot{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return snap, nil
}

// answersJudge answers every check from a file of probabilities.
func answersJudge(path string) (jev.Judge, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read answers: %w", err)
	}
	var probs map[string]float64
	if err := json.Unmarshal(data, &probs); err != nil {
		return nil, fmt.Errorf("answers %s must be a JSON object of check → probability: %w", path, err)
	}
	return jev.JudgeFunc(func(_ context.Context, req jev.Request) (*jev.Response, error) {
		resp := &jev.Response{ModelVersion: "scripted:" + path, Answers: map[string]jev.Answer{}}
		for k := range req.Questions {
			_, id, _ := strings.Cut(k, "__")
			p, ok := probs[k]
			if !ok {
				p, ok = probs[id]
			}
			if ok {
				resp.Answers[k] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(p)}
			}
		}
		return resp, nil
	}), nil
}

func writeDecision(out io.Writer, d supervision.Decision) {
	fmt.Fprintf(out, "Decision: %s (%s)\n", d.Status, d.Reason)
	if d.Err != "" {
		fmt.Fprintf(out, "Error:    %s\n", strings.ReplaceAll(d.Err, "\n", "; "))
	}
	r := d.Report
	if r == nil {
		fmt.Fprintln(out, "No report: the supervisor abstained, skipped or failed; no completion conclusion is drawn.")
		return
	}
	fmt.Fprintf(out, "Advice:   %s (%s)\n", r.Selected.Advice, r.Selected.Responsibility)
	fmt.Fprintf(out, "Verified revision: %v   Truncated: %v   Model: %s   Tokens: %d in, %d out\n",
		r.VerifiedRevision, r.Truncated, r.Model, r.Usage.InputTokens, r.Usage.OutputTokens)
	fmt.Fprintln(out, "\nFindings:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CHECK\tPROBABILITY\tTRUTH")
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "  %s\t%.2f\t%s\n", f.Key, f.Probability, f.Truth)
	}
	tw.Flush()
	fmt.Fprintln(out, "\nProposals (in order; the selected one is marked):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tPRIORITY\tADVICE\tREASON\tCONFIDENCE\tRESPONSIBILITY")
	for _, p := range r.Proposals {
		mark := ""
		if p == r.Selected {
			mark = "→"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%.2f\t%s\n", mark, p.Priority, p.Advice, p.Reason, p.Confidence, p.Responsibility)
	}
	tw.Flush()
}
