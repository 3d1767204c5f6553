// Package cli implements the overseer command's subcommands. Each
// subcommand is one type with a Run method that takes its arguments and an
// output writer, so that tests drive it like a user would.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

// Command is one subcommand.
type Command interface {
	// Run runs the command with its arguments (after the subcommand name).
	Run(ctx context.Context, args []string, out io.Writer) error
	// Synopsis is the one-line description shown by help.
	Synopsis() string
}

// Commands lists every subcommand by name.
func Commands() map[string]Command {
	return map[string]Command{
		"demo":        &Demo{},
		"dashboard":   &Dashboard{},
		"dev":         &Dev{},
		"worker":      &Worker{},
		"start":       &Start{},
		"status":      &StatusCmd{},
		"list":        &List{},
		"resume":      &Resume{},
		"judge":       &JudgeCmd{},
		"observe":     &Observe{},
		"train":       &Train{},
		"eval":        &Eval{},
		"calibrate":   &CalibrateCmd{},
		"recalibrate": &Recalibrate{},
		"replay":      &ReplayCmd{},
		"export":      &Export{},
		"audit":       &Audit{},
		"retire":      &Retire{},
		"model":       &ModelCmd{},
		"learn":       &LearnCmd{},
		"bench":       &Bench{Progress: os.Stderr},
	}
}

// errOutSetter is a command that says something on the error stream
// while it runs (a server slow to answer); Main gives it errOut.
type errOutSetter interface{ setErrOut(io.Writer) }

// ErrUsage marks an error in how the command was called.
var ErrUsage = errors.New("usage")

// Main runs the command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error. Errors are one sentence on
// errOut.
func Main(ctx context.Context, args []string, out, errOut io.Writer) int {
	cmds := Commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(out, cmds)
		return 0
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(out, "overseer", VersionString())
		return 0
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "overseer: unknown command %q; run `overseer help` for the list\n", args[0])
		return 2
	}
	if c, ok := cmd.(errOutSetter); ok {
		c.setErrOut(errOut)
	}
	if err := cmd.Run(ctx, args[1:], out); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(errOut, "overseer %s: %s\n", args[0], oneMessage(err))
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// Version is the overseer's version, set at build time with
// -ldflags "-X github.com/corohq/temporal-overseer/cmd/overseer/cli.Version=v1.2.3".
// If not set, the module version Go recorded (go install …@v1.2.3).
var Version string

// VersionString is the plugin's release (overseer.Release), then the
// version, or the commit Go recorded when the binary was built from a
// checkout, and the Temporal SDK the binary was built with.
func VersionString() string {
	bi, _ := debug.ReadBuildInfo()
	return overseer.Release + ", built as " + versionString(Version, bi)
}

// versionString formats the version set at build time or bi's module
// version. Go stamps a build from a checkout with the commit's
// pseudo-version (v0.0.0-20261201214103-440e2be098fa+dirty); where it left
// the version "(devel)", which tells no build from another, the VCS
// revision, time and modified flag are shown instead. bi may be nil.
func versionString(set string, bi *debug.BuildInfo) string {
	v := set
	if v == "" && bi != nil {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(unknown)"
	}
	if bi == nil {
		return v
	}
	if v == "(devel)" {
		vcs := map[string]string{}
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
		// Outside a checkout, or with -buildvcs=false, Go records none.
		v = "(devel, no commit recorded)"
		if rev := vcs["vcs.revision"]; rev != "" {
			v = "commit " + rev[:min(len(rev), 12)]
			var about []string
			if t := vcs["vcs.time"]; t != "" {
				about = append(about, t)
			}
			if vcs["vcs.modified"] == "true" {
				about = append(about, "modified")
			}
			if len(about) > 0 {
				v += " (" + strings.Join(about, ", ") + ")"
			}
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "go.temporal.io/sdk" {
			v += ", Temporal Go SDK " + d.Version
		}
	}
	if bi.GoVersion != "" {
		v += ", " + bi.GoVersion
	}
	return v
}

// packagePrefix matches the "usage" marker and package prefixes that
// wrapped errors repeat ("overseer start: usage: job spec: overseer: …").
var packagePrefix = regexp.MustCompile(`(^|: )(usage|overseer): `)

// oneMessage is err as one line with one prefix: the command's, which Main
// prints. The exit code already says whether it was a usage error.
func oneMessage(err error) string {
	msg := err.Error()
	for {
		next := packagePrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	return strings.Join(strings.Fields(msg), " ")
}

func usage(out io.Writer, cmds map[string]Command) {
	fmt.Fprintln(out, "overseer oversees long agentic Temporal workflows at their phase boundaries.")
	fmt.Fprintln(out, "\nUsage: overseer <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(out, "  %-*s  %s\n", width, n, cmds[n].Synopsis())
	}
	fmt.Fprintln(out, "\nRun `overseer <command> -h` for a command's flags, `overseer --version` for the version.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("overseer "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	if onNewFlags != nil {
		onNewFlags(fs)
	}
	return fs
}

// onNewFlags, when set, is given every flag set a command makes: the CLI
// reference (docs/cli.md) and the docs' command check read the commands'
// own flag sets through it.
var onNewFlags func(*flag.FlagSet)

// subcommander is a command made of verbs (overseer model list): the CLI
// reference lists each verb's flags.
type subcommander interface {
	subcommandNames() []string
}

// optionalSubcommander is a command that runs on its own and has verbs
// too (overseer audit, overseer audit verify).
type optionalSubcommander interface {
	optionalSubcommandNames() []string
}

// parse parses flags anywhere on the line (`resume ID --by NAME` works as
// well as `resume --by NAME ID`) and returns the positional arguments. A
// flag error is a usage error.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// connFlags are the flags of commands that talk to a Temporal server.
type connFlags struct {
	address, namespace, taskQueue string
	timeout                       time.Duration
	// codecEndpoint is a codec server's URL; the built-in codec's key
	// comes only from the environment (codec.KeyEnv), never a flag.
	codecEndpoint string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.address, "address", "", "Temporal frontend host:port (default: $TEMPORAL_ADDRESS or profile, else localhost:7233)")
	fs.StringVar(&c.namespace, "namespace", "", "Temporal namespace (default: $TEMPORAL_NAMESPACE or profile, else default)")
	fs.StringVar(&c.taskQueue, "task-queue", worker.DefaultTaskQueue, "task queue of the job workflow")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "how long to wait for the server")
	registerCodec(fs, &c.codecEndpoint)
}

