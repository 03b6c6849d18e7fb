// How a member is shown on the host: one virtual node for the whole member (`cluster`), one per value of a member
// node label (`pool`), or one per member node (`node`). Pure functions: which group a member node is in, the virtual
// node's name for a group, and the node affinity that keeps a delegate inside its group.
import { createHash } from 'node:crypto';
import type { V1Affinity, V1Node, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1PodSpec } from '@kubernetes/client-node';
import { NAME_MAX } from './namespace.ts';
import { isVirtualNode } from './capacity.ts';
import { GROUP_ANNOTATION, MEMBER_LABEL } from './keys.ts';

/** The granularity of a member's virtual nodes (provider config `nodes`, flag --nodes). */
export type NodeGranularity = { mode: 'cluster' } | { mode: 'pool'; label: string } | { mode: 'node' };

export const CLUSTER_GRANULARITY: NodeGranularity = { mode: 'cluster' };

/**
 * One group of member nodes a virtual node stands for: the whole member, the nodes with one value of the pool label,
 * or one member node. `id` is what the virtual node records of it (GROUP_ANNOTATION), so that a virtual node of an
 * earlier granularity is still understood after a switch.
 */
export type NodeGroup =
  | { kind: 'cluster' }
  | { kind: 'pool'; label: string; value: string }
  | { kind: 'node'; node: string };

/** The group's id, as the virtual node's GROUP_ANNOTATION records it: `cluster`, `pool:<label>=<value>`, `node:<name>`. */
export function groupId(g: NodeGroup): string {
  switch (g.kind) {
    case 'cluster': return 'cluster';
    case 'pool': return `pool:${g.label}=${g.value}`;
    case 'node': return `node:${g.node}`;
  }
}

/** The group a GROUP_ANNOTATION value names; undefined for a value clusterlet did not write. */
export function parseGroupId(id: string | undefined): NodeGroup | undefined {
  if (id === 'cluster') return { kind: 'cluster' };
  if (id?.startsWith('node:') && id.length > 5) return { kind: 'node', node: id.slice(5) };
  const m = id === undefined ? null : /^pool:([^=]+)=(.*)$/.exec(id);
  return m ? { kind: 'pool', label: m[1], value: m[2] } : undefined;
}

/** The group a member node is in under `g`; undefined when it is in none (pool mode, without the pool label). */
export function groupOf(node: V1Node, g: NodeGranularity): NodeGroup | undefined {
  switch (g.mode) {
    case 'cluster': return { kind: 'cluster' };
    case 'node': {
      const name = node.metadata?.name;
      return name ? { kind: 'node', node: name } : undefined;
    }
    case 'pool': {
      const value = node.metadata?.labels?.[g.label];
      return value === undefined ? undefined : { kind: 'pool', label: g.label, value };
    }
  }
}

/** Whether a member node is in the group. */
export function inGroup(node: V1Node, group: NodeGroup): boolean {
  switch (group.kind) {
    case 'cluster': return true;
    case 'node': return node.metadata?.name === group.node;
    case 'pool': return node.metadata?.labels?.[group.label] === group.value;
  }
}

/**
 * The groups of the member's nodes under `g`, by id, each with its nodes, in the order of their ids; the member's own
 * virtual nodes are in none. In cluster mode the one group exists even without nodes (the member's virtual node shows
 * it has none).
 */
