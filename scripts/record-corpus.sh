#!/usr/bin/env bash
# Records a release's corpus of histories with that release's own code:
#   scripts/record-corpus.sh RELEASE COMMIT
# checks COMMIT out in a git worktree, copies the conformance suite's
# patterns and its recorder (testsuite/conformance: the non-test files and
# corpus_record_test.go) into it, runs the recorder there on a dev server
# and writes testsuite/conformance/testdata/corpus/RELEASE. The recorder
# uses only what every release has; a release that lacks the package gets
# it from HEAD, so what is recorded is the patterns run by the release's
# plugin. Needs the Temporal CLI (make tools).
set -euo pipefail

if [[ $# -ne 2 ]]; then
	echo "usage: scripts/record-corpus.sh RELEASE COMMIT (e.g. v0.1.0 598cda5)" >&2
	exit 2
fi
release=$1 commit=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/testsuite/conformance/testdata/corpus/$release"
name=record-corpus
# shellcheck source=release-worktree.sh
source "$root/scripts/release-worktree.sh"

mkdir -p "$tree/testsuite/conformance"
for f in "$root"/testsuite/conformance/*.go; do
	case "$f" in
	*_test.go) ;;
	*) cp "$f" "$tree/testsuite/conformance/" ;;
	esac
done
cp "$root/testsuite/conformance/corpus_record_test.go" "$tree/testsuite/conformance/"

rm -rf "$out"
mkdir -p "$out"
(cd "$tree" && OVERSEER_TEMPORAL_CLI="$cli" go test -count=1 -timeout 20m -run '^TestRecordCorpus$' ./testsuite/conformance -record-corpus "$out")
echo "record-corpus: $(ls "$out" | wc -l) files in $out, recorded by $commit"
