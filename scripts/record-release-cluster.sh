#!/usr/bin/env bash
# Records, for each release and by the release's own code, the histories
# that need a cluster: a job paused with Temporal's Workflow Pause while at
# a gate (a server from v1.30.0; the dev server is 1.29.1) and a learn
# round, on a Temporal 1.32.0 cluster:
#   scripts/record-release-cluster.sh RELEASE COMMIT [RELEASE COMMIT ...]
# Run scripts/record-release.sh for the release first: this adds
# workflow_pause_at_gate.json and learn_round.json to
# testsuite/e2e/testdata/releases/RELEASE and its manifest. Starts its own
# cluster (scripts/cluster.sh) and stops it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${1:-}" != "--under-cluster" ]]; then
	if (($# < 2 || $# % 2)); then
		echo "usage: scripts/record-release-cluster.sh RELEASE COMMIT [RELEASE COMMIT ...] (e.g. v0.1.0 598cda5)" >&2
		exit 2
	fi
	export OVERSEER_CLUSTER_SERVER=v1.32.0 OVERSEER_CLUSTER_FRESH=1
	export OVERSEER_CLUSTER_DIR="${OVERSEER_CLUSTER_DIR:-$root/.tools/record-pause-cluster}"
	export OVERSEER_CLUSTER_PORT_OFFSET="${OVERSEER_CLUSTER_PORT_OFFSET:-23000}"
	exec bash "$root/scripts/cluster.sh" run bash "$root/scripts/record-release-cluster.sh" --under-cluster "$@"
fi
shift
while (($# >= 2)); do
	release=$1 commit=$2
	shift 2
	(
		out="$root/testsuite/e2e/testdata/releases/$release"
		name=record-release-cluster
		# shellcheck source=release-worktree.sh
		source "$root/scripts/release-worktree.sh"
		cp "$root/testsuite/e2e/release_record_test.go" "$tree/testsuite/e2e/"
		(cd "$tree/testsuite/e2e" && OVERSEER_TEMPORAL_CLI="$cli" go test -v -count=1 -timeout 10m -run '^TestRecordRelease(WorkflowPause|LearnRound)$' . -record-release "$out")
		echo "record-release-cluster: $release recorded by $commit"
	)
done
