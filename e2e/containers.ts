// What only real containers show, checked through the host as a user would (kubectl on the proxy, the host API):
// logs as the container printed them, followed and of the previous instance; exec with stdin and the exit code;
// attach; port-forward; a member Service reaching a delegate; a crash loop; a readiness probe going both ways;
// real usage in /stats/summary; a deletion that stops the container with SIGTERM within its grace period; and, where the suite
// knows the Helm release, an upgrade that hands over without losing a delegate. Called by e2e/e2e.test.ts, for
// clusters whose member nodes run containers (kind, or `make e2e-local`'s real nodes), never on KWOK.
import { it } from 'node:test';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { V1Container, V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { queryOf, type ClusterClient } from '../src/kube/client.ts';
import { namespacedName } from '../src/forge/meta.ts';
import type { ListWatchSpec } from '../src/kube/listwatch.ts';
import { toKubeError } from '../src/kube/errors.ts';
import { ORIGIN_LABEL, PROXY_NAMESPACE_ANNOTATION, RETIRING_TAINT_KEY, VIRTUAL_NODE_TAINT_KEY } from '../src/forge/keys.ts';
import { virtualNodeName } from '../src/forge/groups.ts';
import { waitUntil } from '../test/support/wait.ts';
import { isReady, podsSpec } from '../test/support/objects.ts';
import { forNamespace, ms, type E2EContext } from './scenarios.ts';

export interface ContainerStoryOptions {
  /**
   * clusterlet gives offloaded pods host API access (docs/api-access.md: a hostAPI.server the member's pods reach):
   * a container of a delegate lists its host namespace's pods with its mounted token.
   */
  hostApi?: { nodeImage: string };
  /** `namespace/release` of clusterlet's Helm release and the helm binary: enables the upgrade scenario. */
  helmRelease?: { helm: string; chart: string; namespace: string; release: string; upgradeTag: string };
}

interface Run { code: number | null; stdout: string; stderr: string }

/**
 * An in-cluster GET of `/api/v1/namespaces/<own namespace>/<argv[1]>`, as client-go's InClusterConfig makes it: prints
 * the body; exits 0 on 200, 3 on another status, 2 when the request fails (TLS verified with ca.crt).
 */
const IN_CLUSTER_GET = `
const fs = require('node:fs'); const https = require('node:https');
const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
const ns = fs.readFileSync(sa + '/namespace', 'utf8');
https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT,
  path: '/api/v1/namespaces/' + ns + '/' + process.argv[1], ca: fs.readFileSync(sa + '/ca.crt'),
  headers: { authorization: 'Bearer ' + fs.readFileSync(sa + '/token', 'utf8') } }, (res) => {
  let body = ''; res.on('data', (c) => { body += c; });
  res.on('end', () => { process.stdout.write(body); process.exit(res.statusCode === 200 ? 0 : 3); });
}).on('error', (e) => { console.error(e.message); process.exit(2); });`;

/** Runs kubectl against the host, feeding `input` to its stdin; resolves with its exit code and output. */
export function kubectl(ctx: E2EContext, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(ctx.opts.kubectl, ['--kubeconfig', ctx.opts.hostKubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`kubectl ${args.join(' ')} timed out:\n${stderr}`)); },
      opts.timeoutMs ?? ms(ctx, 60));
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('exit', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    child.stdin.end(opts.input ?? '');
  });
}

/** A long-running kubectl (logs -f, attach, port-forward) whose stdout is waited on as it comes. */
export interface KubectlStream {
  /** Resolves with the first match of `re` in what kubectl printed so far or prints within the time. */
  until(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stdout(): string;
  stop(): void;
}

export function kubectlStream(ctx: E2EContext, args: string[], opts: { input?: string } = {}): KubectlStream {
  const child = spawn(ctx.opts.kubectl, ['--kubeconfig', ctx.opts.hostKubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let exit: string | undefined;
  const waiters = new Set<() => void>();
  const wake = (): void => { for (const w of [...waiters]) w(); };
  child.stdout.setEncoding('utf8').on('data', (c: string) => { stdout += c; wake(); });
  child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  child.on('exit', (code) => { exit = `exited with ${code}`; wake(); });
  child.on('error', (err) => { exit = `failed: ${err.message}`; wake(); });
  if (opts.input !== undefined) child.stdin.write(opts.input);
  const stop = (): void => { child.kill('SIGTERM'); };
  const output = (): string => `stdout:\n${stdout.slice(-2000)}\nstderr:\n${stderr.slice(-2000)}`;
  return {
    stdout: () => stdout,
    stop,
    until: (re, timeoutMs = ms(ctx, 60)) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`kubectl ${args.join(' ')}: no ${re} within the time; ${output()}`)); },
        timeoutMs);
      function check(): void {
        const m = stdout.match(re);
        if (!m && exit === undefined) return;
        waiters.delete(check);
        clearTimeout(timer);
        if (m) resolve(m);
        else reject(new Error(`kubectl ${args.join(' ')} ${exit} before ${re}; ${output()}`));
      }
      waiters.add(check);
      check();
    }),
  };
}

