#!/usr/bin/env bash
# `npm run bench [-- args]`: set up the machine (scripts/setup.sh), migrate, run bench/run.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A database of its own, so the figures do not drift as test runs fill the default one (setup.sh creates it).
export SVC_DB_URL="${SVC_BENCH_DB_URL:-postgresql://postgres@127.0.0.1:5432/svc_bench}"
source scripts/setup.sh
npm run migrate
# bench/run.ts gives its processes a NATS namespace of their own (`bench`, or SVC_BENCH_NAMESPACE), so a system
# already running on this broker never answers the bench's requests.
# `--runtimes [parts]` (npm run bench:runtimes): the parts on the pinned Node and on an older one side by side.
if [[ ${1:-} == --runtimes ]]; then shift; exec node bench/runtimes.ts "$@"; fi
exec node bench/run.ts "$@"
