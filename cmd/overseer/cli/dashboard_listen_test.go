package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A dashboard without a sign-in stays private: beyond loopback it takes
// --oidc-issuer, --trusted-proxy or --insecure, refused in one sentence
// before anything starts — for overseer dashboard and overseer dev alike.
func TestDashboardBeyondLoopbackWithoutSignInIsRefused(t *testing.T) {
	for _, tc := range []struct{ cmd, listen string }{
		{"dashboard", "0.0.0.0:0"},
		{"dashboard", ":0"},
		{"dashboard", "[::]:0"},
		{"dashboard", "10.1.2.3:8080"},
		{"dev", "0.0.0.0:0"},
	} {
		args := []string{tc.cmd, "--listen", tc.listen}
		if tc.cmd == "dev" {
			// Were it not refused, it would start; the deadline ends it.
			args = append(args, "--port", "0", "--ui-port", "0", "--metrics", "")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errOut bytes.Buffer
		code := Main(ctx, args, &out, &errOut)
		cancel()
		assert.Equal(t, 2, code, "%v: %s%s", args, out.String(), errOut.String())
		assert.Equal(t, "overseer "+tc.cmd+": --listen "+tc.listen+" reaches beyond loopback and the dashboard has no sign-in: "+
			"give --oidc-issuer or --trusted-proxy, listen on 127.0.0.1, or pass --insecure to let anyone who reaches it resume and abort jobs\n", errOut.String(), args)
		assert.Empty(t, out.String(), "%v: nothing started", args)
	}
}

var dashboardOn = regexp.MustCompile(`Dashboard on (http://\S+/)`)

// With --insecure it serves and warns; on loopback, or with a sign-in, it
// serves without a warning.
func TestDashboardServesBeyondLoopbackWithInsecureOrASignIn(t *testing.T) {
	srv := devServer(t)
	const warning = "Warning: --insecure: the dashboard has no sign-in and 0.0.0.0:0 reaches beyond loopback: anyone who reaches it can resume and abort jobs\n"
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"beyond loopback with --insecure", []string{"--listen", "0.0.0.0:0", "--insecure"}, true},
		{"loopback", []string{"--listen", "127.0.0.1:0"}, false},
		{"localhost", []string{"--listen", "localhost:0"}, false},
		{"beyond loopback behind a trusted proxy", []string{"--listen", "0.0.0.0:0", "--trusted-proxy", "10.0.0.0/8"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, exited := background(t, &Dashboard{}, append([]string{"--address", srv.FrontendHostPort(), "--namespace", srv.Namespace()}, tc.args...)...)
			waitFor(t, "the dashboard to serve", 20*time.Second, func() bool {
				if ok, err := exited(); ok {
					t.Fatalf("overseer dashboard returned: %v\n%s", err, out)
				}
				return dashboardOn.MatchString(out.String())
			})
			if tc.warn {
				assert.True(t, strings.HasPrefix(out.String(), warning), "the warning comes first: %q", out.String())
			} else {
				assert.NotContains(t, out.String(), "Warning")
			}
		})
	}
}
