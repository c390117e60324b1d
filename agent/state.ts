import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { LabelMap, WatchFilesConfig } from '../contracts/domains/agent-telemetry.ts';
import { describeZodError } from '../contracts/errors.ts';
import { AGENT_COMMAND } from './version.ts';

/**
 * The agent's files under its state directory (mode 700):
 * - `agent.json`: who it is (written last at enrolment, so its presence means "enrolled");
 * - `agent.creds`: the NATS user JWT and the nkey seed (mode 600; the seed never leaves the host);
 * - `broker-ca.pem`: the broker's CA from the enrolment reply, the only CA the agent trusts for the broker (pinned);
 * - `config/watch_files.json`: the last applied watch config `{version, payload}`.
 */

export const AgentStateFile = z.object({
  agent_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'agent_id must be a subject token'),
  host_id: z.string().min(1),
  nats_servers: z.array(z.string().min(1)).min(1),
  inbox_prefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'inbox_prefix must be subject tokens without wildcards'),
  enrolled_at: z.iso.datetime({ offset: true }),
  labels: LabelMap.default({}),
});
export type AgentState = z.infer<typeof AgentStateFile>;
export type AgentStateIn = z.input<typeof AgentStateFile>;

export const SavedWatchConfig = z.object({ version: z.number().int().min(1), payload: WatchFilesConfig });
export type SavedWatchConfig = z.infer<typeof SavedWatchConfig>;

export interface StatePaths {
  dir: string;
  agent: string;
  creds: string;
  brokerCa: string;
  configDir: string;
  watchFiles: string;
}

export function statePaths(dir: string): StatePaths {
  return {
    dir,
    agent: join(dir, 'agent.json'),
    creds: join(dir, 'agent.creds'),
    brokerCa: join(dir, 'broker-ca.pem'),
    configDir: join(dir, 'config'),
    watchFiles: join(dir, 'config', 'watch_files.json'),
  };
}

/** A directory only the agent's user may enter (created when missing, tightened when it exists). */
export async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/**
 * Replaces `path` all at once: a crash leaves the old file or the new one, never half of it. The temporary file is
 * created with `mode` already, so a secret is never readable by others, not even briefly.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await open(tmp, 'wx', mode);
  try {
    await fh.writeFile(data);
    await fh.chmod(mode);
    await fh.datasync();
  } catch (err) {
    await fh.close().catch(() => undefined);
    await rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

export class NotEnrolledError extends Error {
  constructor(dir: string) {
    super(
      `${dir} holds no enrolled agent (agent.json is missing): enrol first with \`${AGENT_COMMAND} enroll --server <url> --token <install token> --state-dir ${dir}\``,
    );
    this.name = 'NotEnrolledError';
  }
}

export async function readAgentState(dir: string): Promise<AgentState> {
  const paths = statePaths(dir);
  let text: string;
  try {
    text = await readFile(paths.agent, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotEnrolledError(dir);
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${paths.agent} is not valid JSON`);
  }
  const parsed = AgentStateFile.safeParse(json);
  if (!parsed.success) throw new Error(`${paths.agent} is malformed: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export async function writeAgentState(dir: string, state: AgentStateIn): Promise<void> {
  await writeFileAtomic(statePaths(dir).agent, `${JSON.stringify(AgentStateFile.parse(state), null, 2)}\n`);
}

/** The creds file's bytes; refuses one others may read (it holds the seed), after tightening it. */
export async function readCredsFile(dir: string): Promise<{ bytes: Uint8Array; loosened: boolean }> {
  const path = statePaths(dir).creds;
  let loosened = false;
  try {
    const st = await stat(path);
    if (st.mode & 0o077) {
      await chmod(path, 0o600);
      loosened = true;
    }
    return { bytes: await readFile(path), loosened };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error(`${path} is missing: the agent's NATS credentials are written at enrolment`);
    throw err;
  }
}

export async function writeCredsFile(dir: string, creds: Uint8Array): Promise<void> {
  await writeFileAtomic(statePaths(dir).creds, creds, 0o600);
}

/** The pinned broker CA (PEM); undefined when enrolment brought none (the broker's certificate is publicly signed). */
export async function readBrokerCa(dir: string): Promise<string | undefined> {
  try {
    return await readFile(statePaths(dir).brokerCa, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export async function writeBrokerCa(dir: string, pem: string): Promise<void> {
  await writeFileAtomic(statePaths(dir).brokerCa, pem, 0o600);
}

/** The saved watch config; undefined when there is none; throws naming the file when it is unusable. */
export async function readWatchConfig(dir: string): Promise<SavedWatchConfig | undefined> {
  let text: string;
  try {
    text = await readFile(statePaths(dir).watchFiles, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${statePaths(dir).watchFiles} is not valid JSON`);
  }
  const parsed = SavedWatchConfig.safeParse(json);
  if (!parsed.success) throw new Error(`${statePaths(dir).watchFiles} is malformed: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

export async function writeWatchConfig(dir: string, config: SavedWatchConfig): Promise<void> {
  const paths = statePaths(dir);
  await privateDir(paths.configDir);
  await writeFileAtomic(paths.watchFiles, `${JSON.stringify(config, null, 2)}\n`);
}
