// The agent bench's floor (bench/agent.ts): the least a Node 24 single executable that does the agent's job at all
// holds resident. It reads an enrolled agent's state directory, connects to the broker over TLS with the agent's
// credentials and pinned CA, and does one round trip every 10 s. Built exactly as the agent's executable is.
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '.';
const state = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as { nats_servers: string[] };
void connect({
  servers: state.nats_servers,
  authenticator: credsAuthenticator(readFileSync(join(dir, 'agent.creds'))),
  tls: { ca: readFileSync(join(dir, 'broker-ca.pem'), 'utf8') },
}).then((nc) => setInterval(() => void nc.flush(), 10_000));
