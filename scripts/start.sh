#!/usr/bin/env bash
# `npm start`: the whole system (both gateways, every actor) on this machine's local services.
# scripts/setup.sh installs what is missing, starts the services and exports local defaults for every
# SVC_* variable that is unset; set any of them to point elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
npm run migrate
exec npx tsx main.ts
