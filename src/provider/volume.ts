// The seam between the host's volume controller (src/host/storage/) and a back end that holds volumes: a host
// PersistentVolumeClaim of the member's storage class stands for a claim in the member. Everything here is in host
// coordinates (host namespace and claim name); the back end translates to its own.
import type { Observable } from 'rxjs';
import type { ClaimRequest, VolumeState } from '../forge/volumes.ts';

/** What the back end needs to make the volume for a host claim (its UID: a volume made for an earlier claim of the name is not this one's). */
export type VolumeRequest = ClaimRequest;

/** The back end's volume for a host claim, as the host claim and its volume show it. */
export type ProviderVolume = VolumeState;

/**
 * Why the back end would not make or change a volume: shown on the host claim as a Warning event with this reason.
 * `reschedule`: the claim's node cannot hold it (the back end refused it), so the host scheduler is asked to choose
 * again; else it is tried again later.
 */
export class VolumeRejectedError extends Error {
  readonly reason: string;
  readonly reschedule: boolean;
  constructor(reason: string, message: string, options?: { cause?: unknown; reschedule?: boolean }) {
    super(message, options);
    this.name = 'VolumeRejectedError';
    this.reason = reason;
    this.reschedule = options?.reschedule ?? false;
  }
}

export interface VolumeProvider {
  /**
   * Makes the back-end volume for a host claim when it has none yet; resolves with its state (Pending until the
   * back end has bound it) and whether this call made it. Throws VolumeRejectedError when the back end refuses it
   * or holds another volume there.
   */
  provisionVolume(req: VolumeRequest): Promise<{ volume: ProviderVolume; created: boolean }>;
  /** The back-end volume of a host claim, if there is one (from the back end's cache). */
  getVolume(namespace: string, name: string): ProviderVolume | undefined;
  /** Asks the back end for `storage` (a quantity) for the host claim's volume. Throws VolumeRejectedError when refused. */
  expandVolume(namespace: string, name: string, storage: string): Promise<void>;
  /** Deletes the back-end volume made for the host claim of that UID, if it exists (a newer one is left alone). */
  deleteVolume(namespace: string, name: string, uid: string): Promise<void>;
  /** Host claim keys (namespace/name) whose back-end volume changed, appeared or went. */
  readonly volumeChanges$: Observable<string>;
  /** Resolves once the back end's cache is complete. */
  waitSynced(): Promise<void>;
}
