package testsuite

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

const (
	// ModulePath is the module whose root directory holds .tools/bin.
	ModulePath = "github.com/corohq/temporal-overseer"

	// TemporalCLIEnv overrides the location of the Temporal CLI binary.
	TemporalCLIEnv = "OVERSEER_TEMPORAL_CLI"

	// TemporalCLIVersion is the CLI version `make tools` installs.
	TemporalCLIVersion = "v1.5.1"
)

// OverseerSearchAttributes are the custom search attributes the overseer
// workflows upsert. StartDevServer always registers them.
var OverseerSearchAttributes = map[string]enumspb.IndexedValueType{
	"OverseerStatus":      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"OverseerOnObjective": enumspb.INDEXED_VALUE_TYPE_DOUBLE,
	"OverseerPaused":      enumspb.INDEXED_VALUE_TYPE_BOOL,
	"OverseerGateSince":   enumspb.INDEXED_VALUE_TYPE_DATETIME,
	"OverseerBudget":      enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// TemporalCLIPath returns the path of the Temporal CLI binary: the value of
// $OVERSEER_TEMPORAL_CLI if set; else, inside a checkout, the pinned
// <repo root>/.tools/bin/temporal if it is installed; else `temporal` on
// PATH. It returns an error telling how to get one if none is found.
func TemporalCLIPath() (string, error) {
	if p := os.Getenv(TemporalCLIEnv); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("%s=%q: %w", TemporalCLIEnv, p, err)
		}
		return p, nil
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", "temporal")
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("no Temporal CLI found: put `temporal` on PATH (Temporal CLI %s or later), set %s to its path, "+
		"or run `make tools` inside the repository", TemporalCLIVersion, TemporalCLIEnv)
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
	// OmitSearchAttributes names overseer search attributes not to
	// register, as on a deployment that registered only some of them.
	OmitSearchAttributes []string

	// ExistingPath is the Temporal CLI binary to run.
	// If not set, TemporalCLIPath() is used. Nothing is ever downloaded.
	ExistingPath string

	// Logger for the client (and the harness' own start-up messages).
	// If not set, the SDK's default logger (stdout) is used.
	Logger log.Logger

	// UI serves the Temporal Web UI (on UIPort). If not set, the server runs
	// headless.
	UI bool

	// Port is the frontend's (gRPC) port on 127.0.0.1. If not set, a free
	// port. A port in use is an error that says so.
	Port int

	// UIPort is the Web UI's port when UI is set. If not set, Port + 1000
	// (the Temporal CLI's default).
	UIPort int

	// Output receives the server process' stdout and stderr. An *os.File
	// gets them directly; another writer through a pipe this process reads.
	// If not set, they go to this process' stdout and stderr.
	Output io.Writer

	// DynamicConfig sets server dynamic-config values, e.g.
	// {"history.transferProcessorMaxPollRPS": "1000"}; each value is
	// written as the CLI's --dynamic-config-value takes it (JSON).
	DynamicConfig map[string]string
}

// DevServer is a running Temporal dev server with a connected client.
type DevServer struct {
	cmd       *exec.Cmd
	client    client.Client
	hostPort  string
	uiPort    int // 0 when headless
	namespace string
	exited    chan struct{} // closed when the process has exited
	waitErr   error         // the process' exit, once exited is closed

	stopOnce sync.Once
	stopErr  error
}

// PortInUseError is StartDevServer's error when a port it was asked to use
// is taken.
type PortInUseError struct {
	Port int
	// What uses the port ("the Temporal frontend") and Flag is the flag
	// that chooses another ("--port").
	What, Flag string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d for %s is taken (another Temporal server?); stop what uses it or choose another with %s", e.Port, e.What, e.Flag)
}