export function memberGroups(nodes: readonly V1Node[], g: NodeGranularity): Map<string, { group: NodeGroup; nodes: V1Node[] }> {
  const out = new Map<string, { group: NodeGroup; nodes: V1Node[] }>();
  if (g.mode === 'cluster') return new Map([['cluster', { group: { kind: 'cluster' }, nodes: [...nodes] }]]);
  // Virtual nodes of the member (another virtual kubelet's, another clusterlet's) run nothing of ours: no group.
  for (const node of nodes) {
    if (isVirtualNode(node)) continue;
    const group = groupOf(node, g);
    if (!group) continue;
    const id = groupId(group);
    const entry = out.get(id);
    if (entry) entry.nodes.push(node);
    else out.set(id, { group, nodes: [node] });
  }
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const HASH_LENGTH = 8;

/**
 * The virtual node's name for a group of the member whose own node name is `base`: `base` for the whole member,
 * `<base>-<value>` for a pool, `<base>-<member node>` for a node. A name stays a valid node name and label value
 * (at most NAME_MAX characters, lowercase DNS-1123): a value that needs changing to fit (upper case, `_`, too long) is
 * cut and followed by a hash of the whole value, so two values never share a name.
 */
export function virtualNodeName(base: string, group: NodeGroup): string {
  if (group.kind === 'cluster') return base;
  const value = group.kind === 'pool' ? group.value : group.node;
  // DNS-1123: dot-separated parts of letters, digits and inner dashes.
  const clean = value.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').split('.')
    .map((part) => part.replace(/^-+|-+$/g, '')).filter(Boolean).join('.');
  const plain = `${base}-${clean}`;
  if (clean === value && clean !== '' && plain.length <= NAME_MAX) return plain;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, HASH_LENGTH);
  const head = hashedHead(base);
  const room = NAME_MAX - head.length - HASH_LENGTH - 2;
  const cut = clean.slice(0, Math.max(0, room)).replace(/[^a-z0-9]+$/, '');
  return cut ? `${head}-${cut}-${hash}` : `${head}-${hash}`;
}

/** A node name near the limit leaves no room for a hashed value: it is cut too (the hash keeps the name the group's). */
function hashedHead(base: string): string {
  return base.length + HASH_LENGTH + 1 > NAME_MAX ? base.slice(0, NAME_MAX - HASH_LENGTH - 1).replace(/[^a-z0-9]+$/, '') : base;
}

/** What every name virtualNodeName gives a pool or member node of `base` starts with: `<base>-`, or its cut head's. */
export function groupNamePrefixes(base: string): string[] {
  return [...new Set([`${base}-`, `${hashedHead(base)}-`])];
}

/** A member as far as the names of its virtual nodes go. */
export interface NamedMember { name: string; nodeName: string; nodes?: NodeGranularity }

const grouped = (m: NamedMember): boolean => (m.nodes?.mode ?? 'cluster') !== 'cluster';

/** How a member's grouped names are described in messages: `<nodeName>-<value>` (pools), `<nodeName>-<member node>`. */
function groupedNames(m: NamedMember): string {
  return `${m.nodeName}-${m.nodes?.mode === 'node' ? '<member node>' : '<value>'}`;
}

/** Which groups a member shown per pool or node names: its pools, or its member nodes. */
const groupsOf = (m: NamedMember): string => (m.nodes?.mode === 'node' ? 'member nodes' : 'pools');

/**
 * Why two members can come to name one virtual node, or undefined when they never can (their node names are not the
 * same: that is checked apart). A member's names are its own node name and, shown per pool or node, every name that
 * starts with one of its groupNamePrefixes: its pool label's values and its member nodes' names are known only at
 * run time, so any name they can reach counts.
 */
export function nodeNameClash(a: NamedMember, b: NamedMember): string | undefined {
  const reaches = (m: NamedMember, name: string): boolean => grouped(m) && groupNamePrefixes(m.nodeName).some((p) => name.startsWith(p));
  const fix = 'give one of them a nodeName the other\'s names cannot reach';
  for (const [x, y] of [[a, b], [b, a]] as const) {
    if (reaches(x, y.nodeName)) {
      return `members "${a.name}" and "${b.name}" can share node "${y.nodeName}": it is member ${y.name}'s node name, and member ${x.name}, `
        + `shown per ${x.nodes?.mode === 'node' ? 'member node' : 'pool'}, names its ${groupsOf(x)} ${groupedNames(x)}; ${fix}`;
    }
  }
  const overlap = grouped(a) && grouped(b) && groupNamePrefixes(a.nodeName)
    .some((pa) => groupNamePrefixes(b.nodeName).some((pb) => pa.startsWith(pb) || pb.startsWith(pa)));
  if (!overlap) return undefined;
  return `members "${a.name}" and "${b.name}" can share a virtual node: member ${a.name} names its ${groupsOf(a)} ${groupedNames(a)} and `
    + `member ${b.name} its ${groupsOf(b)} ${groupedNames(b)}; ${fix}`;
}

