package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/testsuite"
)

const ownerHelperEnv = "OVERSEER_TEST_DEVSERVER_OWNER"

// TestDevServerOwnerHelper is the process the next test kills: it starts a
// dev server, says where it is and waits to be killed. It does nothing in
// a normal run.
func TestDevServerOwnerHelper(t *testing.T) {
	if os.Getenv(ownerHelperEnv) != "1" {
		t.Skip("helper process of TestDevServerDiesWithItsOwner")
	}
	// A file, not a pipe: the server must not die merely because nobody
	// reads its output any more.
	out, err := os.CreateTemp("", "devserver-owner-*.log")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{Output: out})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY", srv.PID(), srv.FrontendHostPort())
	select {} // until killed
}

// alive reports whether pid runs (a zombie nobody reaped does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S …".
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

func TestDevServerDiesWithItsOwner(t *testing.T) {
	skipOnCluster(t)
	requireCLI(t)
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	owner := exec.Command(os.Args[0], "-test.run=^TestDevServerOwnerHelper$", "-test.count=1")
	owner.Env = append(os.Environ(), ownerHelperEnv+"=1")
	stdout, err := owner.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, owner.Start())
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") || strings.HasPrefix(sc.Text(), "ERROR ") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(2 * time.Minute):
		t.Fatal("the owner never reported its dev server")
	}
	f := strings.Fields(line)
	require.Len(t, f, 3, line)
	pid, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	hostPort := f[2]
	require.True(t, alive(pid))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // only if the test failed

	require.NoError(t, owner.Process.Signal(syscall.SIGKILL))
	_ = owner.Wait()
	eventually(t, "the dev server to die with its killed owner", 10*time.Second, func() bool { return !alive(pid) })
	eventually(t, "the port to close", 10*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", hostPort, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
}

func TestDevServerPortTakenIsOneSentence(t *testing.T) {
	skipOnCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	_, err = testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: os.Args[0], // never run: the port is checked first
		Port:         port,
	})
	var inUse *testsuite.PortInUseError
	require.ErrorAs(t, err, &inUse)
	assert.Equal(t, fmt.Sprintf("port %d for the Temporal frontend is taken (another Temporal server?); stop what uses it or choose another with --port", port), err.Error())
}

func TestDevServerOnTheGivenPorts(t *testing.T) {
	skipOnCluster(t)
	requireCLI(t)
	port := unallocatedPort(t)
	uiPort := unallocatedPort(t, port)
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{Output: io.Discard, UI: true, Port: port, UIPort: uiPort})
	require.NoError(t, err)
	defer srv.Stop()
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), srv.FrontendHostPort())
	assert.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", uiPort), srv.UIAddress())
	eventually(t, "the Web UI to answer", 30*time.Second, func() bool {
		resp, err := http.Get(srv.UIAddress())
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// unallocatedPort is a free port on 127.0.0.1 below the kernel's
// ephemeral range, other than avoid. The Temporal CLI takes a port number,
// not a listener, so the port is closed before the server binds it; the
// kernel never hands a port below that range to a listen on port 0 or an
// outgoing connection, so no concurrent test takes it meanwhile (nor does
// the next pick: two listens on port 0 in a row may get the same port).
func unallocatedPort(t *testing.T, avoid ...int) int {
	t.Helper()
	low := 32768 // Linux's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first = 20000 // above the well-known and most registered ports
	require.Greater(t, low, first+100, "the ephemeral range leaves no port below it")
	start := first + rand.IntN(low-first)
	for i := range low - first {
		port := first + (start-first+i)%(low-first)
		if slices.Contains(avoid, port) {
			continue
		}
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			require.NoError(t, ln.Close())
			return port
		}
	}
	t.Fatalf("no free port in [%d, %d)", first, low)
	return 0
}

func TestTemporalCLIFromPATHOutsideACheckout(t *testing.T) {
	skipOnCluster(t)
	t.Setenv("OVERSEER_TEMPORAL_CLI", "")
	t.Chdir(t.TempDir()) // not a checkout: no .tools/bin
	bin := t.TempDir()
	exe := filepath.Join(bin, "temporal")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", bin)
	got, err := testsuite.TemporalCLIPath()
	require.NoError(t, err)
	assert.Equal(t, exe, got)

	t.Setenv("PATH", t.TempDir())
	_, err = testsuite.TemporalCLIPath()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "put `temporal` on PATH")
	assert.Contains(t, err.Error(), "OVERSEER_TEMPORAL_CLI")
	assert.False(t, errors.Is(err, os.ErrNotExist))
}

func TestOverseerDevSaysWhenItsPortIsTaken(t *testing.T) {
	skipOnCluster(t)
	requireCLI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	var out, errOut strings.Builder
	code := cli.Main(context.Background(), []string{"dev", "--port", strconv.Itoa(port), "--no-dashboard", "--metrics", ""}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Equal(t, fmt.Sprintf("overseer dev: port %d for the Temporal frontend is taken (another Temporal server?); stop what uses it or choose another with --port\n", port), errOut.String())

	code = cli.Main(context.Background(), []string{"dev", "--port", "0", "--ui-port", strconv.Itoa(port), "--no-dashboard", "--metrics", ""}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), fmt.Sprintf("port %d for the Temporal Web UI is taken", port))
	assert.Contains(t, errOut.String(), "--ui-port")
}

// untilWriter keeps what is written and closes seen once it holds want.
type untilWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *untilWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// overseer dev says which approval and notification settings it took, so a
// user can tell they took effect, and never a secret's value.
func TestOverseerDevSaysTheSettingsItTook(t *testing.T) {
	skipOnCluster(t)
	requireCLI(t)
	const secret = "whsec-e2e-do-not-print"
	t.Setenv("OVERSEER_WEBHOOK_URL", "http://127.0.0.1:1/hook")
	t.Setenv("OVERSEER_WEBHOOK_SECRET", secret)
	out := &untilWriter{want: "Ctrl-C stops everything", seen: make(chan struct{})}
	var errOut strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"dev", "--port", "0", "--ui-port", "0", "--no-dashboard", "--metrics", "",
			"--approvers", "alice,group:sre", "--four-eyes"}, out, &errOut)
	}()
	select {
	case <-out.seen:
	case code := <-done:
		cancel()
		t.Fatalf("overseer dev ended (%d) before it was ready: %s%s", code, out, errOut.String())
	}
	cancel()
	assert.Equal(t, 0, <-done, errOut.String())
	text := out.String()
	assert.Contains(t, text, "Approvers            alice, group:sre may resume gates\n")
	assert.Contains(t, text, "Four-eyes            on: a job's starter may not resume its gates")
	assert.Contains(t, text, "Notifications        webhook http://127.0.0.1:1/… (webhooks signed with the key in $OVERSEER_WEBHOOK_SECRET)\n")
	assert.NotContains(t, text+errOut.String(), secret)
}
