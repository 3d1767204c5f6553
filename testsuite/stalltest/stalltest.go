// Package stalltest checks that an HTTP server cuts a request whose body
// stalls, so that a client cannot hold the server's connections open for
// ever by sending a few bytes of what it announced.
package stalltest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// BodyCut sends method path to addr with headers that announce a 100-byte
// body, sends 10 bytes of it and no more, and reports whether the server
// closed the connection within wait. Give the server a read timeout well
// below wait: wait only bounds the test, it is not what is measured.
func BodyCut(t testing.TB, addr, method, path string, wait time.Duration) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatalf("stalltest: dial %s: %v", addr, err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\nby=alice&", method, path, addr); err != nil {
		t.Fatalf("stalltest: write to %s: %v", addr, err)
	}
	// A server without a read timeout never closes the connection: the
	// deadline ends the wait.
	if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
		t.Fatalf("stalltest: %v", err)
	}
	_, err = io.Copy(io.Discard, conn) // whatever the server answers, until it closes
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}
