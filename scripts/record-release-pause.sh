#!/usr/bin/env bash
# Records, for each release, a job paused with Temporal's Workflow Pause
# while at a gate, by the release's own code, on a Temporal 1.32.0 cluster
# (Workflow Pause needs a server from v1.30.0; the dev server is 1.29.1):
#   scripts/record-release-pause.sh RELEASE COMMIT [RELEASE COMMIT ...]
# Run scripts/record-release.sh for the release first: this adds
# workflow_pause_at_gate.json to testsuite/e2e/testdata/releases/RELEASE
# and its manifest. Starts its own cluster (scripts/cluster.sh) and stops it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ "${1:-}" != "--under-cluster" ]]; then
	if (($# < 2 || $# % 2)); then
		echo "usage: scripts/record-release-pause.sh RELEASE COMMIT [RELEASE COMMIT ...] (e.g. v0.1.0 598cda5)" >&2
		exit 2
	fi
	export OVERSEER_CLUSTER_SERVER=v1.32.0 OVERSEER_CLUSTER_FRESH=1
	export OVERSEER_CLUSTER_DIR="${OVERSEER_CLUSTER_DIR:-$root/.tools/record-pause-cluster}"
	export OVERSEER_CLUSTER_PORT_OFFSET="${OVERSEER_CLUSTER_PORT_OFFSET:-23000}"
	exec bash "$root/scripts/cluster.sh" run bash "$root/scripts/record-release-pause.sh" --under-cluster "$@"
fi
shift
while (($# >= 2)); do
	release=$1 commit=$2
	shift 2
	(
		out="$root/testsuite/e2e/testdata/releases/$release"
		name=record-release-pause
		# shellcheck source=release-worktree.sh
		source "$root/scripts/release-worktree.sh"
		cp "$root/testsuite/e2e/release_record_test.go" "$tree/testsuite/e2e/"
		(cd "$tree/testsuite/e2e" && OVERSEER_TEMPORAL_CLI="$cli" go test -v -count=1 -timeout 10m -run '^TestRecordReleaseWorkflowPause$' . -record-release "$out")
		echo "record-release-pause: $release recorded by $commit"
	)
done
