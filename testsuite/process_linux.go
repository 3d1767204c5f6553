//go:build linux

package testsuite

import (
	"os"
	"os/exec"
	"syscall"
)

// serverProcAttr puts the server in its own process group (a Ctrl-C in the
// terminal reaches only its owner, which stops it in order) and has the
// kernel kill it when the thread that started it dies, so a killed owner
// never leaves a server behind.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the server's process group.
func killGroup(p *os.Process) error { return syscall.Kill(-p.Pid, syscall.SIGKILL) }

// exitedOnInterrupt reports whether the server died of the interrupt Stop
// sent, rather than failing with an exit code of its own.
func exitedOnInterrupt(e *exec.ExitError) bool {
	ws, ok := e.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}
