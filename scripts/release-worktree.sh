# Sourced by the recorders (record-corpus.sh, record-release.sh): with
# $root, $commit and $name set, checks the Temporal CLI ($cli) and checks
# $commit out in a git worktree ($tree), removed when the script exits.
cli="${OVERSEER_TEMPORAL_CLI:-$root/.tools/bin/temporal}"
[[ -x "$cli" ]] || { echo "$name: no Temporal CLI at $cli: run make tools, or set OVERSEER_TEMPORAL_CLI" >&2; exit 1; }

tree=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; }
trap cleanup EXIT
git -C "$root" worktree add --detach "$tree" "$commit" >/dev/null
