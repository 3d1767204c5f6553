package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/corohq/temporal-overseer/ops"
)

// Audit is `overseer audit`: writes the gate events of the jobs a query
// matches, read from their histories, as a chained audit file; `overseer
// audit verify [--head HASH] FILE` checks one.
type Audit struct {
	// Stderr receives the summary when the records go to standard output.
	// If not set, os.Stderr.
	Stderr io.Writer
}

// optionalSubcommandNames: audit verify checks a file.
func (*Audit) optionalSubcommandNames() []string { return []string{"verify"} }

// Synopsis implements Command.
func (*Audit) Synopsis() string {
	return "write every gate event (opened, escalated, expired, resumed, redone, aborted) of the matching jobs as a tamper-evident audit file (overseer-audit/v2); audit verify [--head HASH] FILE checks one"
}

// Run implements Command.
func (x *Audit) Run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "verify" {
		return auditVerify(args[1:], out)
	}
	fs := newFlags("audit", out)
	var conn connFlags
	conn.register(fs)
	query := fs.String("query", "", "Temporal visibility query of the jobs to audit, running ones included (default: "+ops.DefaultAuditQuery+")")
	outPath := fs.String("out", "", "write the records here (default: standard output)")
	limit := fs.Int("limit", 0, "audit at most this many workflows (default: all)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit %d: give a positive number, or 0 for all", ErrUsage, *limit)
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	opts := ops.AuditOptions{Query: *query, Limit: *limit}
	// The histories' payloads are read with the client's converter (the
	// codec of --codec-endpoint or $OVERSEER_CODEC_KEY).
	if o, err := conn.config().ClientOptions(); err == nil {
		opts.DataConverter, opts.Namespace = o.DataConverter, o.Namespace
	}
	res, err := ops.Audit(ctx, c, opts)
	if err != nil {
		return err
	}
	if res.Jobs == 0 {
		q := *query
		if q == "" {
			q = ops.DefaultAuditQuery
		}
		return fmt.Errorf("no job matches %q: change --query", q)
	}
	var head string
	summary, where := out, "standard output"
	if *outPath != "" {
		where = *outPath
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(f)
		head, err = ops.WriteAudit(w, res.Records)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", *outPath, err)
		}
	} else {
		if head, err = ops.WriteAudit(out, res.Records); err != nil {
			return err
		}
		summary = x.Stderr
		if summary == nil {
			summary = os.Stderr
		}
	}
	fmt.Fprintf(summary, "audited %d gate events of %s (%d running) to %s", len(res.Records), jobCount(res.Jobs), res.Running, where)
	if n := len(res.Encrypted); n > 0 {
		fmt.Fprintf(summary, "; skipped %d whose payloads a codec encrypted (give the codec with --codec-endpoint URL or OVERSEER_CODEC_KEY to audit them)", n)
	}
	fmt.Fprintf(summary, "; head sha256 %s: keep it apart from the file, and `overseer audit verify --head HASH FILE` checks a copy against it\n", head)
	return nil
}

// auditVerify is `overseer audit verify [--head HASH] FILE`.
func auditVerify(args []string, out io.Writer) error {
	fs := newFlags("audit verify", out)
	head := fs.String("head", "", "the head sha256 overseer audit printed when it wrote the file, kept apart from it: fail unless the file's head is the same (a file changed and sealed again shows only so)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	path, err := oneArg(pos, "audit file to verify (overseer audit verify [--head HASH] FILE)")
	if err != nil {
		return err
	}
	if *head != "" {
		if _, err := ops.ParseAuditHead(*head); err != nil {
			return fmt.Errorf("%w: --head %s: give the 64 hex digits of the head sha256 overseer audit printed", ErrUsage, *head)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var sum ops.AuditSummary
	if *head != "" {
		sum, err = ops.VerifyAuditHead(f, *head)
	} else {
		sum, err = ops.VerifyAudit(f)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if sum.Records == 0 {
		return fmt.Errorf("%s: the file holds no record: give a file `overseer audit --out` wrote", path)
	}
	fmt.Fprintf(out, "%s: %d records of %s verified (%s): ", path, sum.Records, jobCount(sum.Jobs), sum.Format)
	switch {
	case *head != "":
		fmt.Fprintf(out, "none was edited, dropped, inserted or reordered, and its head is the one you kept: sha256 %s\n", sum.Head)
	case sum.Format == ops.AuditFormatV1:
		// v1 chained each job apart: say what it cannot show.
		fmt.Fprintf(out, "no job's records were edited, dropped or reordered, but this format cannot show a job dropped or added whole; head sha256 %s: compare it with the head overseer audit printed, or give that with --head\n", sum.Head)
	default:
		fmt.Fprintf(out, "none was edited, dropped, inserted or reordered; head sha256 %s: compare it with the head overseer audit printed, or give that with --head\n", sum.Head)
	}
	return nil
}

// jobCount is "1 job" or "N jobs".
func jobCount(n int) string {
	if n == 1 {
		return "1 job"
	}
	return fmt.Sprintf("%d jobs", n)
}
