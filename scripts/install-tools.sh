#!/usr/bin/env bash
# Installs the project's developer tools into <repo root>/.tools/bin
# (git-ignored). Idempotent: a tool is only (re)built when its binary is
# missing or was built from a different module version.
#
#   scripts/install-tools.sh            # all of them; or: make tools
#   scripts/install-tools.sh temporal   # only the named ones (make demo needs only temporal)
#
# Every tool is pinned below; bump a version here to upgrade it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin"

# Pinned versions (verified with Go 1.26).
TEMPORAL_CLI_VERSION="v1.5.1"   # later CLI releases do not build in this environment
STATICCHECK_VERSION="v0.8.2"    # staticcheck 2026.2.2
WORKFLOWCHECK_VERSION="v0.6.0"

command -v go >/dev/null 2>&1 || { echo "install-tools: 'go' not found on PATH" >&2; exit 1; }
mkdir -p "$BIN"

# Major.minor of the active Go toolchain, e.g. "go1.26". Analyzers
# (staticcheck, workflowcheck) must be rebuilt when it changes, because they
# type-check the code with the go/types they were compiled with.
GO_MINOR="$(go env GOVERSION | sed -E 's/^(go[0-9]+\.[0-9]+).*/\1/')"

# Prints the module version recorded in a Go binary (empty if unknown).
binary_module_version() {
	local bin="$1" module="$2"
	go version -m "$bin" 2>/dev/null | awk -v m="$module" '($1 == "mod" || $1 == "dep") && $2 == m { print $3; exit }'
}

# install_tool NAME PACKAGE MODULE VERSION TOOLCHAIN_SENSITIVE
install_tool() {
	local name="$1" pkg="$2" module="$3" version="$4" toolchain_sensitive="$5"
	local bin="$BIN/$name" stamp="$BIN/.$name.version"
	local want="$pkg@$version"
	if [[ "$toolchain_sensitive" == "yes" ]]; then
		want="$want $GO_MINOR"
	fi

	if [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		printf '%-14s %-8s up to date   %s\n' "$name" "$version" "${bin#"$ROOT"/}"
		return
	fi

	# No (matching) stamp: adopt an existing binary if it was built from the
	# pinned version (e.g. installed by hand with the same go install command).
	if [[ -x "$bin" && "$(binary_module_version "$bin" "$module")" == "$version" ]]; then
		local built_with
		built_with="$(go version "$bin" 2>/dev/null | awk '{print $NF}' | sed -E 's/^(go[0-9]+\.[0-9]+).*/\1/')"
		if [[ "$toolchain_sensitive" != "yes" || "$built_with" == "$GO_MINOR" ]]; then
			echo "$want" >"$stamp"
			printf '%-14s %-8s up to date   %s\n' "$name" "$version" "${bin#"$ROOT"/}"
			return
		fi
	fi

	local start=$SECONDS
	rm -f "$stamp"
	if ! GOBIN="$BIN" go install "$pkg@$version"; then
		echo "install-tools: failed to install $pkg@$version" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
	printf '%-14s %-8s installed    %s (%ss)\n' "$name" "$version" "${bin#"$ROOT"/}" "$((SECONDS - start))"
}

# wanted NAME: true when NAME was asked for, or when no name was given.
wanted() {
	[[ ${#SELECTED[@]} -eq 0 ]] && return 0
	local t
	for t in "${SELECTED[@]}"; do [[ "$t" == "$1" ]] && return 0; done
	return 1
}
SELECTED=("$@")
for t in "${SELECTED[@]}"; do
	case "$t" in
	temporal | staticcheck | workflowcheck) ;;
	*) echo "install-tools: unknown tool '$t': use temporal, staticcheck or workflowcheck" >&2; exit 2 ;;
	esac
done

if wanted temporal; then
	install_tool temporal      github.com/temporalio/cli/cmd/temporal          github.com/temporalio/cli                     "$TEMPORAL_CLI_VERSION"  no
fi
if wanted staticcheck; then
	install_tool staticcheck   honnef.co/go/tools/cmd/staticcheck               honnef.co/go/tools                            "$STATICCHECK_VERSION"   yes
fi
if wanted workflowcheck; then
	install_tool workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck  go.temporal.io/sdk/contrib/tools/workflowcheck "$WORKFLOWCHECK_VERSION" yes
fi
