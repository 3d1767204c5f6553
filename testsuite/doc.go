// Package testsuite runs a local Temporal dev server for tests and demos.
//
// [StartDevServer] starts the Temporal CLI's `server start-dev` on
// 127.0.0.1, with the overseer's search attributes registered, and returns
// once a client is connected to it; [DevServer.Stop] ends it. The server
// keeps its state in memory, so every start is a fresh server:
//
//	func TestJob(t *testing.T) {
//		srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{})
//		if err != nil {
//			t.Fatal(err)
//		}
//		t.Cleanup(func() { _ = srv.Stop() })
//		w := worker.New(srv.Client(), "jobs", worker.Options{Plugins: []worker.Plugin{plugin}})
//		…
//	}
//
// # The Temporal CLI
//
// The CLI binary is never downloaded. It is the file named by the
// OVERSEER_TEMPORAL_CLI environment variable ([TemporalCLIEnv]); else,
// inside a checkout of this repository, .tools/bin/temporal, which `make
// tools` installs at the pinned [TemporalCLIVersion]; else `temporal` on
// PATH ([TemporalCLIPath]). Without one, StartDevServer returns an error
// that says how to get it.
//
// # Ports and processes
//
// The server listens on a free port unless [DevServerOptions].Port names
// one; a port that is taken is a [PortInUseError]. It runs in a process
// group of its own and, on Linux, dies with the process that started it,
// even when that process is killed, so a crashed test leaves no server
// behind. Stop interrupts it and kills it if it is still running 10 s
// later.
//
// Package testsuite/judgetest holds a conformance suite for judges.
package testsuite
