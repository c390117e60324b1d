#!/usr/bin/env bash
# `npm run bench [-- args]`: set up the machine (scripts/setup.sh), migrate, run bench/run.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
npm run migrate
exec node --import tsx bench/run.ts "$@"
