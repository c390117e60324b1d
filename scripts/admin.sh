#!/usr/bin/env bash
# `npm run admin -- …`: the local defaults (scripts/setup.sh: SVC_DB_URL, SVC_ADMIN_EMAIL, the broker), then
# scripts/admin.ts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SVC_SETUP_QUIET=1 source scripts/setup.sh
exec node scripts/admin.ts "$@"
