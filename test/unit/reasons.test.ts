// The reasons a user reads on a proxy (`kubectl describe pod`: the clusterlet.io/Offloaded condition and clusterlet's
// Warning events) against docs/CONVENTIONS.md's "Reasons" table: every reason the table lists is produced in src/, every
// reason src/ produces is in the table, each row names a file that produces it; and the messages built by pure
// functions are pinned here, each one line that says what happened and what to do.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { ROOT } from '../support/manifests.ts';
import { checkMemberNamespace } from '../../src/forge/namespace.ts';
import { accessModeOf } from '../../src/forge/apiaccess.ts';
import { claimRejection } from '../../src/forge/volumes.ts';
import { notFoundReason } from '../../src/member/reflection/mirror.ts';
import { noFitMessage, scaleUpMessage, WAITING_FOR_SCALE_UP } from '../../src/forge/fit.ts';
import { rejection } from '../../src/member/pod/provider.ts';
import { daemonSetMessage, delegateLostMessage, offloadFailingMessage, rejectedMessage } from '../../src/host/pod/messages.ts';

const SRC = join(ROOT, 'src');

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? sources(join(dir, e.name))
    : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
}

/**
 * The reasons src/ writes on proxies as literals, with the files that write them: rejections (`PodRejectedError`),
 * the lifecycle's conditions and events, and the notices providers hand it (`type: 'Warning', reason: ...`).
 * Claims' and volumes' events (src/host/storage/, `VolumeRejectedError`) are another table's.
 */