/**
 * Starts a long-running kubectl (logs -f, attach, port-forward) and resolves once its stdout matches `until`, with
 * the match; the process is killed then, or when the time is up.
 */
export async function kubectlUntil(ctx: E2EContext, args: string[], until: RegExp, opts: { input?: string; timeoutMs?: number } = {}):
Promise<{ match: RegExpMatchArray; stdout: string; stop: () => void }> {
  const s = kubectlStream(ctx, args, opts);
  try {
    const match = await s.until(until, opts.timeoutMs);
    return { match, stdout: s.stdout(), stop: s.stop };
  } catch (err) {
    s.stop();
    throw err;
  }
}

/** The pod `name` of a namespace, watched. */
const podNamed = (c: ClusterClient, namespace: string, name: string): ListWatchSpec<V1Pod> =>
  ({ ...podsSpec(c, namespace), fieldSelector: `metadata.name=${name}` });
const nodeNamed = (c: ClusterClient, name: string): ListWatchSpec<V1Node> =>
  ({ path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${name}`, list: (p) => c.core.listNode(p) });

/** Waits until the proxy `name` satisfies `pred`; resolves with it. */
async function proxyUntil(ctx: E2EContext, namespace: string, name: string, pred: (p: V1Pod) => boolean, seconds: number,
  what: string): Promise<V1Pod> {
  const [p] = await waitUntil(ctx.host, podNamed(ctx.host, namespace, name), (ps) => ps.length === 1 && pred(ps[0]), ms(ctx, seconds),
    `${namespace}/${name}: ${what}`);
  return p;
}

/**
 * Once a Helm upgrade has rolled clusterlet's pods, the node `name` shows the address of one of the release's pods now
 * running (its new leader's): until then the API server reaches for the kubelet API of a pod that is gone.
 */
async function servedByRelease(ctx: E2EContext, hr: { namespace: string }, name: string): Promise<void> {
  const podIPs = async (): Promise<Set<string>> => new Set((await ctx.host.core.listNamespacedPod({ namespace: hr.namespace,
    labelSelector: 'app.kubernetes.io/name=clusterlet' })).items.filter((p) => !p.metadata?.deletionTimestamp && isReady(p))
    .map((p) => p.status?.podIP ?? ''));
  let ips = await podIPs();
  await waitUntil(ctx.host, {
    path: '/api/v1/nodes', model: 'V1Node', resource: 'nodes', fieldSelector: `metadata.name=${name}`, list: (p) => ctx.host.core.listNode(p),
  }, (ns) => {
    const ip = ns[0]?.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
    // A list that fails is tried again on the node's next event.
    if (ip !== undefined && !ips.has(ip)) podIPs().then((now) => { ips = now; }, () => undefined);
    return ip !== undefined && ips.has(ip);
  }, ms(ctx, 60), `node ${name} at the address of a running clusterlet pod`);
}

/** The delegates of a host namespace in the member, found by the proxy-namespace annotation. */
async function delegatesOf(ctx: E2EContext, namespace: string): Promise<V1Pod[]> {
  const list = await ctx.member.core.listPodForAllNamespaces({ labelSelector: ORIGIN_LABEL });
  return forNamespace(list.items, namespace);
}

export function registerContainerStory(context: () => E2EContext, opts: ContainerStoryOptions = {}): () => Promise<void> {
  const namespace = `clusterlet-e2e-c-${randomBytes(3).toString('hex')}`;
  let created = false;
  const body = `served-${randomBytes(4).toString('hex')}`;

  const pod = (name: string, container: Partial<V1Container>, extra: Partial<V1Pod['spec']> = {}, labels: Record<string, string> = {}): V1Pod => ({
    metadata: { name, namespace, labels: { app: name, ...labels } },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': context().opts.nodeName },
      tolerations: [{ key: VIRTUAL_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'main', image: context().opts.image, resources: { requests: { cpu: '10m', memory: '16Mi' } }, ...container }],
      ...extra,
    },
  });
  const create = async (p: V1Pod): Promise<void> => { await context().host.core.createNamespacedPod({ namespace, body: p }); };
  const running = (name: string) => proxyUntil(context(), namespace, name, (p) => p.status?.phase === 'Running' && isReady(p), 180,
    'Running and Ready');

  it('real containers: the test pods are offloaded and Running', async () => {
    const ctx = context();
    await ctx.host.core.createNamespace({ body: { metadata: { name: namespace, labels: { 'clusterlet.io/e2e': 'true' } } } });
    created = true;
    await Promise.all([
      // Prints a line a second; exits 0 on TERM, and says so.
      create(pod('ticker', { command: ['sh', '-c', 'trap "echo got TERM; exit 0" TERM; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 1 & wait $!; done'] })),
      // Serves `body` over HTTP on 8080, for port-forward and the Service.
      create(pod('web', { command: ['sh', '-c', `mkdir -p /www && echo ${body} > /www/index.html && exec httpd -f -p 8080 -h /www`],
        ports: [{ containerPort: 8080, name: 'http' }] })),
      // Echoes its stdin, for attach.
      create(pod('echo', { stdin: true, command: ['sh', '-c', 'while read -r l; do echo "attached: $l"; done'] })),
      // Ready while /tmp/ready exists.
      create(pod('probe', {
        command: ['sh', '-c', 'touch /tmp/ready; trap "exit 0" TERM; while true; do sleep 1 & wait $!; done'],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1, successThreshold: 1 },
      })),
      // Exits 7 a second after each start.
      create(pod('crash', { command: ['sh', '-c', 'echo "crash run at $(date +%s)"; sleep 1; exit 7'] })),
    ]);
    await Promise.all(['ticker', 'web', 'echo', 'probe'].map(running));
  });

  it('real containers: kubectl logs, and logs -f, show what the container printed', async () => {
    const ctx = context();
    const r = await kubectl(ctx, ['logs', '-n', namespace, 'ticker']);
    if (r.code !== 0 || !/^tick 1$/m.test(r.stdout)) throw new Error(`kubectl logs ticker: ${r.code}\n${r.stdout}${r.stderr}`);
    const seen = Number(/tick (\d+)\s*$/.exec(r.stdout)?.[1] ?? 0);
    // -f goes on past what was there: a later tick arrives on the open stream.
    const f = await kubectlUntil(ctx, ['logs', '-f', '-n', namespace, 'ticker'], new RegExp(`^tick ${seen + 3}$`, 'm'));
    f.stop();
  });

  it('real containers: kubectl exec runs in the container with stdin, and returns its exit code', async () => {
    const ctx = context();
    const r = await kubectl(ctx, ['exec', '-i', '-n', namespace, 'ticker', '--', 'sh', '-c', 'read -r l; echo "got $l from $(hostname)"; exit 3'],
      { input: 'ping\n' });
    if (r.code !== 3) throw new Error(`kubectl exec exited ${r.code}, want 3; stdout ${r.stdout} stderr ${r.stderr}`);
    if (r.stdout.trim() !== 'got ping from ticker') throw new Error(`kubectl exec printed ${JSON.stringify(r.stdout)}`);
  });

  it('real containers: kubectl attach reaches the container\'s stdin and stdout', async () => {
    const ctx = context();
    const word = `w${randomBytes(3).toString('hex')}`;
    const a = await kubectlUntil(ctx, ['attach', '-i', '-n', namespace, 'echo'], new RegExp(`attached: ${word}`), { input: `${word}\n` });
    a.stop();
  });

  it('real containers: kubectl port-forward reaches a server in the container', async () => {
    const ctx = context();
    const pf = await kubectlUntil(ctx, ['port-forward', '-n', namespace, 'pod/web', ':8080'], /Forwarding from 127\.0\.0\.1:(\d+)/);
    try {
      const res = await fetch(`http://127.0.0.1:${pf.match[1]}/index.html`);
      const text = (await res.text()).trim();
      if (res.status !== 200 || text !== body) throw new Error(`port-forward answered ${res.status} ${JSON.stringify(text)}, want ${body}`);
    } finally {
      pf.stop();
    }
  });

  it('real containers: a host Service reflected into the member reaches the delegate there', async () => {
    const ctx = context();
    const svc: V1Service = { metadata: { name: 'web', namespace },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } };
    await ctx.host.core.createNamespacedService({ namespace, body: svc });
    const isCopy = (o: V1Service): boolean => o.metadata?.name === 'web' && o.metadata.annotations?.[PROXY_NAMESPACE_ANNOTATION] === namespace;
    const copy = (await waitUntil(ctx.member, {
      path: '/api/v1/services', model: 'V1Service', resource: 'services', labelSelector: ORIGIN_LABEL,
      list: (p) => ctx.member.core.listServiceForAllNamespaces(p),
    }, (ss) => ss.some(isCopy), ms(ctx, 60), 'the Service copied into the member')).find(isCopy)!;
    const { namespace: memberNs, name: copyName } = namespacedName(copy);
    // The member's own EndpointSlice controller lists the web delegate under the copy, Ready.
    const slices = `/apis/discovery.k8s.io/v1/namespaces/${memberNs}/endpointslices`;
    await waitUntil(ctx.member, {
      path: slices, model: 'V1EndpointSlice', resource: 'endpointslices', labelSelector: `kubernetes.io/service-name=${copyName}`,
      list: (p) => ctx.member.request('GET', slices + queryOf({ ...p })),
    }, (ss: V1EndpointSlice[]) => ss.some((s) => (s.endpoints ?? []).some((e) => e.conditions?.ready === true)), ms(ctx, 60),
    'a Ready endpoint of the copy in the member');
    // From another delegate, through the member's Service IP. The member's kube-proxy writes its rules after the
    // endpoints, with no object to watch for that: the request is tried again, bounded, until it gets through.
    const ip = copy.spec?.clusterIP;
    const deadline = Date.now() + ms(ctx, 30);
    let last: Run | undefined;
    while (Date.now() < deadline) {
      // nc, not wget: a static busybox's wget looks the port up through glibc's NSS and crashes.
      last = await kubectl(ctx, ['exec', '-n', namespace, 'ticker', '--', 'sh', '-c',
        `printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${ip} 80`]);
      if (last.code === 0 && last.stdout.includes('200 OK') && last.stdout.trim().endsWith(body)) return;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`GET http://${ip}/ from ticker: ${last?.code} ${last?.stdout} ${last?.stderr}`);
  });

  it('real containers: a crashing container shows its restarts, last state and CrashLoopBackOff on the proxy', async () => {
    const ctx = context();
    const p = await proxyUntil(ctx, namespace, 'crash', (x) => {
      const s = x.status?.containerStatuses?.[0];
      return (s?.restartCount ?? 0) >= 1 && s?.lastState?.terminated?.exitCode === 7 && s?.state?.waiting?.reason === 'CrashLoopBackOff';
    }, 120, 'restartCount >= 1, lastState exit code 7, waiting CrashLoopBackOff');
    const prev = await kubectl(ctx, ['logs', '--previous', '-n', namespace, 'crash']);
    if (prev.code !== 0 || !prev.stdout.includes('crash run at')) {
      throw new Error(`kubectl logs --previous crash (restartCount ${p.status?.containerStatuses?.[0].restartCount}): ${prev.code} ${prev.stdout}${prev.stderr}`);
    }
  });

  it('real containers: a failing readiness probe turns the proxy NotReady, and back', async () => {
    const ctx = context();
    const rm = await kubectl(ctx, ['exec', '-n', namespace, 'probe', '--', 'rm', '/tmp/ready']);
    if (rm.code !== 0) throw new Error(`exec rm: ${rm.stderr}`);
    await proxyUntil(ctx, namespace, 'probe', (x) => !isReady(x) && x.status?.containerStatuses?.[0]?.ready === false
      && x.status?.phase === 'Running', 60, 'NotReady, still Running');
    const touch = await kubectl(ctx, ['exec', '-n', namespace, 'probe', '--', 'touch', '/tmp/ready']);
    if (touch.code !== 0) throw new Error(`exec touch: ${touch.stderr}`);
    await proxyUntil(ctx, namespace, 'probe', (x) => isReady(x) && x.status?.containerStatuses?.[0]?.ready === true, 60, 'Ready again');
  });

  it('real containers: /stats/summary of the virtual node shows the containers\' real usage', async () => {
    const ctx = context();
    type Summary = { pods?: { podRef: { name: string; namespace: string }; containers?: { name: string;
      cpu?: { usageCoreNanoSeconds?: number }; memory?: { workingSetBytes?: number } }[] }[] };
    // The member kubelet's stats of a new container come with its housekeeping, which writes no object to watch: asked
    // again, bounded, until they do.
    const deadline = Date.now() + ms(ctx, 60);
    let last = '';
    while (Date.now() < deadline) {
      const r = await kubectl(ctx, ['get', '--raw', `/api/v1/nodes/${ctx.opts.nodeName}/proxy/stats/summary`]);
      if (r.code === 0) {
        const s = JSON.parse(r.stdout) as Summary;
        const c = s.pods?.find((p) => p.podRef.namespace === namespace && p.podRef.name === 'ticker')?.containers?.find((x) => x.name === 'main');
        if ((c?.cpu?.usageCoreNanoSeconds ?? 0) > 0 && (c?.memory?.workingSetBytes ?? 0) > 0) return;
        last = JSON.stringify(c);
      } else {
        last = r.stderr;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    throw new Error(`no real usage for ticker in /stats/summary: ${last}`);
  });

  if (opts.helmRelease) {
    const hr = opts.helmRelease;
    it('real containers: a chart upgrade to a new image tag hands over without losing a delegate', async () => {
      const ctx = context();
      const before = new Map((await delegatesOf(ctx, namespace)).map((d) => [d.metadata!.name!, d.metadata!.uid!]));
      const r = await new Promise<Run>((resolve) => {
        const child = spawn(hr.helm, ['--kubeconfig', ctx.opts.hostKubeconfig, 'upgrade', hr.release, hr.chart,
          '--namespace', hr.namespace, '--reuse-values', '--set', `image.tag=${hr.upgradeTag}`, '--wait', '--timeout', '180s']);
        let out = '';
        child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
        child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
        child.on('exit', (code) => resolve({ code, stdout: out, stderr: '' }));
      });
      if (r.code !== 0) throw new Error(`helm upgrade: ${r.stdout}`);
      await waitUntil(ctx.host, podsSpec(ctx.host, hr.namespace), (ps) => {
        const mine = ps.filter((p) => p.metadata?.labels?.['app.kubernetes.io/name'] === 'clusterlet' && !p.metadata?.deletionTimestamp);
        return mine.length >= 1 && mine.every((p) => isReady(p) && p.spec?.containers[0].image?.endsWith(`:${hr.upgradeTag}`));
      }, ms(ctx, 180), `clusterlet's pods on image tag ${hr.upgradeTag}, Ready`);
      await servedByRelease(ctx, hr, ctx.opts.nodeName);
      // The proxies stay Running and Ready, and their delegates are the same pods (same UIDs) as before.
      for (const name of ['ticker', 'web', 'echo', 'probe']) await running(name);
      const after = new Map((await delegatesOf(ctx, namespace)).map((d) => [d.metadata!.name!, d.metadata!.uid!]));
      for (const [name, uid] of before) {
        if (after.get(name) !== uid) throw new Error(`delegate ${name} was ${uid}, is ${after.get(name) ?? 'gone'} after the upgrade`);
      }
      const t = await kubectl(ctx, ['logs', '-n', namespace, 'ticker', '--tail=1']);
      if (t.code !== 0 || !/tick \d+/.test(t.stdout)) throw new Error(`kubectl logs after the upgrade: ${t.stdout}${t.stderr}`);
    });
  }

  if (opts.helmRelease) {
    const hr = opts.helmRelease;
    const upgrade = async (ctx: E2EContext, set: string): Promise<void> => {
      const r = await new Promise<Run>((resolve) => {
        const child = spawn(hr.helm, ['--kubeconfig', ctx.opts.hostKubeconfig, 'upgrade', hr.release, hr.chart,
          '--namespace', hr.namespace, '--reuse-values', '--set', set, '--wait', '--timeout', '180s']);
        let out = '';
        child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
        child.stderr.on('data', (c: Buffer) => { out += c.toString(); });
        child.on('exit', (code) => resolve({ code, stdout: out, stderr: '' }));
      });
      if (r.code !== 0) throw new Error(`helm upgrade --set ${set}: ${r.stdout}`);
      await servedByRelease(ctx, hr, ctx.opts.nodeName);
    };
    it('real containers: switched to a virtual node per member node, running pods stay; a pod on a member node\'s node has logs, exec and stats through its own port', async () => {
      const ctx = context();
      const base = ctx.opts.nodeName;
      const before = new Map((await delegatesOf(ctx, namespace)).map((d) => [d.metadata!.name!, d.metadata!.uid!]));
      const memberNode = (await ctx.member.core.listNode()).items.map((n) => n.metadata!.name!).sort()[0];
      const vn = virtualNodeName(base, { kind: 'node', node: memberNode });
      await upgrade(ctx, 'nodes=node');
      const [node] = await waitUntil(ctx.host, nodeNamed(ctx.host, vn), (ns) => ns.length === 1 && isReady(ns[0])
        && !(ns[0].spec?.taints ?? []).some((t) => t.key.startsWith('node.kubernetes.io/')), ms(ctx, 120), `virtual node ${vn} Ready`);
      const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
      if (!port || port === 10250) throw new Error(`${vn} publishes kubelet port ${port}, not a port of its own`);
      // The whole member's node stays while its pods run, Ready and retiring; its pods are the same.
      await waitUntil(ctx.host, nodeNamed(ctx.host, base), (ns) => ns.length === 1 && isReady(ns[0])
        && (ns[0].spec?.taints ?? []).some((t) => t.key === RETIRING_TAINT_KEY), ms(ctx, 60), `${base} Ready and retiring`);
      for (const name of ['ticker', 'web', 'echo', 'probe']) await running(name);
      const after = new Map((await delegatesOf(ctx, namespace)).map((d) => [d.metadata!.name!, d.metadata!.uid!]));
      for (const [name, uid] of before) {
        if (after.get(name) !== uid) throw new Error(`delegate ${name} was ${uid}, is ${after.get(name) ?? 'gone'} after the switch`);
      }
      // A pod for the member node's own virtual node: its delegate runs on that member node, and the kubelet API of its
      // node answers for it (logs, exec, /stats/summary through the API server, which calls the node's own port).
      const p = pod('pernode', { command: ['sh', '-c', 'echo "on my own node"; trap "exit 0" TERM; while true; do sleep 1 & wait $!; done'] });
      p.spec!.nodeSelector = { 'kubernetes.io/hostname': vn };
      await create(p);
      await running('pernode');
      const [d] = (await delegatesOf(ctx, namespace)).filter((x) => x.metadata?.name === 'pernode');
      if (d?.spec?.nodeName !== memberNode) throw new Error(`the delegate of pernode is on ${d?.spec?.nodeName}, not ${memberNode}`);
      const logs = await kubectl(ctx, ['logs', '-n', namespace, 'pernode']);
      if (logs.code !== 0 || !logs.stdout.includes('on my own node')) throw new Error(`kubectl logs pernode: ${logs.stdout}${logs.stderr}`);
      const ex = await kubectl(ctx, ['exec', '-n', namespace, 'pernode', '--', 'sh', '-c', 'echo exec-ok; exit 3']);
      if (ex.code !== 3 || !ex.stdout.includes('exec-ok')) throw new Error(`kubectl exec pernode: ${ex.code} ${ex.stdout}${ex.stderr}`);
      const stats = await kubectl(ctx, ['get', '--raw', `/api/v1/nodes/${vn}/proxy/stats/summary`]);
      const names = stats.code === 0 ? ((JSON.parse(stats.stdout) as { pods?: { podRef: { name: string } }[] }).pods ?? []).map((x) => x.podRef.name) : [];
      if (!names.includes('pernode') || names.includes('web')) throw new Error(`/stats/summary of ${vn}: want pernode alone of the test pods, got ${names.join(', ')} ${stats.stderr}`);
      await ctx.host.core.deleteNamespacedPod({ namespace, name: 'pernode', gracePeriodSeconds: 0 });
      await waitUntil(ctx.host, podNamed(ctx.host, namespace, 'pernode'), (ps) => ps.length === 0, ms(ctx, 60), 'pernode gone');
      // Back to one node for the member: the member node's node goes (no pod left), the whole member's is no longer retiring.
      await upgrade(ctx, 'nodes=cluster');
      await waitUntil(ctx.host, nodeNamed(ctx.host, vn), (ns) => ns.length === 0, ms(ctx, 120), `${vn} deleted`);
      await waitUntil(ctx.host, nodeNamed(ctx.host, base), (ns) => ns.length === 1 && isReady(ns[0])
        && !(ns[0].spec?.taints ?? []).some((t) => t.key === RETIRING_TAINT_KEY), ms(ctx, 60), `${base} no longer retiring`);
    });
  }

  if (opts.hostApi) {
    it('real containers: an in-cluster client in a delegate lists its host namespace\'s pods, as its host ServiceAccount', async () => {
      const ctx = context();
      const image = opts.hostApi?.nodeImage;
      // ServiceAccount "lister" of the host namespace may list its pods: a host Role, nothing in the member.
      for (const args of [['create', 'serviceaccount', 'lister'], ['create', 'role', 'pod-lister', '--verb=list', '--resource=pods'],
        ['create', 'rolebinding', 'lister', '--role=pod-lister', `--serviceaccount=${namespace}:lister`]]) {
        const r = await kubectl(ctx, ['-n', namespace, ...args]);
        if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      }
      await create(pod('api', { image, command: ['node', '-e', 'setInterval(() => {}, 1e9)'] }, { serviceAccountName: 'lister' }));
      await running('api');
      // What client-go's InClusterConfig reads: KUBERNETES_SERVICE_HOST/PORT, the token, the namespace, and ca.crt to
      // verify the server's certificate (a wrong CA fails the request).
      const get = (what: string): Promise<Run> => kubectl(ctx, ['exec', '-n', namespace, 'api', '--', 'node', '-e', IN_CLUSTER_GET, what]);
      const r = await get('pods');
      if (r.code !== 0) throw new Error(`the request from the container failed (${r.code}): ${r.stdout.slice(0, 500)} ${r.stderr}`);
      const list = JSON.parse(r.stdout) as { kind?: string; items?: V1Pod[] };
      const names = (list.items ?? []).map((p) => p.metadata?.name).sort();
      // The host's pods: bound to the virtual node, which only the host has.
      if (list.kind !== 'PodList' || !names.includes('ticker') || !names.includes('api')
        || !(list.items ?? []).every((p) => p.spec?.nodeName === ctx.opts.nodeName)) {
        throw new Error(`want the host namespace's pods, on ${ctx.opts.nodeName}; got ${r.stdout.slice(0, 500)}`);
      }
      // The same token may do nothing else there.
      const denied = await get('secrets');
      const status = denied.code === 3 ? JSON.parse(denied.stdout) as { code?: number; reason?: string } : {};
      if (status.code !== 403 || status.reason !== 'Forbidden') {
        throw new Error(`listing Secrets with the lister's token: want 403, got ${denied.code}: ${denied.stdout.slice(0, 300)} ${denied.stderr}`);
      }
    });
  }

  it('real containers: deleting a proxy stops its container with SIGTERM, within the grace period', async () => {
    const ctx = context();
    const [d] = (await delegatesOf(ctx, namespace)).filter((x) => x.metadata?.name === 'ticker');
    if (!d) throw new Error('no delegate for ticker');
    // The ticker's log, followed from before the deletion: its trap prints "got TERM" when SIGTERM reaches it, which
    // only this open stream can still show (the pod and its log go with the deletion); a SIGKILL prints nothing.
    const log = kubectlStream(ctx, ['logs', '-f', '-n', namespace, 'ticker']);
    try {
      await log.until(/^tick \d+$/m);
      const t0 = Date.now();
      await ctx.host.core.deleteNamespacedPod({ namespace, name: 'ticker' });
      await log.until(/^got TERM$/m, ms(ctx, 30));
      // terminationGracePeriodSeconds 5 (the ticker exits at once on TERM): the delegate is gone, its container stopped
      // by the member's kubelet, well within that and the sync's slack.
      await waitUntil(ctx.member, podNamed(ctx.member, d.metadata!.namespace!, 'ticker'), (ps) => ps.length === 0, ms(ctx, 30),
        'the ticker delegate gone from the member');
      await waitUntil(ctx.host, podNamed(ctx.host, namespace, 'ticker'), (ps) => ps.length === 0, ms(ctx, 30), 'the ticker proxy gone');
      const took = (Date.now() - t0) / 1000;
      if (took > 5 + 10 * ctx.opts.timeoutScale) throw new Error(`deletion took ${took.toFixed(1)} s for a 5 s grace period`);
    } finally {
      log.stop();
    }
  });

  return async () => {
    if (!created) return;
    await context().host.core.deleteNamespace({ name: namespace }).catch((err: unknown) => {
      if (toKubeError(err).kind !== 'NotFound') throw err;
    });
  };
}
