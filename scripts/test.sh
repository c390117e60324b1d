#!/usr/bin/env bash
# `npm test [-- vitest args]`: set up the machine (scripts/setup.sh), apply the migrations to the test
# stores, then run vitest against the real local services. Exits with vitest's code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A database of its own (setup.sh creates it when missing): the users, clients and hosts the tests make never land
# in the one `npm start` uses. SVC_TEST_DB_URL names another; an SVC_DB_URL set for `npm start` is not used here.
export SVC_DB_URL="${SVC_TEST_DB_URL:-postgresql://postgres@127.0.0.1:5432/svc_test}"
source scripts/setup.sh
# PostgreSQL is migrated here once. With chDB the analytics DDL is applied by the process running the invoice domain
# (`npm run migrate` skips it): each vitest run uses a private directory (vitest.config.ts), and the app's
# ./data/analytics stays untouched.
export SVC_ANALYTICS_PATH="${SVC_ANALYTICS_PATH:-./data/analytics-test}"
npm run migrate
mkdir -p data
code=0
node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json=data/test-results.json "$@" || code=$?
# One plain closing line that any reader of the log can count.
node -e '
  const r = JSON.parse(require("fs").readFileSync("data/test-results.json", "utf8"));
  console.log(`vitest: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' 2>/dev/null | tee data/test-summary.txt || true
exit "$code"