function producedInSource(): Map<string, Set<string>> {
  const patterns = [
    /new PodRejectedError\(\s*'([A-Z]\w+)'/g,
    /\.(?:event|setOffloaded)\(\s*proxy,\s*'(?:Warning|Normal|False)',\s*'([A-Z]\w+)'/g,
    /type: 'Warning',\s*reason: '([A-Z]\w+)'/g,
  ];
  const out = new Map<string, Set<string>>();
  for (const file of sources()) {
    if (file.startsWith(join(SRC, 'host/storage/'))) continue;
    const text = readFileSync(file, 'utf8');
    for (const re of patterns) {
      for (const m of text.matchAll(re)) {
        const files = out.get(m[1]) ?? new Set<string>();
        files.add(relative(SRC, file));
        out.set(m[1], files);
      }
    }
  }
  return out;
}

interface Row { reasons: string[]; passThrough: boolean; where: string }

/** The rows of the "Reasons" section's table of events on a proxy. */
function reasonsTable(): Row[] {
  const text = readFileSync(join(ROOT, 'docs/CONVENTIONS.md'), 'utf8');
  const section = text.slice(text.indexOf('\n## Reasons\n'));
  const lines = section.split('\n');
  const start = lines.findIndex((l) => /^\| type \| reason \|/.test(l));
  assert.ok(start > 0, 'docs/CONVENTIONS.md, "Reasons": a table whose columns are type, reason, when (where)');
  const rows: Row[] = [];
  for (const l of lines.slice(start + 2)) {
    if (!l.startsWith('|')) break;
    const [, , reason, where] = l.split('|').map((c) => c.trim());
    rows.push({ reasons: [...reason.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]), passThrough: /^the member's/.test(reason), where });
  }
  return rows;
}

const MEMBER = 'eu-1';
const NODE = 'clusterlet-eu-1';
const pod = (annotations: Record<string, string> = {}, claim?: string): V1Pod => ({
  metadata: { name: 'web-0', namespace: 'shop', annotations },
  spec: { containers: [{ name: 'web', image: 'nginx' }],
    ...(claim ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } : {}) },
});
const claim = (storageClassName: string): V1PersistentVolumeClaim =>
  ({ metadata: { name: 'data-web-0', namespace: 'shop', uid: 'c1' }, spec: { storageClassName } });
const mapping = { template: '{namespace}', overrides: { odd: 'Odd' } };
const long = 'a'.repeat(64);

/** A reason and message as the proxy shows them; `computed` when a function of src/ chose the reason, not this test. */
interface Shown { reason: string; message: string; computed?: true }

/** The pinned messages: reason, and the message as the proxy shows it, built by the functions src/ calls. */
function pinned(): (Shown & { expected: string })[] {
  const ns = (host: string): Shown => {
    const c = checkMemberNamespace(mapping, host);
    assert.ok(c.error !== undefined);
    return { reason: c.reason, message: rejectedMessage(MEMBER, c.error, false), computed: true };
  };
  const volume = (hostClaim: V1PersistentVolumeClaim | undefined): Shown => {
    const r = claimRejection(pod({}, 'data-web-0'), { hostClaim: () => hostClaim, memberVolume: () => undefined },
      { member: MEMBER, className: NODE });
    assert.ok(r);
    return { reason: r.reason, message: rejectedMessage(MEMBER, r.message, r.retry), computed: true };
  };
  const access = accessModeOf(pod({ 'clusterlet.io/api-access': 'Host' }), 'host');
  assert.ok('error' in access);
  const missing = (kind: 'ConfigMap' | 'Secret'): Shown => {
    const r = rejection({ notices: [], missing: [{ kind, name: 'settings', optional: false }], conflicts: [], release: () => undefined }, 'shop');
    assert.ok(r);
    return { reason: r.reason, message: rejectedMessage(MEMBER, r.message, r.retry), computed: true };
  };
  const unfit = { fits: false as const, candidates: 2, requests: { cpu: '40' }, largestFree: { cpu: '15' } };
  return [
    { reason: 'NoMemberNodeFits', message: rejectedMessage(MEMBER, noFitMessage('member eu-1', unfit), true),
      expected: 'member eu-1 rejected the pod: no Ready member node of member eu-1 has room for its requests (cpu 40); the most one '
        + 'of the 2 it may run on has free is cpu 15. It is offloaded once one has room: lower its requests, add member nodes, or, '
        + 'where the member adds nodes for Pending pods, set its fit to advisory (the delegate then waits in the member) (retried '
        + 'with backoff)' },
    { reason: WAITING_FOR_SCALE_UP, computed: true, message: scaleUpMessage('member eu-1', unfit, 'it has Karpenter NodePools'),
      expected: 'no Ready member node of member eu-1 has room for its requests (cpu 40); the most one of the 2 it may run on has '
        + 'free is cpu 15. The delegate waits Pending in the member for it to add a node (it has Karpenter NodePools); it runs once '
        + 'one has room' },
    { reason: 'OffloadFailing', message: offloadFailingMessage(MEMBER, NODE, 'connect ECONNREFUSED 10.0.0.12:6443'),
      expected: 'syncing the pod with member eu-1 keeps failing (connect ECONNREFUSED 10.0.0.12:6443); retried with backoff: check '
        + "that the member answers (kubectl describe node clusterlet-eu-1) and clusterlet's log" },
    { reason: 'DaemonSetPodNotOffloaded', message: daemonSetMessage(MEMBER),
      expected: 'DaemonSet pods are not offloaded to member eu-1: they belong on real nodes; keep the DaemonSet off virtual nodes '
        + '(a node affinity on type NotIn virtual-kubelet)' },
    { reason: 'DelegateLost', message: delegateLostMessage(MEMBER, true),
      expected: "the pod's delegate in member eu-1 was deleted or evicted (its member node may be gone); creating it again: the "
        + 'restart count goes on' },
    { reason: 'DelegateLost', message: delegateLostMessage(MEMBER, false),
      expected: "the pod's delegate in member eu-1 was deleted or evicted, and restartPolicy is Never: the pod failed; its "
        + 'controller, if any, makes a new one' },
    { ...ns(long),
      expected: `member eu-1 rejected the pod: host namespace "${long}" maps to member namespace "${long}" (template "{namespace}"), `
        + '64 characters: a namespace name is at most 63; give it another name with a namespaceMapping override (or change the '
        + 'template) and restart clusterlet (tried again when the pod changes or clusterlet restarts)' },
    { ...ns('odd'),
      expected: 'member eu-1 rejected the pod: host namespace "odd" maps to member namespace "Odd" (override "odd": "Odd"), not a '
        + 'DNS-1123 label (lowercase letters, digits and "-", starting and ending with a letter or digit); give it another name '
        + 'with a namespaceMapping override (or change the template) and restart clusterlet (tried again when the pod changes or '
        + 'clusterlet restarts)' },
    { reason: 'InvalidAPIAccess', message: rejectedMessage(MEMBER, access.error, false),
      expected: 'member eu-1 rejected the pod: annotation clusterlet.io/api-access: "Host" is not one of host, member, none: set one '
        + "of them, or remove it for the node's default (tried again when the pod changes or clusterlet restarts)" },
    { ...volume(undefined),
      expected: 'member eu-1 rejected the pod: persistentvolumeclaim "data-web-0" not found; the pod starts once it exists '
        + '(retried with backoff)' },
    { ...volume(claim('nfs')),
      expected: 'member eu-1 rejected the pod: persistentvolumeclaim "data-web-0" is of storage class "nfs": member eu-1 holds only '
        + 'claims of storage class "clusterlet-eu-1", so the pod cannot run there: give it a claim of that class, or keep it off '
        + 'the virtual node (tried again when the pod changes or clusterlet restarts)' },
    { ...volume(claim(NODE)),
      expected: 'member eu-1 rejected the pod: persistentvolumeclaim "data-web-0" has no volume in member eu-1 yet; the pod starts '
        + 'once it has (retried with backoff)' },
    { ...missing('ConfigMap'),
      expected: 'member eu-1 rejected the pod: configmap "settings" not found in namespace shop; the pod starts once it exists '
        + '(retried with backoff)' },
    { ...missing('Secret'),
      expected: 'member eu-1 rejected the pod: secret "settings" not found in namespace shop; the pod starts once it exists '
        + '(retried with backoff)' },
  ];
}

/** Reasons made by pure functions from parts (virtual-kubelet's), which no literal in src/ spells out. */
const COMPOSED = ['ConfigMap', 'Secret'].flatMap((kind) => [true, false].map((optional) =>
  notFoundReason({ kind: kind as 'ConfigMap' | 'Secret', optional })));

describe('reasons and messages on a proxy', () => {
  const table = reasonsTable();
  const documented = new Set(table.filter((r) => !r.passThrough).flatMap((r) => r.reasons));
  const source = producedInSource();
  // The reasons src/ spells out, composes, or returns from the functions pinned() calls; never one this test typed.
  const produced = new Set([...source.keys(), ...COMPOSED, ...pinned().filter((p) => p.computed).map((p) => p.reason)]);

  it('every reason of the docs table is produced in src/', () => {
    assert.ok(documented.size >= 20, `${documented.size} reasons in the table`);
    assert.deepEqual([...documented].filter((r) => !produced.has(r)), [], 'in docs/CONVENTIONS.md "Reasons", produced nowhere in src/');
  });

  it('every reason src/ produces is in the docs table', () => {
    assert.deepEqual([...produced].filter((r) => !documented.has(r)).map((r) => `${r} (${[...source.get(r) ?? []].join(', ') || 'pinned here'})`), [],
      'produced in src/, missing from docs/CONVENTIONS.md "Reasons": add a row');
  });

  it('each row names a file of src/ that produces its reason, or the function that does', () => {
    const wrong: string[] = [];
    const all = sources();
    for (const row of table) {
      const files = [...row.where.matchAll(/([\w/.-]+\.ts)\b/g)].map((m) => m[1]);
      const names = [...row.where.matchAll(/`(\w+)`/g)].map((m) => m[1]);
      const texts = files.map((f) => {
        const path = all.find((s) => s.endsWith(`/${f}`));
        return path ? readFileSync(path, 'utf8') : undefined;
      });
      if (files.length === 0 || texts.includes(undefined)) {
        wrong.push(`${row.reasons.join(', ')}: "${row.where}" names no file of src/ (or one that does not exist)`);
        continue;
      }
      const needles = row.passThrough ? ['PodRejectedError(k.reason'] : [...row.reasons.map((r) => `'${r}'`), ...names];
      if (!texts.some((t) => needles.some((n) => t?.includes(n)))) {
        wrong.push(`${row.reasons.join(', ')}: none of ${files.join(', ')} produces it`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('each message built by a pure function, pinned: one line, what happened and what to do', () => {
    for (const p of pinned()) {
      assert.ok(documented.has(p.reason), p.reason);
      assert.equal(p.message, p.expected, p.reason);
      assert.doesNotMatch(p.message, /\n/, p.reason);
    }
  });

  it('the reasons composed of parts are virtual-kubelet\'s', () => {
    assert.deepEqual(COMPOSED.sort(), ['MandatoryConfigMapNotFound', 'MandatorySecretNotFound', 'OptionalConfigMapNotFound',
      'OptionalSecretNotFound']);
  });
});
