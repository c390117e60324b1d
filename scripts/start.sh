#!/usr/bin/env bash
# `npm start`: the whole system (both gateways, every actor) on this machine's local services.
# scripts/setup.sh installs what is missing, starts the services and exports local defaults for every
# SVC_* variable that is unset; set any of them to point elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
npm run migrate
# One node process with tsx's loader, so SIGTERM/SIGINT reach the app itself (an `npx tsx` in between
# dies on SIGTERM and leaves the server running).
exec node --import tsx main.ts
