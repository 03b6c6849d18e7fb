// Members from ClusterProfiles (--member-source=clusterprofile): one watch of the host's ClusterProfiles (one
// namespace, a label selector) turned into members as they come, change and go, and each profile's
// clusterlet.io/Offloading condition kept up to date. Starting and stopping members is the manager's
// (ProfileMembers); this reconciler only decides which, and says so on the profiles.
import { isDeepStrictEqual } from 'node:util';
import type { Subscription } from 'rxjs';
import { OFFLOADING_CONDITION } from '../../forge/keys.ts';
import { nodeNameClash } from '../../forge/groups.ts';
import { ConfigError, profileMemberConfig, type ClusterProfileSource, type MemberConfig } from '../../config.ts';
import { toKubeError } from '../../kube/errors.ts';
import { splitKey } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { AccessSource } from '../../provider/access.ts';
import { WorkQueue } from '../../util/workqueue.ts';
import { ProfileAccessError, chooseAccessProvider, profileAccessSource } from './access.ts';
import type { ClusterProfile, Condition, ProfileApi } from './api.ts';

/** A member as the manager runs it, for the profile's condition. */
export type MemberState =
  /** `ledElsewhere`: another replica leads the member (it writes the condition). */
  | { phase: 'starting'; ledElsewhere?: boolean }
  | { phase: 'failed'; error: string; ledElsewhere?: boolean }
  /** `leading`: this replica leads it (always, without election); `reachable`: its API server answers the probe. */
  | { phase: 'running'; leading: boolean; reachable?: boolean; reason?: string; nodeName: string; replica?: string };

/** The manager's side: members started and stopped through its one path. */
export interface ProfileMembers {
  /** Starts the member (set up with retries, led, as any member). */
  add(config: MemberConfig, source: AccessSource): void;
  /** Stops it: its writers, caches and Lease (released); its node stays, NotReady once its lease expires. */
  remove(name: string): Promise<void>;
  /**
   * What a new member would share with one that runs (static or from a profile): its name, node (or a virtual node
   * either can come to name: nodeNameClash) or storage class.
   */
  conflict(config: MemberConfig): string | undefined;
  state(name: string): MemberState | undefined;
}

/** What the condition says, before its times. */
export interface Verdict { status: Condition['status']; reason: string; message: string }

/**
 * What `config` would share with one of the members that run: a name, a node (or a virtual node either can come to
 * name, shown per pool or node) or a storage class, said; else undefined.
 */
export function memberConflict(config: MemberConfig, running: MemberConfig[]): string | undefined {
  for (const other of running) {
    const whose = `member "${other.name}"${other.clusterProfile ? ` (ClusterProfile ${other.clusterProfile.namespace}/${other.clusterProfile.name})` : ' (static configuration)'}`;
    if (other.name === config.name) return `a member named "${config.name}" already runs: ${whose}`;
    if (other.nodeName === config.nodeName) return `node "${config.nodeName}" is already the node of ${whose}`;
    const clash = nodeNameClash(other, config);
    if (clash !== undefined) return `${clash} (${whose})`;
    if (other.storage?.className === config.storage.className) {
      return `StorageClass "${config.storage.className}" is already the class of ${whose}`;
    }
  }
  return undefined;
}

/**
 * The condition for a member's state; undefined when another replica leads it (that one writes): a replica still
 * setting the member up, or failing to, never overwrites what its leader says.
 */
export function memberVerdict(s: MemberState): Verdict | undefined {
  if (s.phase !== 'running' && s.ledElsewhere) return undefined;
  switch (s.phase) {
    case 'starting': return { status: 'Unknown', reason: 'Starting', message: 'clusterlet is setting up this member' };
    // An exec plugin's stderr stays in clusterlet's log: whoever reads profiles need not read what a plugin printed.
    case 'failed': return { status: 'False', reason: 'SetupFailed',
      message: `cannot set up this member (retrying): ${s.error.replace(/; stderr: [\s\S]*$/, '; its stderr is in clusterlet\'s log')}` };
    case 'running':
      if (!s.leading) return undefined;
      if (s.reachable === false) {
        return { status: 'False', reason: 'MemberUnreachable', message: `virtual node ${s.nodeName}: the cluster's API server does not `
          + `answer (${s.reason ?? 'probe failed'}); no pods are offloaded until it does` };
      }
      return { status: 'True', reason: 'Offloading', message: `pods scheduled to virtual node ${s.nodeName} run in this cluster`
        + (s.replica ? ` (clusterlet replica ${s.replica} leads it)` : '') };
  }
}

/**
 * The profile's conditions with ours set to `v` (lastTransitionTime kept unless the status changes), or undefined
 * when nothing would change.
 */
