/**
 * The layers, checked by `npm run lint` (docs/architecture.md → Layers):
 * - contracts/: the subjects and their schemas, shared by everyone; it depends on zod alone.
 * - platform/: the runtime every process stands on; it knows no domain, gateway or composition.
 * - actors/<domain>/: a domain; it never imports another domain (it asks through a subject or reacts to an event).
 *   What others may use of it is its published face, actors/<domain>/mod.ts.
 * - gateway/: HTTP at the edge; of the domains it sees only their faces.
 * - main.ts, migrations/run.ts, scripts/, bench/, test/: composition and tools, above everything.
 * - agent/: the reference agent, deployed on its own; it knows contracts/ and platform/ only.
 * - web/: the web console, a client of the public API like any other: its own files and its packages only (the API's
 *   types are generated into web/src/api from the OpenAPI documents).
 * And no circular imports anywhere.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import loop hides which module is the base: break it by moving the shared part down a layer.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-to-domain',
      severity: 'error',
      comment: 'A domain asks another through a subject or reacts to its events; it never imports its code.',
      from: { path: '^actors/([^/]+)/' },
      to: { path: '^actors/', pathNot: '^actors/$1/' },
    },
    {
      name: 'domain-to-edge',
      severity: 'error',
      comment: 'A domain knows neither the gateways nor the composition above it.',
      from: { path: '^actors/' },
      to: { path: '^(gateway|migrations|scripts|bench|test|agent)/|^main\\.ts$' },
    },
    {
      name: 'gateway-to-domain-internals',
      severity: 'error',
      comment: 'The gateway sees a domain only through its published face (actors/<domain>/mod.ts).',
      from: { path: '^gateway/' },
      to: { path: '^actors/', pathNot: '^actors/[^/]+/mod\\.ts$' },
    },
    {
      name: 'gateway-to-composition',
      severity: 'error',
      comment: 'The gateway is composed by main.ts; it does not reach back into it or into the tools.',
      from: { path: '^gateway/' },
      to: { path: '^(migrations|scripts|bench|test|agent)/|^main\\.ts$' },
    },
    {
      name: 'composition-to-domain-internals',
      severity: 'error',
      comment: 'main.ts and the migration command compose domains through their list (actors/index.ts) and faces.',
      from: { path: '^(main\\.ts|migrations/)' },
      to: { path: '^actors/', pathNot: '^actors/(index|[^/]+/mod)\\.ts$' },
    },
    {
      name: 'platform-to-above',
      severity: 'error',
      comment: 'The platform is the base of everything: it imports no domain, gateway, migration or tool.',
      from: { path: '^platform/' },
      to: { path: '^(actors|gateway|migrations|scripts|bench|test|agent)/|^main\\.ts$' },
    },
    {
      name: 'contracts-only-zod',
      severity: 'error',
      comment: 'contracts/ is importable everywhere (the agent, the web console, other services): zod and itself only.',
      from: { path: '^contracts/' },
      // package.json: the version, read as data.
      to: { pathNot: '^(contracts/|node_modules/zod/|package\\.json$)' },
    },
    {
      name: 'agent-standalone',
      severity: 'error',
      comment: 'The agent ships on its own (a .deb): contracts/ and platform/ only, never service code.',
      from: { path: '^agent/' },
      to: { path: '^(actors|gateway|migrations|scripts|bench|test)/|^main\\.ts$' },
    },
    {
      name: 'web-public-api-only',
      severity: 'error',
      comment: "The console knows the API by its generated types (npm run web:api), never by the services' code.",
      from: { path: '^web/' },
      to: { pathNot: '^(web/|node_modules/)' },
    },
    {
      name: 'migrations-schema-only',
      severity: 'error',
      comment: 'A migration is SQL over the platform; only the migration command composes the domains.',
      from: { path: '^migrations/postgres/' },
      to: { path: '^(actors|gateway|scripts|bench|test|agent)/|^main\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(data|node_modules|web/dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
