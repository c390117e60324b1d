// `npm run agent:package`: the reference agent as an operator installs it, under dist/agent/:
//   svc-agent-<version>-linux-x64     one executable: the pinned Node 24 with the agent bundled in (Node's
//                                     single-executable applications: esbuild bundle → SEA blob → postject)
//   svc-agent_<version>_amd64.deb     that executable in /usr/bin, the systemd unit, /etc/default/svc-agent and the
//                                     maintainer scripts (agent/package/), built with dpkg-deb
//   SHA256SUMS                        of both, in sha256sum's format
// Options: --out <dir> (default dist/agent).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { inject } from 'postject';

/** The fuse Node's binary carries to tell a single-executable application from a plain node (Node's SEA docs). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/**
 * V8 flags built into the executable (SEA's execArgv), for an agent that wakes every few seconds and must stay small.
 * Each earns its place in resident memory after a minute (`npm run bench -- agent`; the figures: docs/benchmarks.md →
 * The packaged agent's memory): one V8 worker thread instead of one per core and 1 MiB semi-spaces instead of 16; no
 * optimising compilers (Maglev, TurboFan), whose code pages would stay resident for work of milliseconds a minute
 * (Sparkplug still compiles hot functions); V8's size-over-speed mode and lazy compilation of everything. The CPU
 * cost stays within the noise of a minute's work.
 */
export const AGENT_V8_FLAGS = [
  '--v8-pool-size=1',
  '--max-semi-space-size=1',
  '--no-opt',
  '--no-maglev',
  '--optimize-for-size',
  '--max-lazy',
];

export interface AgentPackage {
  version: string;
  executable: string;
  deb: string;
  sums: string;
}

const say = (text: string): void => void process.stderr.write(`[agent:package] ${text}\n`);

export async function packageAgent(outDir: string, root = process.cwd()): Promise<AgentPackage> {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  if (!/^\d+\.\d+\.\d+([-+~][0-9A-Za-z.+~-]+)?$/.test(version))
    throw new Error(`package.json's version ${JSON.stringify(version)} is not a Debian-compatible version`);
  // The executable embeds the Node that runs this script: the project's pinned Node 24 (node_modules/.bin/node).
  if (!process.version.startsWith('v24.'))
    throw new Error(`run with the project's Node 24 (npm run agent:package), not ${process.version}`);
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`the package is built for linux-x64 on linux-x64 (this is ${process.platform}-${process.arch})`);

  const work = join(outDir, 'build');
  const executable = join(outDir, `svc-agent-${version}-linux-x64`);
  await buildSingleExecutable(join(root, 'agent/main.ts'), executable, work);
  const reported = execFileSync(executable, ['--version'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } }).trim();
  if (reported !== version)
    throw new Error(
      `the built executable says version ${JSON.stringify(reported)}, package.json ${JSON.stringify(version)}`,
    );

  // The Debian package.
  const deb = join(outDir, `svc-agent_${version}_amd64.deb`);
  const tree = join(work, 'deb');
  const assets = join(root, 'agent/package');
  const place = (from: string, to: string, mode: number): void => {
    mkdirSync(resolve(tree, to, '..'), { recursive: true });
    copyFileSync(from, join(tree, to));
    chmodSync(join(tree, to), mode);
  };
  place(executable, 'usr/bin/svc-agent', 0o755);
  place(join(assets, 'svc-agent.service'), 'usr/lib/systemd/system/svc-agent.service', 0o644);
  place(join(assets, 'default'), 'etc/default/svc-agent', 0o644);
  place(join(assets, 'README.install'), 'usr/share/doc/svc-agent/README.install', 0o644);
  for (const script of ['postinst', 'prerm', 'postrm']) place(join(assets, script), `DEBIAN/${script}`, 0o755);
  writeFileSync(join(tree, 'DEBIAN/conffiles'), '/etc/default/svc-agent\n');
  const installedKiB = Math.ceil(
    Number(execFileSync('du', ['-sk', '--exclude=DEBIAN', tree], { encoding: 'utf8' }).split('\t')[0]),
  );
  writeFileSync(
    join(tree, 'DEBIAN/control'),
    [
      'Package: svc-agent',
      `Version: ${version}`,
      'Architecture: amd64',
      'Maintainer: svc platform team <ops@example.com>',
      `Installed-Size: ${installedKiB}`,
      'Depends: adduser | passwd',
      'Section: admin',
      'Priority: optional',
      'Description: reference agent of the infrastructure console',
      " Sends this host's heartbeat, metrics and inventory (processes, packages, users, certificates, services) to the",
      ' console over its NATS broker, with credentials scoped to this host. One self-contained executable (Node.js',
      ' inside) and a hardened systemd unit. Enrol with `svc-agent enroll`, then `systemctl enable --now svc-agent`.',
      '',
    ].join('\n'),
  );
  say(`building ${basename(deb)} (dpkg-deb)`);
  rmSync(deb, { force: true });
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', tree, deb], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });

  // Checksums, as `sha256sum -c SHA256SUMS` reads them.
  const sums = join(outDir, 'SHA256SUMS');
  const line = (file: string): string =>
    `${createHash('sha256').update(readFileSync(file)).digest('hex')}  ${basename(file)}\n`;
  writeFileSync(sums, line(executable) + line(deb));
  rmSync(work, { recursive: true, force: true });
  say(
    `done: ${basename(executable)} (${(statSync(executable).size / 1048576).toFixed(1)} MiB), ${basename(deb)} (${(statSync(deb).size / 1048576).toFixed(1)} MiB), SHA256SUMS in ${outDir}`,
  );
  return { version, executable, deb, sums };
}

