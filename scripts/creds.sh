#!/usr/bin/env bash
# `npm run creds -- …`: the local broker's defaults (scripts/setup.sh), then scripts/creds.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SVC_SETUP_QUIET=1 source scripts/setup.sh
exec node scripts/creds.ts "$@"
