#!/usr/bin/env bash
# shutdown-stress.sh: run the end-to-end test TestReplicaShutdown (a replica
# stopped during a stream of creates) RUNS times in a row (default 20) while
# BURNERS busy loops (default 2) keep the CPUs loaded, and report
# "N runs, F failures". make e2e-shutdown-stress runs it; it is not part of
# make test. Every run's log is kept in a temporary directory (printed).
set -uo pipefail

runs=${RUNS:-20}
burners=${BURNERS:-2}
go=${GO:-go}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

assets=$(hack/envtest-assets.sh | tail -n1) || { echo "envtest assets unavailable" >&2; exit 1; }
logs=$(mktemp -d "${TMPDIR:-/tmp}/modwright-shutdown-stress.XXXXXX")
"$go" test -c -o "$logs/e2e.test" ./test/e2e || exit 1

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait "${pids[@]}" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$burners"); do
	( while :; do :; done ) &
	pids+=($!)
done
echo "$burners CPU burners running (pids ${pids[*]}); $runs runs; logs in $logs"

failures=0
start=$(date +%s)
for i in $(seq "$runs"); do
	log="$logs/run-$i.log"
	t0=$(date +%s)
	if (cd test/e2e && KUBEBUILDER_ASSETS="$assets" MODWRIGHT_E2E=1 \
		"$logs/e2e.test" -test.run '^TestReplicaShutdown$' -test.count=1 -test.v) >"$log" 2>&1; then
		status=ok
	else
		status=FAIL
		failures=$((failures + 1))
	fi
	summary=$(grep -Eo '[0-9]+ creates \([0-9]+ before the stop\), [0-9]+ failed; replica a stopped in [^ ]+|replica b stopped in [^ ]+' "$log" | paste -sd ';' -)
	echo "run $i/$runs: $status in $(( $(date +%s) - t0 ))s: $summary"
	if [ "$status" = FAIL ]; then
		grep -E -- '--- FAIL|shutdown_test.go|harness_test.go' "$log" | head -n 20
	fi
done
echo "$runs runs, $failures failures, $(( $(date +%s) - start ))s (with $burners CPU burners; logs in $logs)"
[ "$failures" -eq 0 ]
