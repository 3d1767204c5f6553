# Developer entry points. `make test` is the test command; `make tools`
# installs pinned tools into .tools/bin (git-ignored).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

GO        ?= go
TOOLS_BIN := $(CURDIR)/.tools/bin

# Extra go test flags, e.g. make test TESTFLAGS=-v
TESTFLAGS ?=

# The repository's Go modules, developed together through go.work: the
# plugin's module at the root (only the Temporal SDK and API, zap and
# testify), and one module per heavier part.
MODULES := . overseer/jev/jevopenai notify worker eval ops otel learn dashboard cmd testsuite/e2e
# Every package of every module (./... from the root covers the root module only).
PKGS := ./... $(patsubst %,./%/...,$(filter-out .,$(MODULES)))

# Packages containing workflow code checked for non-determinism.
WORKFLOW_PKGS ?= ./workflows/... ./overseer/... ./otel/... ./bench/... ./learn/... ./testsuite/conformance/...
WORKFLOWCHECK_CONFIG := workflowcheck.config.yaml

.PHONY: tools demo-tools test lint fmt-check tidy-check vet staticcheck workflowcheck doccheck promlint clidoc-check demo bench default-model default-loop-model cluster test-cluster test-pause

tools:
	@bash scripts/install-tools.sh

# The demo needs only the Temporal CLI, not the lint tools.
demo-tools:
	@bash scripts/install-tools.sh temporal

# -timeout 30m: the end-to-end package alone takes about 9 minutes on a
# 2-core machine, close to go test's default limit of 10 per package.
# The tests run through internal/gotest/cmd/gotest: go test, and a test that
# failed only on the Temporal Go SDK test environment's known data race
# (package internal/gotest says which, and why it is not ours) run once more,
# saying so; every other failure fails.
GOTEST := env GO=$(GO) $(GO) run ./internal/gotest/cmd/gotest

test: tools
	$(GOTEST) -race -count=1 -timeout 30m $(TESTFLAGS) -- $(PKGS)

lint: tools fmt-check tidy-check vet staticcheck workflowcheck doccheck promlint clidoc-check

# A Temporal cluster on PostgreSQL on this machine (scripts/cluster.sh, the
# cluster docker-compose.yml describes): `make cluster` runs one until
# Ctrl-C (frontend 127.0.0.1:17233, data kept in .tools/cluster);
# `make test-cluster` starts a fresh one on other ports, runs the end-to-end
# suite against it (OVERSEER_E2E_TARGET=cluster, two workers per task queue)
# and stops it.
CLUSTER_TEST_DIR         ?= $(CURDIR)/.tools/cluster-test
CLUSTER_TEST_PORT_OFFSET ?= 20000

cluster:
	@bash scripts/cluster.sh up

test-cluster:
	OVERSEER_CLUSTER_DIR=$(CLUSTER_TEST_DIR) OVERSEER_CLUSTER_PORT_OFFSET=$(CLUSTER_TEST_PORT_OFFSET) OVERSEER_CLUSTER_FRESH=1 \
		bash scripts/cluster.sh run $(GOTEST) -race -count=1 -timeout 30m $(TESTFLAGS) -- ./testsuite/e2e

# `make test-pause` starts a fresh cluster on Temporal server v1.32.0 with
# Workflow Pause enabled (OVERSEER_CLUSTER_SERVER=v1.32.0, scripts/cluster-v1.32,
# deploy/dynamicconfig/development-sql-workflow-pause.yaml) on its own ports,
# runs the end-to-end tests of a job paused by an operator
# (testsuite/e2e/workflowpause_e2e_test.go) and stops it. The first run builds
# that server (minutes); later runs use .tools/bin/temporal-server-v1.32.0.
# (Offset 25000: the membership ports, 6933-6939 plus the offset, must stay
# below 32768, which the cluster_membership table stores as a smallint.)
PAUSE_TEST_DIR         ?= $(CURDIR)/.tools/cluster-pause-test
PAUSE_TEST_PORT_OFFSET ?= 25000

test-pause:
	OVERSEER_CLUSTER_SERVER=v1.32.0 OVERSEER_CLUSTER_DIR=$(PAUSE_TEST_DIR) OVERSEER_CLUSTER_PORT_OFFSET=$(PAUSE_TEST_PORT_OFFSET) OVERSEER_CLUSTER_FRESH=1 \
		bash scripts/cluster.sh run $(GOTEST) -race -count=1 -timeout 20m -run 'TestE2EWorkflowPause' $(TESTFLAGS) -- ./testsuite/e2e

# Fails (listing the files) if any Go file outside .tools/.git/vendor is not gofmt'ed.
fmt-check:
	@gofiles="$$(find . \( -path ./.tools -o -path ./.git -o -path ./vendor \) -prune -o -name '*.go' -type f -print)"; \
	if [[ -z "$$gofiles" ]]; then echo "gofmt: no Go files"; exit 0; fi; \
	unformatted="$$(gofmt -l $$gofiles)"; \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files need formatting (run gofmt -w):"; \
		echo "$$unformatted"; \
		exit 1; \
	fi; \
	echo "gofmt: ok"

# Fails (showing the diff) when a module's go.mod or go.sum is not tidy.
tidy-check:
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy -diff) || { echo "tidy-check: run 'cd $$m && GOWORK=off go mod tidy'"; exit 1; }; done; echo "tidy-check: ok"

# Fails (printing file:line and what to write instead) when a comment of a
# non-test Go file, godoc included, names the project's internal planning
# documents or a path outside the repository.
doccheck:
	@$(GO) run scripts/doccheck.go

