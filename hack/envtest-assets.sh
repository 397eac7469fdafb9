#!/usr/bin/env bash
# envtest-assets.sh: provide the controller-runtime envtest assets (etcd and
# kube-apiserver) for the end-to-end tests, cached in <repo>/.cache/envtest.
#
#   export KUBEBUILDER_ASSETS="$(hack/envtest-assets.sh | tail -n1)"
#
# etcd comes from the Debian package etcd-server (installed with apt-get if no
# etcd binary is found); kube-apiserver is built from k8s.io/kubernetes
# fetched through the Go module proxy. The last line on stdout is the absolute
# path of the bin directory; everything else goes to stderr.
#
# Environment:
#   KUBE_VERSION        k8s.io/kubernetes version to build (default: v1.Y.Z
#                       matching k8s.io/apimachinery v0.Y.Z in go.mod; if that
#                       release is not on the proxy, the newest older one is used)
#   ENVTEST_ASSETS_DIR  cache directory (default: <repo>/.cache/envtest)
#   ENVTEST_FORCE=1     rebuild kube-apiserver even when cached (same as --force)
#   GO                  go command (default: go)
# Flags:
#   --force   rebuild kube-apiserver even if the cached one matches
#   --verify  after providing the assets, start etcd + kube-apiserver once and
#             check that /readyz answers (takes a few seconds)
set -euo pipefail

log() { printf 'envtest-assets: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

force=${ENVTEST_FORCE:-0}
verify=0
for arg in "$@"; do
	case $arg in
	--force) force=1 ;;
	--verify) verify=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
		exit 0
		;;
	*) die "unknown argument: $arg (see --help)" ;;
	esac
done

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
repo_root=$(cd -- "$script_dir/.." && pwd -P)
GO=${GO:-go}

assets_dir=${ENVTEST_ASSETS_DIR:-$repo_root/.cache/envtest}
mkdir -p -- "$assets_dir/bin"
assets_dir=$(cd -- "$assets_dir" && pwd -P)
bin_dir=$assets_dir/bin
stamp=$assets_dir/kube-apiserver.stamp