// registerCodec registers --codec-endpoint, which every command that talks
// to Temporal takes, those that start their own dev server too.
func registerCodec(fs *flag.FlagSet, endpoint *string) {
	fs.StringVar(endpoint, "codec-endpoint", "", "codec server URL of a deployment that encrypts its payloads (POST /encode, /decode; default: $"+
		worker.CodecEndpointEnv+"); or set $"+codec.KeyEnv+" to the built-in AES-GCM codec's key")
}

func (c *connFlags) config() worker.Config {
	return worker.Config{Address: c.address, Namespace: c.namespace, TaskQueue: c.taskQueue, Logger: zap.NewNop(), CodecEndpoint: c.codecEndpoint}
}

// listOptions are the list options that read the jobs' summaries with
// this connection's data converter and namespace, each call within its
// timeout.
func (c *connFlags) listOptions() ops.ListOptions {
	lo := ops.ListOptions{CallTimeout: c.timeout}
	if o, err := c.config().ClientOptions(); err == nil {
		lo.DataConverter, lo.Namespace = o.DataConverter, o.Namespace
	}
	return lo
}

func (c *connFlags) dial(ctx context.Context) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return worker.Dial(dctx, c.config())
}

// subcommand is one verb of a command with several (overseer model list).
type subcommand struct {
	name string
	run  func(ctx context.Context, args []string, out io.Writer) error
}

func subcommandNames(subs []subcommand) []string {
	names := make([]string, len(subs))
	for i, sc := range subs {
		names[i] = sc.name
	}
	return names
}

// runSubcommand runs the subcommand args[0] names, or prints usage for
// -h; an unknown or missing one is a usage error naming the choices.
func runSubcommand(ctx context.Context, args []string, out io.Writer, usage string, subs []subcommand) error {
	names := subcommandNames(subs)
	choices := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	if len(args) == 0 {
		return fmt.Errorf("%w: give a subcommand: %s", ErrUsage, choices)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintln(out, usage)
		return nil
	}
	for _, sc := range subs {
		if sc.name == args[0] {
			return sc.run(ctx, args[1:], out)
		}
	}
	return fmt.Errorf("%w: unknown subcommand %q: use %s", ErrUsage, args[0], choices)
}

// oneArg returns the single positional argument.
func oneArg(args []string, what string) (string, error) {
	switch len(args) {
	case 1:
		return args[0], nil
	case 0:
		return "", fmt.Errorf("%w: give the %s", ErrUsage, what)
	default:
		return "", fmt.Errorf("%w: one %s only, got %q", ErrUsage, what, strings.Join(args, " "))
	}
}

// parseNoArgs parses a command's flags and refuses any positional argument.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, pos[0])
	}
	return nil
}
