#!/usr/bin/env bash
# `npm start`: the whole system (both gateways, every actor) on this machine's local services.
# scripts/setup.sh installs what is missing, starts the services and exports local defaults for every
# SVC_* variable that is unset; set any of them to point elsewhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
npm run migrate
# The admin account this start seeds, or, when the database already holds it, whether SVC_ADMIN_PASSWORD is still its
# password (a second checkout on the same database, data/ removed): only informs, never stops the start.
node scripts/admin.ts status || true
# A young generation of 64 MB semi-spaces (V8's default is 16): the metrics ingest parses JSON agent batches into
# short-lived objects at hundreds of batches a second, and fewer scavenges make its consumer cheaper per sample (the
# figures: docs/operations.md → Configuration, NODE_OPTIONS).
# Earlier in NODE_OPTIONS than anything the caller set, which therefore wins.
export NODE_OPTIONS="--max-semi-space-size=64${NODE_OPTIONS:+ $NODE_OPTIONS}"
# External (Buffer) memory counted in V8's global heap limit, as V8 now does by default (Node 24's V8 predates it):
# otherwise every 64 MB of short-lived Buffers starts a full mark-compact, the 64 MB semi-spaces having moved the
# cheaper scavenge's trigger past that limit (nodejs/node#63863; docs/operations.md has the figures). NODE_OPTIONS
# may not carry it, so it is given here (and in the Dockerfile's CMD; scripts/start-flags.ts reads both from here).
# One node process, running the TypeScript by Node's own type stripping (no loader, no build step), so SIGTERM/SIGINT
# reach the app itself.
exec node --external-memory-accounted-in-global-limit main.ts
