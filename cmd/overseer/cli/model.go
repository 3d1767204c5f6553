package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// ModelCmd operates the model registry stored in Temporal: model list,
// show, promote and rollback.
type ModelCmd struct{}

// Synopsis implements Command.
func (*ModelCmd) Synopsis() string {
	return "the learned models stored in Temporal: model list [--type T] | show VERSION | promote --model FILE --policy FILE --by NAME | rollback --by NAME"
}

const modelUsage = `Usage:
  overseer model list [--type T] [--json]
  overseer model show VERSION [--type T] [--json]
  overseer model promote --model FILE --policy FILE [--type T] --by NAME [--note TEXT] [--figures FILE] [--json]
  overseer model rollback [--type T] --by NAME [--note TEXT] [--json]

Workers started with --model-registry give each new job the current model of its
workflow type (else of the default type "*") and keep it for the job's whole run.
Run ` + "`overseer model <subcommand> -h`" + ` for a subcommand's flags.`

// Run implements Command.
func (*ModelCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	return runSubcommand(ctx, args, out, modelUsage, modelSubcommands())
}

func modelSubcommands() []subcommand {
	return []subcommand{
		{"list", modelList}, {"show", modelShow}, {"promote", modelPromote}, {"rollback", modelRollback},
	}
}

func (*ModelCmd) subcommandNames() []string { return subcommandNames(modelSubcommands()) }

// registryConn dials the server and hosts the registry workflow while the
// command runs, so that it works before any worker uses the registry.
type registryConn struct {
	c    client.Client
	w    sdkworker.Worker
	ctx  context.Context
	done context.CancelFunc
}

