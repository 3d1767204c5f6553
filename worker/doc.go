// Package worker builds, from one [Config], a Temporal client and a worker
// that runs the reference job (package workflows), its simulated agents
// (package activities) and the overseer plugin, with metrics and in-phase
// supervision. It is the worker that `overseer worker`, `overseer dev` and
// `overseer demo` run, and a template for wiring the plugin into your own
// worker. It is a Go module of its own, so that the plugin's module does
// not depend on the metrics exporters and model clients it brings in.
//
// # Running a worker
//
// The zero Config works against a local dev server:
//
//	cfg := worker.Config{JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeHeuristic}}
//	c, err := worker.Dial(ctx, cfg)
//	if err != nil {
//		return err // errors.Is(err, worker.ErrUnreachable) when no server answers
//	}
//	defer c.Close()
//	w, err := worker.New(c, cfg)
//	if err != nil {
//		return err
//	}
//	return w.Run(sdkworker.InterruptCh())
//
// # Connecting
//
// [Dial] reads the Temporal SDK's environment conventions: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_PROFILE and the temporal.toml file, so TLS
// settings and an API key for a self-hosted cluster or Temporal Cloud
// never appear on a command line. [Config].Address and Namespace override
// them; without either, it connects to localhost:7233, namespace default.
//
// # The judge
//
// [JudgeConfig] selects the overseer's judge: the learned judge with its
// shipped model or a model file (the default), the heuristic judge, a Jev
// HTTP endpoint or an OpenAI-compatible API. [JudgeConfigFromEnv] reads it
// from OVERSEER_JUDGE and the variables next to it ([EnvJudge] …); API
// keys are read only from the environment, and a JudgeConfig never prints
// them (String, GoString, MarshalJSON). [Config].Policy sets the verdict
// thresholds; by default the policy that goes with the judge.
//
// # Modes
//
// Unless [Config].Mode or Modes say otherwise, the reference job runs in
// manage mode (it may pause at a gate) and every other workflow type in
// observe mode.
//
// # In-phase supervision
//
// [SupervisionConfig] adds the in-phase supervisor of package supervision
// to long phases: by default it follows the reference job's code phase in
// shadow mode (it records its advice and changes nothing) with its
// rule-based judge.
//
// # Metrics and logs
//
// [NewMetrics] collects the SDK's and the overseer's metrics in a
// Prometheus registry; set its Handler as [Config].MetricsHandler and
// serve it with [ServeMetrics]. The worker then also runs
// [NewMetricsPlugin], which emits the overseer's counters at zero when the
// worker starts and keeps the gauge of jobs paused at a gate current. The
// worker logs through zap ([Config].Logger); [SDKLogger] makes the SDK log
// through the same logger.
package worker
