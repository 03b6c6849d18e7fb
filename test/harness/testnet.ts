// The test hosts' network: a network namespace and a veth pair made for this run, whose addresses are
// where node-like servers (KWOK's kubelet endpoints, clusterlet's kubelet API) listen. The API server's
// node proxy refuses loopback addresses, and nothing here may talk to the machine's own interface
// addresses, so the harness makes its own: 198.18.0.0/16 (of 198.18.0.0/15, reserved for benchmarking, never
// routed; the real nodes' pod ranges take 198.19.0.0/16, realnode.ts). A real node (realnode.ts) lives in such a
// namespace too: its kubelet listens on `peer`, and its pods are routed through it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';

const run = promisify(execFile);
export const NETNS_PREFIX = 'clusterlet-';

export interface TestNetwork {
  /** The address of the root-namespace end of the veth pair: bind node-like servers here. */
  address: string;
  /** The address of the namespace's end of the veth pair. */
  peer: string;
  /** The root-namespace end of the veth pair. */
  device?: string;
  /** The network namespace (removed with the run; a stale run's is reaped by name). */
  name?: string;
  /** Why there is no test network (then `address` is 127.0.0.1 and node-proxy paths cannot work). */
  unavailable?: string;
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  await run('ip', args);
}

/** Makes a network namespace and veth pair for this run; falls back to loopback (with the reason) if it cannot. */
export async function createTestNetwork(): Promise<TestNetwork> {
  const id = randomBytes(3).toString('hex');
  const ns = `${NETNS_PREFIX}${id}`;
  const host = `cl${id}h`;
  const peer = `cl${id}n`;
  const a = randomBytes(2);
  const subnet = `198.18.${a[1]}`;
  const octet = 4 * (1 + Math.floor(Math.random() * 62));
  const address = `${subnet}.${octet + 1}`;
  try {
    await ip('netns', 'add', ns);
    await ip('link', 'add', host, 'type', 'veth', 'peer', 'name', peer, 'netns', ns);
    await ip('addr', 'add', `${address}/30`, 'dev', host);
    await ip('link', 'set', host, 'up');
    await ip('-n', ns, 'addr', 'add', `${subnet}.${octet + 2}/30`, 'dev', peer);
    await ip('-n', ns, 'link', 'set', peer, 'up');
  } catch (err) {
    await removeNetns(ns);
    return { address: '127.0.0.1', peer: '127.0.0.1', unavailable: `no test network (${(err as Error).message.split('\n')[0]})`,
      remove: async () => {} };
  }
  return { address, peer: `${subnet}.${octet + 2}`, device: host, name: ns, remove: () => removeNetns(ns) };
}

/** Deleting the namespace deletes the veth pair with it. */
export async function removeNetns(ns: string): Promise<void> {
  await run('ip', ['netns', 'del', ns]).catch(() => undefined);
}

/** Network namespaces of this harness whose run is gone. */
export async function listNetns(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']).catch(() => ({ stdout: '' }));
  return stdout.split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith(NETNS_PREFIX));
}
