/**
 * How many copies the broker keeps of everything the system creates in JetStream (SVC_NATS_REPLICAS): every stream,
 * KV bucket and durable consumer is declared with it, so in a three-node cluster (3) each survives the loss of a node.
 * 1 on a single server, which cannot hold more.
 */
const parse = (v: string | undefined): number | undefined => {
  const n = Number(v);
  return Number.isInteger(n) && n >= 1 && n <= 5 ? n : undefined;
};

// Read at import like the namespace, so every module agrees from the start; main.ts sets the validated value
// (loadConfig names a malformed SVC_NATS_REPLICAS) before anything declares a stream.
let current = parse(process.env.SVC_NATS_REPLICAS) ?? 1;

export const brokerReplicas = (): number => current;

export function setBrokerReplicas(n: number): void {
  if (parse(String(n)) === undefined) throw new Error('replicas must be a whole number from 1 to 5');
  current = n;
}