export function conditionsWith(profile: ClusterProfile, v: Verdict, now: Date): Condition[] | undefined {
  const current = profile.status?.conditions ?? [];
  const old = current.find((c) => c.type === OFFLOADING_CONDITION);
  const generation = profile.metadata?.generation;
  if (old && old.status === v.status && old.reason === v.reason && old.message === v.message && old.observedGeneration === generation) {
    return undefined;
  }
  const next: Condition = {
    type: OFFLOADING_CONDITION, ...v,
    lastTransitionTime: old && old.status === v.status ? old.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z'),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  return old ? current.map((c) => (c === old ? next : c)) : [...current, next];
}

export interface ProfileReconcilerOptions {
  /** How often a profile's condition is judged again without a change to the profile (the member's state moves). */
  statusPeriodMs?: number;
  now?: () => Date;
}

export class ProfileReconciler {
  #api: ProfileApi;
  #members: ProfileMembers;
  #source: ClusterProfileSource;
  #log: Logger;
  #queue: WorkQueue;
  #statusPeriodMs: number;
  #now: () => Date;
  /** Members this reconciler started, by profile key, with the config they were started with. */
  #started = new Map<string, MemberConfig>();
  /** Each profile as last seen, kept after it leaves the watch so the condition can still say why. */
  #lastSeen = new Map<string, ClusterProfile>();
  #sub: Subscription | undefined;

  constructor(api: ProfileApi, members: ProfileMembers, source: ClusterProfileSource, log: Logger, opts: ProfileReconcilerOptions = {}) {
    this.#api = api;
    this.#members = members;
    this.#source = source;
    this.#log = log.child({ component: 'clusterprofiles' });
    this.#statusPeriodMs = opts.statusPeriodMs ?? 5_000;
    this.#now = opts.now ?? (() => new Date());
    this.#queue = new WorkQueue({ name: 'clusterprofiles', workers: 1, log: this.#log });
  }

  /** Whether the first list of profiles has been read (every profile then known has been handed to the queue). */
  get synced(): boolean { return this.#api.informer.hasSynced; }

  start(): void {
    this.#sub = this.#api.informer.events$.subscribe((ev) => {
      if (ev.type === 'DELETED') this.#lastSeen.set(ev.key, ev.object);
      this.#queue.add(ev.key);
    });
    this.#queue.start((key) => this.#reconcile(key));
    this.#api.informer.start();
  }

  /** Stops watching; the members stay (the manager stops them with the process). */
  stop(): void {
    this.#sub?.unsubscribe();
    this.#queue.shutdown();
    this.#api.informer.stop();
  }

  async #reconcile(key: string): Promise<{ requeueAfterMs: number } | void> {
    const profile = this.#api.informer.get(key);
    if (!profile) return this.#gone(key);
    this.#lastSeen.delete(key);
    const selected = this.#select(key, profile);
    const running = this.#started.get(key);
    if (running && !isDeepStrictEqual(running, selected.config)) {
      await this.#stop(key, running, selected.config ? 'changed' : selected.refused.reason);
    }
    const verdict = selected.config ? this.#run(key, selected.config) : selected.refused;
    if (verdict) await this.#write(key, profile, verdict);
    return { requeueAfterMs: this.#statusPeriodMs };
  }

  /** The member the profile asks for, or why it gets none. */
  #select(key: string, profile: ClusterProfile): { config: MemberConfig; refused?: undefined } | { config?: undefined; refused: Verdict } {
    const { namespace, name } = splitKey(key);
    try {
      const config = profileMemberConfig({ namespace, name, annotations: profile.metadata?.annotations ?? {} }, this.#source);
      chooseAccessProvider(profile, this.#source.providers);
      return { config };
    } catch (err) {
      if (!(err instanceof ConfigError) && !(err instanceof ProfileAccessError)) throw err;
      return { refused: { status: 'False', reason: err instanceof ConfigError ? 'InvalidProfile' : err.reason, message: err.message } };
    }
  }

  /** Starts the profile's member unless it runs already or conflicts with another; the condition it then gets. */
  #run(key: string, config: MemberConfig): Verdict | undefined {
    if (!this.#started.has(key)) {
      // Judged once this profile's own member is stopped, against every other one (a changed profile too): two
      // members on one node would both delegate every pod of it; on one class, both provision its claims.
      const conflict = this.#members.conflict(config);
      if (conflict !== undefined) return { status: 'False', reason: 'NameConflict', message: conflict };
      this.#start(key, config);
    }
    return memberVerdict(this.#members.state(config.name) ?? { phase: 'starting' });
  }

  #start(key: string, config: MemberConfig): void {
    this.#started.set(key, config);
    this.#log.info({ profile: key, member: config.name, node: config.nodeName }, 'ClusterProfile selected: starting its member');
    this.#members.add(config, profileAccessSource(splitKey(key), {
      host: this.#api.host, providers: this.#source.providers, profile: () => this.#api.informer.get(key),
    }));
  }

  /** The profile left the watch (deleted, or no longer selected): its member stops; the profile says so if it is still there. */
  async #gone(key: string): Promise<void> {
    const running = this.#started.get(key);
    if (running) await this.#stop(key, running, 'ProfileGone');
    const last = this.#lastSeen.get(key);
    this.#lastSeen.delete(key);
    if (!last) return;
    const message = 'the profile no longer matches --clusterprofile-selector: clusterlet does not offload to this cluster';
    await this.#write(key, last, { status: 'False', reason: 'NotSelected', message }).catch((err: unknown) => {
      // Deleted (the usual case) or changed again since: nothing to say on it.
      if (!['NotFound', 'Conflict'].includes(toKubeError(err).kind)) throw err;
    });
  }

  async #stop(key: string, config: MemberConfig, why: string): Promise<void> {
    this.#log.info({ profile: key, member: config.name, why }, 'stopping the member of a ClusterProfile');
    this.#started.delete(key);
    await this.#members.remove(config.name);
  }

  /** Writes the profile's condition, if it changes, on the version of the profile it was judged on. */
  async #write(key: string, profile: ClusterProfile, v: Verdict): Promise<void> {
    const conditions = conditionsWith(profile, v, this.#now());
    if (!conditions) return;
    const resourceVersion = profile.metadata?.resourceVersion;
    // Objects from the API server always carry one: without it the patch could overwrite a newer version.
    if (resourceVersion === undefined) throw new Error(`ClusterProfile ${key} has no resourceVersion`);
    try {
      await this.#api.patchConditions(splitKey(key).name, resourceVersion, conditions);
    } catch (err) {
      // Someone wrote the profile since it was read: its new version is queued by the watch.
      if (toKubeError(err).kind === 'Conflict') return;
      throw err;
    }
  }
}
