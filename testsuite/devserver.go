// Package testsuite starts a local Temporal dev server (the Temporal CLI's
// `server start-dev`) for end-to-end tests and for the overseer CLI's demo.
//
// The CLI binary is never downloaded: it is taken from the
// OVERSEER_TEMPORAL_CLI environment variable or from the project-local
// .tools/bin/temporal installed by `make tools` (scripts/install-tools.sh).
package testsuite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdktestsuite "go.temporal.io/sdk/testsuite"
)

const (
	// ModulePath is the module whose root directory holds .tools/bin.
	ModulePath = "github.com/corohq/temporal-overseer"

	// TemporalCLIEnv overrides the location of the Temporal CLI binary.
	TemporalCLIEnv = "OVERSEER_TEMPORAL_CLI"

	// TemporalCLIVersion is the CLI version installed by scripts/install-tools.sh.
	TemporalCLIVersion = "v1.5.1"
)

// OverseerSearchAttributes are the custom search attributes the overseer
// workflows upsert. StartDevServer always registers them.
var OverseerSearchAttributes = map[string]enumspb.IndexedValueType{
	"OverseerStatus":      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"OverseerOnObjective": enumspb.INDEXED_VALUE_TYPE_DOUBLE,
	"OverseerPaused":      enumspb.INDEXED_VALUE_TYPE_BOOL,
}

// TemporalCLIPath returns the path of the Temporal CLI binary: the value of
// $OVERSEER_TEMPORAL_CLI if set, otherwise <repo root>/.tools/bin/temporal.
// It returns an error (telling how to install the CLI) if the binary cannot
// be found.
func TemporalCLIPath() (string, error) {
	if p := os.Getenv(TemporalCLIEnv); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w", TemporalCLIEnv, p, err)
		}
		return p, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("temporal CLI not found: set %s to the path of a Temporal CLI %s binary, "+
			"or run `make tools` (scripts/install-tools.sh) inside the repository: %w",
			TemporalCLIEnv, TemporalCLIVersion, err)
	}
	p := filepath.Join(root, ".tools", "bin", "temporal")
	if err := checkExecutable(p); err != nil {
		return "", fmt.Errorf("temporal CLI not found at %s: run `make tools` (or scripts/install-tools.sh) "+
			"to install Temporal CLI %s, or set %s: %w", p, TemporalCLIVersion, TemporalCLIEnv, err)
	}
	return p, nil
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}

// RepoRoot returns the root directory of the temporal-overseer module, found
// by walking up from the working directory to the directory whose go.mod
// declares module github.com/corohq/temporal-overseer.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if mod, err := modulePathOf(filepath.Join(dir, "go.mod")); err == nil && mod == ModulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for module %s in %s or any parent directory", ModulePath, wd)
		}
		dir = parent
	}
}

// modulePathOf returns the module path declared in a go.mod file.
func modulePathOf(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no module directive", goMod)
}

// DevServerOptions configures StartDevServer. The zero value is valid.
type DevServerOptions struct {
	// Namespace registered on the server and used by Client.
	// If not set, "default" is used.
	Namespace string

	// LogLevel of the server process: debug, info, warn, error or never.
	// If not set, "error" is used.
	LogLevel string

	// SearchAttributes registered in addition to OverseerSearchAttributes
	// (which are always registered). Redefining one of those with another
	// type is an error. If not set, only OverseerSearchAttributes are
	// registered.
	SearchAttributes map[string]enumspb.IndexedValueType

	// ExistingPath is the Temporal CLI binary to run.
	// If not set, TemporalCLIPath() is used. Nothing is ever downloaded.
	ExistingPath string

	// Logger for the client (and the harness' own start-up messages).
	// If not set, the SDK's default logger (stdout) is used.
	Logger log.Logger

	// UI serves the Temporal Web UI on the frontend port + 1000 (the CLI's
	// default). If not set, the server runs headless.
	UI bool

	// Output receives the server process' stdout and stderr.
	// If not set, they go to this process' stdout and stderr.
	Output io.Writer
}

// DevServer is a running Temporal dev server with a connected client.
type DevServer struct {
	server    *sdktestsuite.DevServer
	namespace string
	ui        bool

	stopOnce sync.Once
	stopErr  error
}

