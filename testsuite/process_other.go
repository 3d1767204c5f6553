//go:build !linux

package testsuite

import (
	"os"
	"os/exec"
	"syscall"
)

// serverProcAttr: no parent-death signal outside Linux; Stop ends the
// server, and a killed owner leaves it running.
func serverProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the server.
func killGroup(p *os.Process) error { return p.Kill() }

// exitedOnInterrupt accepts any exit after the interrupt.
func exitedOnInterrupt(*exec.ExitError) bool { return true }