func dialRegistry(ctx context.Context, conn *connFlags) (*registryConn, error) {
	c, err := conn.dial(ctx)
	if err != nil {
		return nil, err
	}
	w := registry.NewWorker(c, sdkworker.Options{})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("host the model registry: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, conn.timeout)
	return &registryConn{c: c, w: w, ctx: rctx, done: cancel}, nil
}

func (r *registryConn) Close() {
	r.done()
	r.w.Stop()
	r.c.Close()
}

func modelList(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("model list", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", "", "only this workflow type (* is the default type)")
	asJSON := fs.Bool("json", false, "print as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	r, err := dialRegistry(ctx, &conn)
	if err != nil {
		return err
	}
	defer r.Close()
	var q registry.Query
	if *typ != "" {
		q.Types = []string{*typ}
	}
	st, err := registry.Get(r.ctx, r.c, q)
	if errors.Is(err, registry.ErrNoRegistry) {
		st, err = registry.State{Types: []registry.TypeModels{}}, nil
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, st)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tVERSION\tCURRENT\tPROMOTED\tBY\tPOLICY\tNOTE")
	n := 0
	for _, t := range st.Types {
		for i := len(t.Versions) - 1; i >= 0; i-- { // newest first
			v := t.Versions[i]
			current := ""
			if v.Version == t.Current {
				current = "current"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Type, v.Version, current, v.PromotedAt.Format(time.RFC3339), v.By, v.PolicyName, v.Note)
			n++
		}
	}
	tw.Flush()
	if n == 0 {
		if *typ != "" {
			fmt.Fprintf(out, "(no model promoted for type %s: its jobs use the default type's model, else the worker's)\n", *typ)
		} else {
			fmt.Fprintln(out, "(no model promoted: jobs use the worker's model)")
		}
	}
	return nil
}

func modelShow(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("model show", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", "", "only this workflow type's version (* is the default type)")
	asJSON := fs.Bool("json", false, "print as JSON, with the model and policy files")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	version, err := oneArg(pos, "model version")
	if err != nil {
		return err
	}
	r, err := dialRegistry(ctx, &conn)
	if err != nil {
		return err
	}
	defer r.Close()
	q := registry.Query{Version: version, Content: true}
	if *typ != "" {
		q.Types = []string{*typ}
	}
	st, err := registry.Get(r.ctx, r.c, q)
	noRegistry := errors.Is(err, registry.ErrNoRegistry)
	if err != nil && !noRegistry {
		return err
	}
	// Every verdict of a job without a promoted model names the shipped
	// version: show that model rather than refuse it (a promoted version of
	// the same name, found above, comes first).
	if (noRegistry || len(st.Types) == 0) && isShippedVersion(version) {
		return writeShipped(out, *asJSON)
	}
	if noRegistry {
		return fmt.Errorf("version %s is not in the model registry: no model was promoted in this namespace", version)
	}
	if len(st.Types) == 0 {
		where := "the model registry"
		if *typ != "" {
			where += " for type " + *typ
		}
		return fmt.Errorf("version %s is not in %s (overseer model list shows the versions)", version, where)
	}
	if *asJSON {
		return writeJSON(out, st.Types)
	}
	for i, t := range st.Types {
		if i > 0 {
			fmt.Fprintln(out)
		}
		writeVersion(out, t, t.Versions[0])
	}
	return nil
}

func writeVersion(out io.Writer, t registry.TypeModels, v registry.Version) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Version\t%s\n", v.Version)
	state := "not current (current: " + t.Current + ")"
	if v.Version == t.Current {
		state = "current"
	}
	fmt.Fprintf(tw, "Type\t%s, %s\n", t.Type, state)
	fmt.Fprintf(tw, "Promoted\t%s by %s\n", v.PromotedAt.Format(time.RFC3339), v.By)
	if v.Note != "" {
		fmt.Fprintf(tw, "Note\t%s\n", v.Note)
	}
	if v.Previous != "" {
		fmt.Fprintf(tw, "Previous\t%s (overseer model rollback returns to it)\n", v.Previous)
	}
	if m, err := overseer.ParseLearnedModel(v.Model); err == nil {
		writeSubModels(tw, m)
	}
	if p, err := overseer.ParsePolicy(v.Policy); err == nil {
		writePolicyLines(tw, p)
	}
	if len(v.Figures) > 0 {
		fmt.Fprintf(tw, "Figures\t%s\n", v.Figures)
	}
	tw.Flush()
}

func writeSubModels(tw io.Writer, m *overseer.LearnedModel) {
	for _, sm := range m.SubModels {
		fmt.Fprintf(tw, "Sub-model\t%s\n", sm.Basis())
	}
}

func writePolicyLines(tw io.Writer, p overseer.Policy) {
	fmt.Fprintf(tw, "Policy\t%s: On track from %.3f, Needs a look from %.3f, pause at or below %.3f\n", p.Name, p.OnTrackAt, p.NeedsALookAt, p.PauseAtOrBelow)
	fmt.Fprintf(tw, "Promise\t%s\n", p.Guarantee())
}

// isShippedVersion says version names the model that ships with the
// overseer, alone or with a sub-model as verdicts name it
// ("learned-mini-swe-v2/telemetry").
func isShippedVersion(version string) bool {
	v, _, _ := strings.Cut(version, "/")
	return v == overseer.DefaultLearnedModel().Version
}

// writeShipped shows the model and policy that ship with the overseer,
// which workers use for a job whose type has no promoted model.
func writeShipped(out io.Writer, asJSON bool) error {
	m, p := overseer.DefaultLearnedModel(), overseer.DefaultLearnedPolicy()
	const source = "shipped with the overseer (overseer.DefaultLearnedModel and DefaultLearnedPolicy), not from the model registry: workers use it for jobs whose type has no promoted model"
	if asJSON {
		return writeJSON(out, struct {
			Version string                 `json:"version"`
			Source  string                 `json:"source"`
			Model   *overseer.LearnedModel `json:"model"`
			Policy  overseer.Policy        `json:"policy"`
		}{m.Version, source, m, p})
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Version\t%s\n", m.Version)
	fmt.Fprintf(tw, "Source\t%s\n", source)
	writeSubModels(tw, m)
	writePolicyLines(tw, p)
	return tw.Flush()
}

// readFlagFile reads the file of a flag, or says which flag is missing.
func readFlagFile(name, path, what string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: give the %s with --%s FILE", ErrUsage, what, name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s: %v", ErrUsage, name, err)
	}
	return data, nil
}

func modelPromote(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("model promote", out)
	var conn connFlags
	conn.register(fs)
	modelFile := fs.String("model", "", "the learned-model file (overseer train); its version names the promotion (required)")
	policyFile := fs.String("policy", "", "the policy file calibrated for the model (overseer calibrate) (required)")
	figuresFile := fs.String("figures", "", "a JSON file of the figures the promotion rests on, kept with it (optional)")
	typ := fs.String("type", registry.DefaultType, "the workflow type the model is for (* is the default type)")
	by := fs.String("by", "", "who promotes the model (required)")
	note := fs.String("note", "", "why, kept with the promotion")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*by) == "" {
		return fmt.Errorf("%w: say who promotes the model with --by NAME", ErrUsage)
	}
	req := registry.PromoteRequest{Type: *typ, By: *by, Note: *note}
	if req.Model, err = readFlagFile("model", *modelFile, "learned-model file"); err != nil {
		return err
	}
	if _, err := overseer.ParseLearnedModel(req.Model); err != nil {
		return fmt.Errorf("%w: --model %s: %v", ErrUsage, *modelFile, err)
	}
	if req.Policy, err = readFlagFile("policy", *policyFile, "policy file"); err != nil {
		return err
	}
	if _, err := overseer.ParsePolicy(req.Policy); err != nil {
		return fmt.Errorf("%w: --policy %s: %v", ErrUsage, *policyFile, err)
	}
	if *figuresFile != "" {
		if req.Figures, err = readFlagFile("figures", *figuresFile, "figures file"); err != nil {
			return err
		}
		if !json.Valid(req.Figures) {
			return fmt.Errorf("%w: --figures %s is not JSON", ErrUsage, *figuresFile)
		}
	}
	r, err := dialRegistry(ctx, &conn)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := registry.Promote(r.ctx, r.c, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, res)
	}
	from := "its first model"
	if res.From != "" {
		from = "was " + res.From
	}
	fmt.Fprintf(out, "Promoted %s for type %s (%s) by %s; jobs started from now on use it, running jobs keep theirs.\n", res.Version, res.Type, from, strings.TrimSpace(*by))
	return nil
}

func modelRollback(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("model rollback", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", registry.DefaultType, "the workflow type (* is the default type)")
	by := fs.String("by", "", "who rolls the model back (required)")
	note := fs.String("note", "", "why, kept with the rollback")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*by) == "" {
		return fmt.Errorf("%w: say who rolls the model back with --by NAME", ErrUsage)
	}
	r, err := dialRegistry(ctx, &conn)
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := registry.Rollback(r.ctx, r.c, registry.RollbackRequest{Type: *typ, By: *by, Note: *note})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, res)
	}
	fmt.Fprintf(out, "Rolled type %s back from %s to %s by %s; jobs started from now on use %s, running jobs keep theirs.\n",
		res.Type, res.From, res.Version, strings.TrimSpace(*by), res.Version)
	return nil
}
