#!/usr/bin/env bash
# tools.sh: install the pinned command-line tools the tests and generators use
# into <repo>/.cache/tools/bin (git-ignored), built from the Go module proxy.
#
#   hack/tools.sh            install every tool; prints the bin directory last
#   hack/tools.sh helm       install one tool; prints its absolute path last
#
# Tools (name, module path, version):
#   helm            helm.sh/helm/v3/cmd/helm                       v3.22.0
#   controller-gen  sigs.k8s.io/controller-tools/cmd/controller-gen v0.23.0
#   kustomize       sigs.k8s.io/kustomize/kustomize/v5             v5.5.0
#   registry        github.com/distribution/distribution/v3/cmd/registry v3.1.2
#                   (the OCI registry the rule-pack tests push to and pull from)
#
# A tool is rebuilt only when its stamp (.cache/tools/bin/NAME.version) does
# not name the pinned version. Progress goes to stderr. GO overrides the go
# command.
set -euo pipefail

log() { printf 'tools: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd -- "$script_dir/.." && pwd -P)
GO=${GO:-go}
bin_dir=${TOOLS_BIN_DIR:-$repo_root/.cache/tools/bin}
mkdir -p -- "$bin_dir"

declare -A pkg=(
	[helm]=helm.sh/helm/v3/cmd/helm
	[controller-gen]=sigs.k8s.io/controller-tools/cmd/controller-gen
	[kustomize]=sigs.k8s.io/kustomize/kustomize/v5
	[registry]=github.com/distribution/distribution/v3/cmd/registry
)
declare -A ver=(
	[helm]=v3.22.0
	[controller-gen]=v0.23.0
	[kustomize]=v5.5.0
	[registry]=v3.1.2
)

install_tool() { # name
	local name=$1 stamp="$bin_dir/$1.version"
	[[ -n ${pkg[$name]:-} ]] || die "unknown tool '$name' (known: ${!pkg[*]})"
	if [[ -x $bin_dir/$name && -f $stamp && $(cat "$stamp") == "${ver[$name]}" ]]; then
		return 0
	fi
	log "building $name ${ver[$name]} from the module proxy (a few minutes the first time)"
	local start=$SECONDS
	# Outside any module and workspace, so the repo's go.mod is not touched.
	(cd "$bin_dir" && GOWORK=off GOFLAGS= GOBIN="$bin_dir" CGO_ENABLED=0 \
		"$GO" install "${pkg[$name]}@${ver[$name]}" >&2) || die "go install ${pkg[$name]}@${ver[$name]} failed"
	printf '%s\n' "${ver[$name]}" >"$stamp"
	log "built $name ${ver[$name]} in $((SECONDS - start))s"
}

if [[ $# -eq 0 ]]; then
	for t in "${!pkg[@]}"; do install_tool "$t"; done
	printf '%s\n' "$bin_dir"
else
	for t in "$@"; do install_tool "$t"; done
	for t in "$@"; do printf '%s\n' "$bin_dir/$t"; done
fi