// StartDevServer starts a Temporal dev server on a free localhost port,
// with the Web UI disabled and the overseer search attributes registered,
// and returns once a client is connected. The server keeps an in-memory
// database: all state is lost on Stop.
//
// If ctx has no deadline, start-up gives up after about a minute.
func StartDevServer(ctx context.Context, opts DevServerOptions) (*DevServer, error) {
	exe := opts.ExistingPath
	if exe == "" {
		var err error
		if exe, err = TemporalCLIPath(); err != nil {
			return nil, err
		}
	} else if err := checkExecutable(exe); err != nil {
		return nil, fmt.Errorf("temporal CLI: %w", err)
	}
	namespace := opts.Namespace
	if namespace == "" {
		namespace = "default"
	}
	logLevel := opts.LogLevel
	if logLevel == "" {
		logLevel = "error"
	}
	extraArgs, err := searchAttributeArgs(opts.SearchAttributes)
	if err != nil {
		return nil, err
	}

	// Keep the tail of the server's output so a failed start can say why.
	var stdout, stderr io.Writer = os.Stdout, os.Stderr
	if opts.Output != nil {
		stdout, stderr = opts.Output, opts.Output
	}
	tail := &tailBuffer{max: 4096}
	stdout, stderr = io.MultiWriter(stdout, tail), io.MultiWriter(stderr, tail)

	server, err := sdktestsuite.StartDevServer(ctx, sdktestsuite.DevServerOptions{
		ExistingPath: exe, // set => the SDK never downloads a CLI
		ClientOptions: &client.Options{
			Namespace: namespace,
			Logger:    opts.Logger,
		},
		// EnableUI false => --headless; HTTP API and /metrics ports are
		// chosen freely by the CLI; the gRPC port is a free port picked by
		// the SDK.
		EnableUI:  opts.UI,
		LogLevel:  logLevel,
		ExtraArgs: extraArgs,
		Stdout:    stdout,
		Stderr:    stderr,
	})
	if err != nil {
		if out := strings.TrimSpace(tail.String()); out != "" {
			return nil, fmt.Errorf("starting temporal dev server (%s): %w\nserver output:\n%s", exe, err, out)
		}
		return nil, fmt.Errorf("starting temporal dev server (%s): %w", exe, err)
	}
	return &DevServer{server: server, namespace: namespace, ui: opts.UI}, nil
}

// searchAttributeArgs returns the --search-attribute flags (sorted by name)
// for OverseerSearchAttributes plus extra.
func searchAttributeArgs(extra map[string]enumspb.IndexedValueType) ([]string, error) {
	all := maps.Clone(OverseerSearchAttributes)
	for name, typ := range extra {
		if name == "" || strings.ContainsAny(name, "= \t\n") {
			return nil, fmt.Errorf("invalid search attribute name %q", name)
		}
		if _, ok := enumspb.IndexedValueType_name[int32(typ)]; !ok || typ == enumspb.INDEXED_VALUE_TYPE_UNSPECIFIED {
			return nil, fmt.Errorf("search attribute %s: invalid type %v", name, typ)
		}
		if prev, ok := all[name]; ok && prev != typ {
			return nil, fmt.Errorf("search attribute %s: type %v conflicts with the overseer's %v", name, typ, prev)
		}
		all[name] = typ
	}
	var args []string
	for _, name := range slices.Sorted(maps.Keys(all)) {
		// IndexedValueType.String() is the shorthand the CLI expects
		// (Keyword, Double, Bool, ...).
		args = append(args, "--search-attribute", name+"="+all[name].String())
	}
	return args, nil
}

// Client returns the client connected to the server's namespace. It is
// closed by Stop.
func (s *DevServer) Client() client.Client { return s.server.Client() }

// UIAddress returns the Web UI's URL, or "" when the server is headless.
func (s *DevServer) UIAddress() string {
	if !s.ui {
		return ""
	}
	host, port, err := net.SplitHostPort(s.FrontendHostPort())
	if err != nil {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("http://%s:%d", host, n+1000)
}

// FrontendHostPort returns the server's gRPC host:port.
func (s *DevServer) FrontendHostPort() string { return s.server.FrontendHostPort() }

// Namespace returns the namespace Client is connected to.
func (s *DevServer) Namespace() string { return s.namespace }

// Stop closes the client, interrupts the server and waits for it to exit.
// It is safe to call more than once; later calls return the first result.
func (s *DevServer) Stop() error {
	s.stopOnce.Do(func() {
		s.server.Client().Close()
		s.stopErr = s.server.Stop()
	})
	return s.stopErr
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