// StartDevServer starts a Temporal dev server on 127.0.0.1 (on opts.Port,
// or a free port), with the overseer search attributes registered, and
// returns once a client is connected. The server keeps an in-memory
// database: all state is lost on Stop. It runs in its own process group
// and, on Linux, dies with this process even when this process is killed
// (SIGKILL included), so it never outlives its owner. It gets only the
// variables of this process' environment a server needs (PATH, HOME,
// temporary directories, locale, time zone, the Go runtime's settings): no
// key or secret of this process reaches it.
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
	saArgs, err := searchAttributeArgs(opts.SearchAttributes, opts.OmitSearchAttributes...)
	if err != nil {
		return nil, err
	}
	// Ports this process picks are free when picked, not when the server
	// binds them: another process (a parallel test package starting its
	// own server) can take one in between, or one the server derives from
	// them. Such a start is tried again on other ports, three times in all.
	for attempt := 1; ; attempt++ {
		s, err := startDevServerOnce(ctx, exe, opts, namespace, logLevel, saArgs)
		if err == nil || attempt == 3 || opts.Port != 0 || !strings.Contains(err.Error(), "address already in use") {
			return s, err
		}
	}
}

// startDevServerOnce is one try of StartDevServer.
func startDevServerOnce(ctx context.Context, exe string, opts DevServerOptions, namespace, logLevel string, saArgs []string) (*DevServer, error) {
	port, err := pickPort(opts.Port, "the Temporal frontend", "--port")
	if err != nil {
		return nil, err
	}
	uiPort := 0
	if opts.UI {
		want := opts.UIPort
		if want == 0 && opts.Port != 0 {
			want = opts.Port + 1000
		}
		if uiPort, err = pickPort(want, "the Temporal Web UI", "--ui-port"); err != nil {
			return nil, err
		}
	}
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(port), "--namespace", namespace,
		"--log-level", logLevel, "--dynamic-config-value", "frontend.enableServerVersionCheck=false"}
	if opts.UI {
		args = append(args, "--ui-port", strconv.Itoa(uiPort))
	} else {
		args = append(args, "--headless")
	}
	args = append(args, saArgs...)
	for _, k := range slices.Sorted(maps.Keys(opts.DynamicConfig)) {
		args = append(args, "--dynamic-config-value", k+"="+opts.DynamicConfig[k])
	}

	// Keep the tail of the server's output so a failed start can say why.
	var stdout, stderr io.Writer = os.Stdout, os.Stderr
	if opts.Output != nil {
		stdout, stderr = opts.Output, opts.Output
	}
	tail := &tailBuffer{max: 4096}
	s := &DevServer{hostPort: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), uiPort: uiPort, namespace: namespace,
		exited: make(chan struct{})}
	s.cmd = exec.Command(exe, args...)
	s.cmd.Stdout, s.cmd.Stderr = io.MultiWriter(stdout, tail), io.MultiWriter(stderr, tail)
	if opts.Output != nil {
		// One writer for both streams: exec then copies them in one
		// goroutine, so that an Output that is not safe for concurrent
		// writes (a bytes.Buffer) is not written from two.
		w := io.MultiWriter(opts.Output, tail)
		s.cmd.Stdout, s.cmd.Stderr = w, w
	}
	if f, ok := opts.Output.(*os.File); ok {
		// Straight to the file: no pipe through this process (and no tail
		// for the error message; the output is in the file).
		s.cmd.Stdout, s.cmd.Stderr = f, f
	}
	s.cmd.Env = serverEnv(os.Environ())
	s.cmd.SysProcAttr = serverProcAttr()
	if err := s.start(); err != nil {
		return nil, fmt.Errorf("starting temporal dev server (%s): %w", exe, err)
	}
	fail := func(err error) (*DevServer, error) {
		_ = s.kill()
		if out := strings.TrimSpace(tail.String()); out != "" {
			return nil, fmt.Errorf("starting temporal dev server (%s): %w\nserver output:\n%s", exe, err, out)
		}
		return nil, fmt.Errorf("starting temporal dev server (%s): %w", exe, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	s.client, err = s.waitReady(ctx, client.Options{HostPort: s.hostPort, Namespace: namespace, Logger: opts.Logger})
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// serverEnvNames are the variables of this process the server process gets:
// where programs, home and temporary files are, the locale and time zone,
// the Go runtime's settings, and Windows' own. Nothing else: the judge's and
// the webhook's keys, cloud credentials and the Temporal CLI's own client
// settings (TEMPORAL_API_KEY, ...) are not the dev server's business.
var serverEnvNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TZ", "ZONEINFO", "LANG", "LANGUAGE",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
	"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "GOTRACEBACK",
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "USERPROFILE", "APPDATA", "LOCALAPPDATA",
}

// serverEnv keeps of environ (KEY=VALUE entries) those serverEnvNames
// names (in any case: Windows writes Path) and the locale's LC_*.
func serverEnv(environ []string) []string {
	env := []string{} // not nil: a nil Env is the whole environment
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		name = strings.ToUpper(name)
		if slices.Contains(serverEnvNames, name) || strings.HasPrefix(name, "LC_") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts the process from a goroutine locked to its OS thread, which
// then waits for the process: Linux's parent-death signal fires when the
// *thread* that started the child exits, so that thread must live exactly
// as long as the server.
func (s *DevServer) start() error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the server
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	return <-started
}

// waitReady dials the server until it answers and knows the namespace,
// the process exits or ctx ends: a server that answers but does not know
// the namespace yet fails every workflow started on it ("Namespace
// default is not found").
func (s *DevServer) waitReady(ctx context.Context, opts client.Options) (client.Client, error) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var c client.Client
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		var err error
		if c == nil {
			c, err = client.DialContext(dctx, opts)
		}
		if err == nil {
			_, err = c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: cmp.Or(opts.Namespace, client.DefaultNamespace)})
		}
		cancel()
		if err == nil {
			ready := c
			c = nil
			return ready, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("the server exited before it was ready (%v)", s.waitErr)
		case <-ctx.Done():
			return nil, fmt.Errorf("the server did not answer at %s in time: %w", s.hostPort, err)
		case <-t.C:
		}
	}
}