# Fails when docs/cli.md is not what the commands' own flag sets generate
# (a flag added without regenerating it: cd cmd && go test ./overseer/cli
# -run TestCLIReference -update), or when README.md or a guide under docs/
# shows an `overseer ...` command line with a command, subcommand or flag
# the CLI does not have, a `make` target the Makefile does not have, or a
# link to a file or heading that does not exist.
clidoc-check:
	cd cmd && $(GO) test -count=1 -run '^(TestCLIReference|TestDocsCommands|TestDocsCommandsCheckFails|TestDocsMakeTargets|TestDocsLinks)$$' ./overseer/cli

vet:
	$(GO) vet $(PKGS)

# Renders each kustomization of deploy/kubernetes with kustomize and
# validates every object with kubeconform -strict (unknown fields, wrong
# types, missing required fields are errors) against the Kubernetes JSON
# schemas make tools generates offline (scripts/k8sschemas: the OpenAPI
# document of Kubernetes v1.21.2 that sigs.k8s.io/kustomize/kyaml ships).
# testsuite/e2e/kubernetes_test.go checks the rest: secrets only by
# reference, the image the Dockerfile builds, probes and resources.
KUBE_KUSTOMIZATIONS := deploy/kubernetes/base deploy/kubernetes/overlays/tls
kubelint: tools
	@for k in $(KUBE_KUSTOMIZATIONS); do \
		echo "kubelint: $$k"; \
		$(TOOLS_BIN)/kustomize build $$k | $(TOOLS_BIN)/kubeconform -strict -summary \
			-schema-location '$(CURDIR)/.tools/k8s-schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json' -; \
	done; \
	(cd scripts/k8sschemas && GOWORK=off $(GO) mod tidy -diff) || { echo "kubelint: run 'cd scripts/k8sschemas && GOWORK=off go mod tidy'"; exit 1; }; \
	echo "kubelint: ok"


# Checks the alerting rules in deploy/prometheus with promtool from
# Debian's prometheus package (.ci/run installs it): their syntax (check
# rules), their unit tests (test rules, *_test.yml), and that every alert
# has a unit test and a runbook section (### Name) in
# docs/operations-alerts.md. Without promtool it skips, saying so, except
# under CI=true, where it fails.
PROMTOOL ?= promtool
PROM_RULES := $(filter-out %_test.yml %/prometheus.yml,$(wildcard deploy/prometheus/*.yml))
promlint:
	@if ! command -v $(PROMTOOL) >/dev/null 2>&1; then \
		if [[ "$${CI:-}" == "true" ]]; then echo "promlint: $(PROMTOOL) not found (apt-get install -y prometheus)"; exit 1; fi; \
		echo "promlint: SKIPPED: $(PROMTOOL) not found; apt-get install -y prometheus to check deploy/prometheus (CI fails without it)"; exit 0; \
	fi; \
	$(PROMTOOL) check rules $(PROM_RULES); \
	$(PROMTOOL) test rules deploy/prometheus/*_test.yml; \
	missing=0; \
	for a in $$(sed -n -E 's/^ *- alert: *([A-Za-z0-9_]+).*/\1/p' $(PROM_RULES)); do \
		grep -qE "alertname: *$$a\b" deploy/prometheus/*_test.yml || { echo "promlint: alert $$a has no unit test in deploy/prometheus/*_test.yml"; missing=1; }; \
		grep -qE "^### $$a\b" docs/operations-alerts.md || { echo "promlint: alert $$a has no runbook section (### $$a) in docs/operations-alerts.md"; missing=1; }; \
	done; \
	[[ $$missing == 0 ]] || exit 1; \
	echo "promlint: ok"


staticcheck: tools
	$(TOOLS_BIN)/staticcheck $(PKGS)

# workflowcheck exits non-zero (3) when it reports a non-deterministic
# workflow (any func whose first parameter is workflow.Context).
# Patterns whose directory does not exist yet are skipped.
workflowcheck: tools
	@pkgs=""; \
	for p in $(WORKFLOW_PKGS); do \
		if [[ -d "$${p%/...}" ]]; then pkgs="$$pkgs $$p"; else echo "workflowcheck: skipping $$p (no such directory)"; fi; \
	done; \
	if [[ -z "$$pkgs" ]]; then echo "workflowcheck: nothing to check"; exit 0; fi; \
	echo "$(TOOLS_BIN)/workflowcheck -config $(WORKFLOWCHECK_CONFIG)$$pkgs"; \
	$(TOOLS_BIN)/workflowcheck -config $(WORKFLOWCHECK_CONFIG) $$pkgs

demo: demo-tools
	$(GO) run ./cmd/overseer demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Refits the shipped default models and their policies on the shared sample
# of agent runs (../shared/data/traces beside the checkout, or TRACES=DIR):
# the phase model on the runs recast as jobs of phases; the loop model on
# the runs as the agent loop a team writes, without the reference of their
# succeeded runs (each workflow type gets its own at its first
# recalibration), and its policy calibrated for the judge as it answers a
# type at stage 0.
TRACES ?= ../shared/data/traces/mini-swe-agent-gemini-3-pro
default-model:
	$(GO) run ./cmd/overseer train --traces $(TRACES) --as-phases --version learned-mini-swe-v2 \
		--out overseer/judge/default_model.json --policy-out overseer/judge/default_policy.json

default-loop-model:
	$(GO) run ./cmd/overseer train --traces $(TRACES) --version learned-loop-mini-swe-v2 --no-loop-reference \
		--out overseer/judge/default_loop_model.json
	$(GO) run ./cmd/overseer calibrate --traces $(TRACES) --model overseer/judge/default_loop_model.json \
		--out overseer/judge/default_loop_policy.json
