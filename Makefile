# Developer entry points. `make test` is the test command; `make tools`
# installs pinned tools into .tools/bin (git-ignored).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

GO        ?= go
TOOLS_BIN := $(CURDIR)/.tools/bin

# Extra go test flags, e.g. make test TESTFLAGS=-v
TESTFLAGS ?=

# Packages containing workflow code checked for non-determinism.
WORKFLOW_PKGS ?= ./workflows/... ./overseer/...
WORKFLOWCHECK_CONFIG := workflowcheck.config.yaml

.PHONY: tools demo-tools test lint fmt-check vet staticcheck workflowcheck demo bench default-model

tools:
	@bash scripts/install-tools.sh

# The demo needs only the Temporal CLI, not the lint tools.
demo-tools:
	@bash scripts/install-tools.sh temporal

test: tools
	$(GO) test -race -count=1 $(TESTFLAGS) ./...

lint: tools fmt-check vet staticcheck workflowcheck

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

vet:
	$(GO) vet ./...

staticcheck: tools
	$(TOOLS_BIN)/staticcheck ./...

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
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Refits the shipped default model and its policy on the shared sample of
# agent runs (../shared/data/traces beside the checkout, or TRACES=DIR).
TRACES ?= ../shared/data/traces/mini-swe-agent-gemini-3-pro
default-model:
	$(GO) run ./cmd/overseer train --traces $(TRACES) --version learned-mini-swe-v1 \
		--out overseer/default_model.json --policy-out overseer/default_policy.json