# --- requested version (no network needed) ----------------------------------
explicit_version=1
requested=${KUBE_VERSION:-}
if [[ -z $requested ]]; then
	explicit_version=0
	apimachinery=$(awk '
		$1 == "require" && $2 == "k8s.io/apimachinery" { print $3; exit }
		$1 == "k8s.io/apimachinery" && $2 ~ /^v/ { print $2; exit }
	' "$repo_root/go.mod")
	[[ $apimachinery =~ ^v0\.([0-9]+)\.([0-9]+)$ ]] ||
		die "cannot derive KUBE_VERSION from k8s.io/apimachinery '${apimachinery:-<none>}' in $repo_root/go.mod; set KUBE_VERSION"
	requested=v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
fi
[[ $requested == v* ]] || requested=v$requested
[[ $requested =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "KUBE_VERSION must look like v1.Y.Z, got '$requested'"

# --- helpers -----------------------------------------------------------------
stamp_value() { # key -> value from the stamp file
	[[ -f $stamp ]] && awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2); exit }' "$stamp"
	return 0
}

cached() { # the stamp matches the requested version (asked for or actually built)
	[[ $force != 1 && -x $bin_dir/kube-apiserver && -x $bin_dir/etcd ]] &&
		[[ $(stamp_value requested) == "$requested" || $(stamp_value version) == "$requested" ]]
}

find_etcd() { # prints the path of a system etcd binary (not our own symlink)
	local c
	for c in "$(command -v etcd 2>/dev/null || true)" /usr/bin/etcd /usr/local/bin/etcd; do
		[[ -n $c && -x $c && ! -d $c ]] || continue
		c=$(readlink -f -- "$c")
		[[ $c == "$bin_dir"/* ]] && continue
		printf '%s\n' "$c"
		return 0
	done
	return 1
}

install_etcd() {
	local -a sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null || die "etcd is missing and not running as root; install etcd-server (apt-get install etcd-server)"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null || die "etcd is missing and apt-get is not available; install etcd >= 3.4 and put it on PATH"
	log "installing Debian package etcd-server"
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >&2; then
		log "apt-get install failed; running apt-get update and retrying"
		"${sudo[@]}" apt-get update >&2
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >&2
	fi
}

link_atomic() { # target link
	[[ -L $2 && $(readlink -- "$2") == "$1" ]] && return 0
	ln -s -- "$1" "$2.tmp.$$"
	mv -fT -- "$2.tmp.$$" "$2"
}

etcd_version() { "$bin_dir/etcd" --version 2>/dev/null | awk '/^etcd Version:/ { print $3; exit }'; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

stop_pid() { # SIGTERM, then SIGKILL after 15s; pid must be a child of this shell
	local i
	kill "$1" 2>/dev/null || return 0
	for ((i = 0; i < 30; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.5
	done
	kill -9 "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# Start etcd and kube-apiserver on loopback once and check that /readyz answers.
verify_pair() {
	local tmp etcd_port peer_port api_port code="" i rc=0
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/envtest-verify.XXXXXX")
	etcd_port=$(free_port) peer_port=$(free_port) api_port=$(free_port)
	log "verify: starting etcd on 127.0.0.1:$etcd_port"
	"$bin_dir/etcd" --data-dir "$tmp/etcd" --name verify \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
		--initial-cluster "verify=http://127.0.0.1:$peer_port" >"$tmp/etcd.log" 2>&1 &
	local etcd_pid=$!
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=service-accounts \
		-keyout "$tmp/sa.key" -out "$tmp/sa.crt" >/dev/null 2>&1
	# AlwaysAllow turns anonymous auth off, so authenticate with a static token.
	local token=verify-$RANDOM$RANDOM
	printf '%s,admin,admin,"system:masters"\n' "$token" >"$tmp/tokens.csv"
	log "verify: starting kube-apiserver on 127.0.0.1:$api_port"
	"$bin_dir/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$tmp/certs" \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$tmp/sa.crt" \
		--service-account-signing-key-file "$tmp/sa.key" --service-cluster-ip-range 10.0.0.0/24 \
		--authorization-mode AlwaysAllow --token-auth-file "$tmp/tokens.csv" >"$tmp/apiserver.log" 2>&1 &
	local api_pid=$!
	for ((i = 0; i < 120; i++)); do
		kill -0 "$api_pid" 2>/dev/null || break
		code=$(curl -sk -H "Authorization: Bearer $token" -o "$tmp/readyz" -w '%{http_code}' \
			"https://127.0.0.1:$api_port/readyz" || true)
		[[ $code == 200 ]] && break
		sleep 0.5
	done
	if [[ $code == 200 ]]; then
		log "verify: /readyz answered 200 '$(cat "$tmp/readyz")' (kube-apiserver $("$bin_dir/kube-apiserver" --version), etcd $(etcd_version))"
	else
		log "verify: kube-apiserver not ready (last HTTP status '${code:-none}'); logs:"
		tail -n 30 "$tmp/etcd.log" "$tmp/apiserver.log" >&2 || true
		rc=1
	fi
	# Stop kube-apiserver before etcd (without etcd its shutdown can hang).
	stop_pid "$api_pid"
	stop_pid "$etcd_pid"
	rm -rf -- "$tmp"
	return "$rc"
}

finish() {
	log "kube-apiserver $(stamp_value version), etcd $(etcd_version) in $bin_dir"
	if [[ $verify == 1 ]]; then
		verify_pair || die "verification failed"
	fi
	printf '%s\n' "$bin_dir"
}

# --- fast path ------------------------------------------------------------------
if cached; then
	finish
	exit 0
fi

# --- slow path, serialized by a lock ----------------------------------------------
if command -v flock >/dev/null; then
	exec 9>"$assets_dir/.lock"
	if ! flock -n 9; then
		log "waiting for another envtest-assets.sh run to finish"
		flock 9
	fi
else
	log "warning: flock not found, not locking"
fi
if cached; then # another invocation did the work while we waited
	finish
	exit 0
fi
rm -f -- "$bin_dir"/.kube-apiserver.tmp.* "$stamp".tmp.* # leftovers of interrupted runs

# etcd
if ! etcd_path=$(find_etcd); then
	install_etcd
	etcd_path=$(find_etcd) || die "etcd-server installed but no etcd binary found"
fi
link_atomic "$etcd_path" "$bin_dir/etcd"
log "etcd: $etcd_path (version $(etcd_version))"

# kube-apiserver. Go commands run in our own modules under src/ (never the
# repo's go.mod), without workspaces and without a -mod setting from GOFLAGS.
export GOWORK=off
GOFLAGS=$(sed -E 's/(^|[[:space:]])-mod=[^[:space:]]*//g' <<<"${GOFLAGS:-}")
export GOFLAGS
src_root=$assets_dir/src
mkdir -p -- "$src_root"
[[ -f $src_root/go.mod ]] || printf 'module envtest.invalid/query\n\ngo 1.21\n' >"$src_root/go.mod"
goq() { (cd "$src_root" && "$GO" "$@"); }

json_str() { # key: first "key": "value" in JSON on stdin (pretty or compact)
	grep -o "\"$1\": *\"[^\"]*\"" | head -n1 | sed 's/^[^:]*: *"//; s/"$//' || true
}

# prepare_module vX.Y.Z: fetch k8s.io/kubernetes@vX.Y.Z, write the throwaway build
# module pinning every staging module to v0.Y.Z and resolve the dependencies of
# cmd/kube-apiserver. Returns 1 if that release cannot be fetched. Sets src,
# minor, k8s_commit, k8s_time.
prepare_module() {
	local v=$1 info gomod staging go_directive sv m
	[[ $v =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || return 1
	minor=${BASH_REMATCH[1]}
	sv=v0.$minor.${BASH_REMATCH[2]}
	log "fetching k8s.io/kubernetes@$v"
	if ! info=$(goq mod download -json "k8s.io/kubernetes@$v" 2>/dev/null); then
		log "k8s.io/kubernetes@$v: $(json_str Error <<<"$info" | sed 's/\\n.*//')"
		return 1
	fi
	gomod=$(json_str GoMod <<<"$info")
	[[ -f $gomod ]] || { log "no go.mod for k8s.io/kubernetes@$v"; return 1; }
	k8s_commit=$(json_str Hash <<<"$info")
	k8s_time=$(json_str Time <"$(json_str Info <<<"$info")")

	# Staging modules: required by k8s.io/kubernetes (at v0.0.0) and replaced
	# by a local ./staging/... path in its go.mod.
	staging=$(goq mod edit -print "$gomod" | awk '
		/^require \($/ { inreq = 1; next }
		/^replace \($/ { inrep = 1; next }
		/^\)$/ { inreq = inrep = 0; next }
		/^require / { req[$2] = 1; next }
		inreq { req[$1] = 1; next }
		/^replace / { sub(/^replace /, ""); inrep_line = 1 }
		inrep || inrep_line {
			inrep_line = 0
			if (split($0, f, "=>") != 2) next
			split(f[1], o, " "); split(f[2], w, " ")
			if (w[1] ~ /^\.\.?\//) local[o[1]] = 1
		}
		END { for (m in req) if (m in local) print m }
	' | sort)
	[[ -n $staging ]] || { log "found no staging modules in $gomod"; return 1; }
	go_directive=$(awk '$1 == "go" { print $2; exit }' "$gomod")

	src=$src_root/kubernetes-$v
	rm -rf -- "$src"
	mkdir -p -- "$src"
	{
		echo "// Throwaway module to build kube-apiserver; generated by hack/envtest-assets.sh."
		echo "module envtest.invalid/kube-apiserver"
		echo
		echo "go ${go_directive:-1.24}"
		echo
		echo "require k8s.io/kubernetes $v"
		echo
		echo "replace ("
		while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$sv"; done <<<"$staging"
		echo ")"
	} >"$src/go.mod"
	log "build module $src/go.mod pins $(wc -l <<<"$staging") staging modules to $sv; resolving dependencies"
	if ! (cd "$src" && "$GO" get "k8s.io/kubernetes/cmd/kube-apiserver@$v" >&2); then
		log "cannot resolve the dependencies of k8s.io/kubernetes@$v"
		return 1
	fi
}

version=$requested
if [[ $force != 1 && -x $bin_dir/kube-apiserver ]] &&
	[[ $(stamp_value requested) == "$requested" || $(stamp_value version) == "$requested" ]]; then
	version=$(stamp_value version) # only etcd needed fixing
else
	# Candidates: the requested release; unless KUBE_VERSION was given, older
	# patch releases of the same minor (the proxy's version list is often
	# incomplete for recent releases) and then the newest listed older releases.
	candidates=("$requested")
	if [[ $explicit_version == 0 ]]; then
		[[ $requested =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]
		for ((p = BASH_REMATCH[2] - 1; p >= 0; p--)); do candidates+=("v1.${BASH_REMATCH[1]}.$p"); done
		if listed=$(goq list -m -versions k8s.io/kubernetes 2>/dev/null); then
			mapfile -t -O "${#candidates[@]}" candidates < <(tr ' ' '\n' <<<"$listed" |
				grep -E '^v1\.[0-9]+\.[0-9]+$' | { cat; echo "v1.${BASH_REMATCH[1]}.0"; } | sort -uV |
				awk -v r="v1.${BASH_REMATCH[1]}.0" '$0 == r { exit } { print }' | tail -n 3 | sort -rV)
		fi
	fi
	version=
	for c in "${candidates[@]}"; do
		if prepare_module "$c"; then
			version=$c
			break
		fi
		[[ $explicit_version == 1 ]] && die "k8s.io/kubernetes@$c cannot be built from the module proxy"
		log "k8s.io/kubernetes@$c is not usable from the module proxy; trying an older release"
	done
	[[ -n $version ]] || die "no usable k8s.io/kubernetes release at or below $requested (tried ${candidates[*]})"
	[[ $version == "$requested" ]] || log "using k8s.io/kubernetes@$version instead of $requested"

	ldflags="-s -w"
	ldflags+=" -X k8s.io/component-base/version.gitVersion=$version"
	ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
	ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
	ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
	[[ -n $k8s_commit ]] && ldflags+=" -X k8s.io/component-base/version.gitCommit=$k8s_commit"
	[[ -n $k8s_time ]] && ldflags+=" -X k8s.io/component-base/version.buildDate=$k8s_time"

	tmp_bin=$bin_dir/.kube-apiserver.tmp.$$
	trap 'rm -f -- "$tmp_bin"' EXIT
	trap 'exit 130' INT TERM
	log "building kube-apiserver $version (the first build takes several minutes)"
	start=$SECONDS
	(cd "$src" && CGO_ENABLED=0 "$GO" build -mod=mod -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$tmp_bin" k8s.io/kubernetes/cmd/kube-apiserver >&2)
	got=$("$tmp_bin" --version 2>&1) || die "built kube-apiserver does not run: $got"
	[[ $got == "Kubernetes $version" ]] || die "built kube-apiserver reports '$got', expected 'Kubernetes $version'"
	mv -f -- "$tmp_bin" "$bin_dir/kube-apiserver"
	trap - EXIT
	log "built kube-apiserver $version in $((SECONDS - start))s"
fi

printf 'requested=%s\nversion=%s\netcd=%s\n' "$requested" "$version" "$etcd_path" >"$stamp.tmp.$$"
mv -f -- "$stamp.tmp.$$" "$stamp"
finish
