// Command overseer runs and operates temporal-overseer: the demo, a dev
// server with a worker, a worker against any cluster, and the operator
// commands (start, status, list, resume). See `overseer help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	// The learn record store in S3, GCS or Azure (worker --learn-records
	// URL); here, not in cli, so that the CLI's tests build without them.
	_ "github.com/corohq/temporal-overseer/learn/blobdrivers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