/**
 * The group a host node stands for when it is a virtual node of member `member`, whose own node name is `base`: it
 * carries that member's label, and the group it records (GROUP_ANNOTATION; none: the whole member's, for `base`
 * alone) is one whose name under `base` is the node's. Undefined for any other node (another member's, one recording
 * a group that is not this name's, a kubelet's): clusterlet neither adopts nor writes it.
 */
export function ownGroup(node: V1Node, member: string, base: string): NodeGroup | undefined {
  if (node.metadata?.labels?.[MEMBER_LABEL] !== member) return undefined;
  const name = node.metadata.name ?? '';
  const group = parseGroupId(node.metadata.annotations?.[GROUP_ANNOTATION]) ?? (name === base ? { kind: 'cluster' as const } : undefined);
  return group && virtualNodeName(base, group) === name ? group : undefined;
}

/** Who a host node that is not ours (ownGroup) is, for messages. */
export function describeForeignNode(node: V1Node, member: string): string {
  const owner = node.metadata?.labels?.[MEMBER_LABEL];
  const name = node.metadata?.name ?? '';
  if (owner === undefined) return `host node "${name}" exists and is not a clusterlet virtual node (it has no ${MEMBER_LABEL} label)`;
  if (owner !== member) return `host node "${name}" exists and is member ${owner}'s virtual node`;
  const recorded = node.metadata?.annotations?.[GROUP_ANNOTATION];
  return `host node "${name}" exists, carries member ${member}'s label but records ${recorded === undefined ? 'no group' : `group "${recorded}"`}, `
    + 'which clusterlet does not give that name';
}

/** What keeps a delegate in its group: a label requirement (pool) or a field requirement on the node name (node). */
export type GroupConstraint =
  | { matchExpression: V1NodeSelectorRequirement }
  | { matchField: V1NodeSelectorRequirement };

/** The constraint of a group; undefined for the whole member (nothing to constrain). */
export function groupConstraint(group: NodeGroup): GroupConstraint | undefined {
  switch (group.kind) {
    case 'cluster': return undefined;
    case 'pool': return { matchExpression: { key: group.label, operator: 'In', values: [group.value] } };
    case 'node': return { matchField: { key: 'metadata.name', operator: 'In', values: [group.node] } };
  }
}

/**
 * The affinity with the group's constraint added to each of its required node selector terms (terms are ORed: each
 * must keep the pod in the group), or as the one term when it has none. What else the pod asks stays as it is.
 */
export function constrainAffinity(affinity: V1Affinity | undefined, c: GroupConstraint): V1Affinity {
  const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const terms: V1NodeSelectorTerm[] = required?.nodeSelectorTerms.length ? required.nodeSelectorTerms : [{}];
  const constrained = terms.map((t): V1NodeSelectorTerm => ('matchExpression' in c
    ? { ...t, matchExpressions: [...t.matchExpressions ?? [], c.matchExpression] }
    : { ...t, matchFields: [...t.matchFields ?? [], c.matchField] }));
  return {
    ...affinity,
    nodeAffinity: { ...affinity?.nodeAffinity, requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: constrained } },
  };
}

/** The spec with its affinity constrained to the group (a copy; the spec given is not changed). */
export function constrainSpec(spec: V1PodSpec, c: GroupConstraint | undefined): V1PodSpec {
  return c ? { ...spec, affinity: constrainAffinity(spec.affinity, c) } : spec;
}

/** How a group is named in messages: "member m", "member m (pool x=y)", "member m (node n)". */
export function describeGroup(member: string, group: NodeGroup): string {
  switch (group.kind) {
    case 'cluster': return `member ${member}`;
    case 'pool': return `member ${member} (pool ${group.label}=${group.value})`;
    case 'node': return `member ${member} (node ${group.node})`;
  }
}