/**
 * `entry` (TypeScript or JavaScript) as one executable: esbuild bundles it into one CommonJS file (SEA runs a CommonJS
 * main script), Node makes the SEA blob with V8's code cache (no compiling at start) and AGENT_V8_FLAGS, and postject
 * injects it into a copy of the node binary running this script. `work` is scratch space, emptied first.
 */
export async function buildSingleExecutable(entry: string, executable: string, work: string): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const bundle = join(work, 'main.cjs');
  say(`bundling ${basename(entry)} (esbuild)`);
  await build({
    entryPoints: [entry],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    legalComments: 'none',
    logLevel: 'warning',
    // V8 keeps the main script's source in memory for as long as it runs (lazy compilation, Function#toString); one
    // non-ASCII character in a comment made all of it a two-byte string (3.2 MB). Without whitespace and comments it
    // is ASCII (esbuild escapes the rest) and a third of that. Identifiers stay, so stack traces keep their names.
    minifyWhitespace: true,
    minifySyntax: true,
    charset: 'ascii',
    // pg's optional native binding is never used (the agent talks to no database; contracts import pg's types only).
    external: ['pg-native'],
  });
  const blob = join(work, 'main.blob');
  const seaConfig = join(work, 'sea-config.json');
  writeFileSync(
    seaConfig,
    JSON.stringify({
      main: bundle,
      output: blob,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      useSnapshot: false,
      execArgv: AGENT_V8_FLAGS,
    }),
  );
  // The same V8 flags as at run time: V8 rejects a code cache made under other flags (and says so on stderr).
  execFileSync(process.execPath, [...AGENT_V8_FLAGS, '--experimental-sea-config', seaConfig], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  rmSync(executable, { force: true });
  copyFileSync(realpathSync(process.execPath), executable);
  chmodSync(executable, 0o755);
  say(`injecting the blob into ${basename(executable)} (postject)`);
  await inject(executable, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const { values } = parseArgs({ options: { out: { type: 'string' } } });
  packageAgent(resolve(values.out ?? 'dist/agent')).catch((err: unknown) => {
    process.stderr.write(`agent:package failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
