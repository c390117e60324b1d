#!/usr/bin/env bash
# `npm test [-- vitest args]`: both test tiers, as CI runs them. After the machine is set up (scripts/setup.sh):
#   1. the unit tier (test/vitest.unit.config.ts): the *.unit.test.ts files, pure code, in parallel, with no service
#      and none of the SVC_* settings the set-up exported (`npm run test:unit` runs it alone, anywhere, as any user);
#   2. the migrations applied to the test stores, then the integration tier (vitest.config.ts): every other test file,
#      one after another, against the real local services.
# The vitest args (file filters, -t) go to both tiers; a tier they select nothing of passes, a run that selects nothing
# at all fails. Both tiers always run. Exits non-zero when either failed; the closing line counts both.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# A database of its own (setup.sh creates it when missing): the users, clients and hosts the tests make never land
# in the one `npm start` uses. SVC_TEST_DB_URL names another; an SVC_DB_URL set for `npm start` is not used here.
export SVC_DB_URL="${SVC_TEST_DB_URL:-postgresql://postgres@127.0.0.1:5432/svc_test}"
source scripts/setup.sh
mkdir -p data
rm -f data/test-results-unit.json data/test-results.json data/test-results-rerun.json data/test-summary.txt
unit=0
(
  # The unit tier sees the environment `npm run test:unit` sees in a bare shell: no service URLs, keys or namespace.
  while read -r name; do [[ $name == SVC_LOG_LEVEL ]] || unset "$name"; done < <(compgen -e | grep '^SVC_' || true)
  exec node_modules/.bin/vitest run -c test/vitest.unit.config.ts --configLoader runner --passWithNoTests \
    --reporter=default --reporter=json --outputFile.json=data/test-results-unit.json "$@"
) || unit=$?
# PostgreSQL is migrated here once. With chDB the analytics DDL is applied by the process running the invoice domain
# (`npm run migrate` skips it): each vitest run uses a private directory (vitest.config.ts), and the app's
# ./data/analytics stays untouched.
export SVC_ANALYTICS_PATH="${SVC_ANALYTICS_PATH:-./data/analytics-test}"
npm run migrate
integration=0
node_modules/.bin/vitest run --passWithNoTests \
  --reporter=default --reporter=json --outputFile.json=data/test-results.json "$@" || integration=$?
# A file whose worker died (a crash, not a failed assertion) is named, with vitest's message, and run once more on its
# own: a second crash or a failure there fails the tier as before, and the log keeps both runs.
if [[ $integration != 0 && -f data/test-results.json ]]; then
  mapfile -t crashed < <(node -e '
    const r = require("./data/test-results.json");
    for (const f of r.testResults)
      // "pending": started or queued and never finished (vitest maps skips to "skipped").
      if (
        !f.assertionResults.some((a) => a.status === "failed") &&
        (f.status !== "passed" || f.assertionResults.some((a) => a.status === "pending"))
      ) {
        console.error(`npm test: ${f.name}: its worker ended before its tests did ${(f.message || "").split("\n")[0]}`);
        console.log(require("path").relative(process.cwd(), f.name));
      }
    process.exitCode = r.numFailedTests === 0 ? 0 : 1;
  ' || echo __failed__)
  if [[ ${#crashed[@]} -gt 0 && ! " ${crashed[*]} " =~ " __failed__ " ]]; then
    echo "npm test: running ${crashed[*]} again, alone" >&2
    node_modules/.bin/vitest run --reporter=default --reporter=json --outputFile.json=data/test-results-rerun.json \
      "${crashed[@]}" && integration=0 && echo "npm test: ${crashed[*]} passed when run again (data/test-results-rerun.json)" >&2
  fi
fi
# A line per tier, then one plain closing line for both that any reader of the log can count.
node -e '
  const fs = require("fs");
  const line = (name, t) => `${name}: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`;
  const total = { passed: 0, failed: 0, skipped: 0 };
  const tiers = [
    ["unit", "data/test-results-unit.json", process.argv[1]],
    ["integration", "data/test-results.json", process.argv[2]],
  ];
  for (const [tier, file, code] of tiers) {
    if (!fs.existsSync(file)) {
      console.log(`vitest (${tier}): no results (exit code ${code})`);
      continue;
    }
    const r = JSON.parse(fs.readFileSync(file, "utf8"));
    const t = { passed: r.numPassedTests, failed: r.numFailedTests, skipped: r.numPendingTests + r.numTodoTests };
    console.log(line(`vitest (${tier})`, t));
    for (const k of Object.keys(total)) total[k] += t[k];
  }
  fs.writeFileSync("data/test-summary.txt", `${line("vitest", total)}\n`);
  console.log(line("vitest", total));
' "$unit" "$integration" 2>/dev/null || true
code=$(( unit != 0 ? unit : integration ))
if [[ $code == 0 && $(cat data/test-summary.txt 2>/dev/null) == "vitest: 0 passed, 0 failed, 0 skipped" ]]; then
  echo "npm test: no test in either tier matches the arguments: $*" >&2
  code=1
fi
exit "$code"
