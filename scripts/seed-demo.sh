#!/usr/bin/env bash
# `npm run seed:demo`: the local broker's defaults (scripts/setup.sh), then scripts/seed/seed-demo.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SVC_SETUP_QUIET=1 source scripts/setup.sh
exec node scripts/seed/seed-demo.ts "$@"
