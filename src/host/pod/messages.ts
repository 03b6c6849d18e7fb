// What the pod lifecycle tells a user on a proxy (`kubectl describe pod`): the messages of its Offloaded condition and
// Warning events, each one line that says what happened and what to do (or what follows). Pure; pinned with their
// reasons by test/unit/reasons.test.ts.

/** OffloadFailing: the sync failed several times in a row for a reason other than a rejection. */
export function offloadFailingMessage(member: string, node: string, error: string): string {
  return `syncing the pod with member ${member} keeps failing (${error}); retried with backoff: `
    + `check that the member answers (kubectl describe node ${node}) and clusterlet's log`;
}

/** DaemonSetPodNotOffloaded: a DaemonSet's pod bound to the virtual node. */
export function daemonSetMessage(member: string): string {
  return `DaemonSet pods are not offloaded to member ${member}: they belong on real nodes; keep the DaemonSet off virtual `
    + 'nodes (a node affinity on type NotIn virtual-kubelet)';
}

/** DelegateLost: the delegate is gone from the member; `restarted` when it is created again, else the proxy fails. */
export function delegateLostMessage(member: string, restarted: boolean): string {
  return restarted
    ? `the pod's delegate in member ${member} was deleted or evicted (its member node may be gone); creating it again: `
      + 'the restart count goes on'
    : `the pod's delegate in member ${member} was deleted or evicted, and restartPolicy is Never: the pod failed; `
      + 'its controller, if any, makes a new one';
}

/** The Offloaded=False condition (and Warning event) of a pod the member's side refused, with its reason. */
export function rejectedMessage(member: string, message: string, retry: boolean): string {
  return `member ${member} rejected the pod: ${message}${retry ? ' (retried with backoff)' : ' (tried again when the pod changes or clusterlet restarts)'}`;
}
