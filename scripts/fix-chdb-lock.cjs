// Adds lock entries for chdb's foreign-platform optional packages, which this workplace's npm registry
// does not serve (404), so `npm install` leaves them out and `npm ci` then refuses the lock.
// Run from the repo root after any `npm install`: node scripts/fix-chdb-lock.cjs
const fs = require('fs');
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
const version = lock.packages['node_modules/chdb'].optionalDependencies['@chdb/lib-linux-x64-gnu'];
const add = {
  '@chdb/lib-darwin-arm64': { os: ['darwin'], cpu: ['arm64'] },
  '@chdb/lib-darwin-x64': { os: ['darwin'], cpu: ['x64'] },
  '@chdb/lib-linux-arm64-gnu': { os: ['linux'], cpu: ['arm64'], libc: ['glibc'] },
};
const out = {};
for (const [k, v] of Object.entries(lock.packages)) {
  out[k] = v;
  if (k === 'node_modules/@chdb/lib-linux-x64-gnu') {
    for (const [name, p] of Object.entries(add)) {
      out[`node_modules/${name}`] ??= { version, ...p, license: 'Apache-2.0', optional: true };
    }
  }
}
lock.packages = out;
fs.writeFileSync('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
