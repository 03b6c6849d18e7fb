// Where a member's kubeconfig comes from, as the member side follows it (src/member/credentials.ts: read at setup,
// read again while clusterlet runs, the member's client moved to each new access). The other way round, as
// reflection.ts: the host side implements the sources that are host objects (a kubeconfig Secret,
// src/host/credentials.ts; a ClusterProfile's access provider, src/host/profiles/access.ts), the member side a file
// of its own; manager.ts hands each member its source.
import type { ClusterAccess } from '../kube/kubeconfig.ts';

export interface AccessSource {
  /** For messages: the file, or the Secret and key, or the ClusterProfile. */
  readonly name: string;
  /** Reads and parses it now; rejects with a message naming the source and the field when it cannot be used. */
  read(): Promise<ClusterAccess>;
  /** For a file: its absolute path, whose directory is watched for changes. */
  readonly file?: string;
}