// pickPort returns want when it is free, a free port when want is 0, and
// a PortInUseError otherwise.
func pickPort(want int, what, flag string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(want)))
	if err != nil {
		if want != 0 {
			return 0, &PortInUseError{Port: want, What: what, Flag: flag}
		}
		return 0, fmt.Errorf("find a free port for %s: %w", what, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port, nil
}

// searchAttributeArgs returns the --search-attribute flags (sorted by name)
// for OverseerSearchAttributes plus extra.
func searchAttributeArgs(extra map[string]enumspb.IndexedValueType, omit ...string) ([]string, error) {
	all := maps.Clone(OverseerSearchAttributes)
	for _, name := range omit {
		delete(all, name)
	}
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
func (s *DevServer) Client() client.Client { return s.client }

// UIAddress returns the Web UI's URL, or "" when the server is headless.
func (s *DevServer) UIAddress() string {
	if s.uiPort == 0 {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", s.uiPort)
}

// FrontendHostPort returns the server's gRPC host:port.
func (s *DevServer) FrontendHostPort() string { return s.hostPort }

// Namespace returns the namespace Client is connected to.
func (s *DevServer) Namespace() string { return s.namespace }

// PID is the server process' id.
func (s *DevServer) PID() int { return s.cmd.Process.Pid }

// Stop closes the client, interrupts the server and waits for it to exit;
// a server still running after 10 s is killed with its process group. It
// is safe to call more than once; later calls return the first result.
func (s *DevServer) Stop() error {
	s.stopOnce.Do(func() {
		s.client.Close()
		if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
			select {
			case <-s.exited: // already gone
			default:
				s.stopErr = fmt.Errorf("stop temporal dev server: %w", err)
				_ = s.kill()
				return
			}
		}
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-s.exited:
		case <-t.C:
			s.stopErr = s.kill()
			if s.stopErr == nil {
				s.stopErr = errors.New("stop temporal dev server: it ignored the interrupt for 10 s and was killed")
			}
			return
		}
		var exit *exec.ExitError
		if s.waitErr != nil && !(errors.As(s.waitErr, &exit) && exitedOnInterrupt(exit)) {
			s.stopErr = fmt.Errorf("temporal dev server: %w", s.waitErr)
		}
	})
	return s.stopErr
}

// kill kills the server's process group and waits for the server.
func (s *DevServer) kill() error {
	err := killGroup(s.cmd.Process)
	<-s.exited
	return err
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
