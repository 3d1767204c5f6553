#!/usr/bin/env bash
# Records the reference job's histories of a release with that release's
# own code:
#   scripts/record-release.sh RELEASE COMMIT
# checks COMMIT out in a git worktree, copies the recorder
# (testsuite/e2e/release_record_test.go) into it, runs it there on a dev
# server and writes testsuite/e2e/testdata/releases/RELEASE, which
# TestReleaseHistoriesReplay replays on this code. Needs the Temporal CLI
# (make tools).
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: scripts/record-release.sh RELEASE COMMIT (e.g. v0.1.0 598cda5)" >&2
	exit 2
fi
release=$1 commit=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testsuite/e2e/testdata/releases/$release"
name=record-release
# shellcheck source=release-worktree.sh
source "$root/scripts/release-worktree.sh"
cp "$root/testsuite/e2e/release_record_test.go" "$tree/testsuite/e2e/"

rm -rf "$out"
mkdir -p "$out"
(cd "$tree/testsuite/e2e" && OVERSEER_TEMPORAL_CLI="$cli" go test -count=1 -timeout 20m -run '^TestRecordReleaseHistories$' . -record-release "$out")
echo "record-release: $(ls "$out" | wc -l) files in $out, recorded by $commit"
