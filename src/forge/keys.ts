// Every label, annotation, condition and taint key clusterlet reads or writes, in one place (docs/CONVENTIONS.md
// explains each).

export const LABEL_PREFIX = 'clusterlet.io/';

// On everything clusterlet creates in a member: the host cluster's name.
export const ORIGIN_LABEL = 'clusterlet.io/origin';
// On delegates: the proxy's UID and the virtual node's name.
export const PROXY_UID_LABEL = 'clusterlet.io/proxy-uid';
export const NODE_LABEL = 'clusterlet.io/node';
// On the virtual node: the member it stands for.
export const MEMBER_LABEL = 'clusterlet.io/member';

// On a delegate created again after its predecessor was lost: restarts per container so far, added to the counts
// the new delegate reports, so the proxy's RESTARTS keep counting (JSON: {"container": n}).
export const RESTARTS_ANNOTATION = 'clusterlet.io/restarts';

// On a delegate: the proxy it stands for. On a member namespace clusterlet created: the host namespace it holds.
export const PROXY_NAMESPACE_ANNOTATION = 'clusterlet.io/proxy-namespace';
export const PROXY_NAME_ANNOTATION = 'clusterlet.io/proxy-name';
// Member ConfigMaps/Secrets carrying this label (value "true") are exported to the host namespace.
// On a host object exported from a member: the member and member namespace it came from ("<member>/<namespace>").
export const EXPORTED_FROM_ANNOTATION = 'clusterlet.io/exported-from';
export const EXPORT_LABEL = 'clusterlet.io/export';
// On a host namespace: with the value "true" it accepts those exports (so does a name in --export-namespaces).
export const ACCEPT_EXPORTS_ANNOTATION = 'clusterlet.io/accept-exports';

// The taint of the virtual node; the key is virtual-kubelet's, so tolerations written for it keep working.
export const VIRTUAL_NODE_TAINT_KEY = 'virtual-kubelet.io/provider';
export const VIRTUAL_NODE_TAINT_VALUE = 'clusterlet';
export const VIRTUAL_NODE_TAINT_EFFECT = 'NoSchedule';

// The virtual-kubelet node labels: `type=virtual-kubelet`, `kubernetes.io/role=agent`.
export const VIRTUAL_NODE_TYPE_LABEL = 'type';
export const VIRTUAL_NODE_TYPE = 'virtual-kubelet';
export const ROLE_LABEL = 'kubernetes.io/role';
export const VIRTUAL_NODE_ROLE = 'agent';

export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

// On the virtual node: the label keys clusterlet set, so it can remove the ones that no longer apply.
export const MANAGED_LABELS_ANNOTATION = 'clusterlet.io/managed-labels';
// On the virtual node: the member taints clusterlet copied onto it (key:effect, comma-separated), so it can remove
// the ones the member nodes no longer share.
export const MANAGED_TAINTS_ANNOTATION = 'clusterlet.io/managed-taints';

// The proxy's condition saying whether its delegate could be created in the member (False: why not).
export const OFFLOADED_CONDITION = 'clusterlet.io/Offloaded';

// On a host Service, set by users: with the value "true", the member copy is exported through the Multi-Cluster
// Services API (a ServiceExport next to it) where the member serves it.
export const SERVICE_EXPORT_ANNOTATION = 'clusterlet.io/service-export';

// On a host EndpointSlice's copy in a member (--reflect-host-endpoints): the host slice it copies.
export const HOST_ENDPOINTSLICE_ANNOTATION = 'clusterlet.io/host-endpointslice';

/** On clusterlet's host Leases (src/host/ha/): `member` for a member's, `replica` for a replica's presence. */
export const LEADER_ELECTION_LABEL = 'clusterlet.io/leader-election';
/** On a replica's presence Lease: the members it is ready to lead, comma-separated (members are spread by it). */
export const READY_MEMBERS_ANNOTATION = 'clusterlet.io/ready-members';

// Storage (src/forge/volumes.ts). On a member claim clusterlet created: the UID of the host claim it holds the data of
// (with clusterlet.io/proxy-namespace, the host claim's namespace; the name is the same).
export const CLAIM_UID_ANNOTATION = 'clusterlet.io/claim-uid';
// On such a member claim: the reclaim policy it was made under (Retain: never deleted for want of a host volume).
export const RECLAIM_POLICY_ANNOTATION = 'clusterlet.io/reclaim-policy';
// On a host PersistentVolume clusterlet provisioned: where its data is, `<member>/<member namespace>/<claim>`.
export const MEMBER_CLAIM_ANNOTATION = 'clusterlet.io/member-claim';
// On such a host volume with the Delete reclaim policy: its member claim is deleted before the volume goes.
export const VOLUME_FINALIZER = 'clusterlet.io/member-claim';
// On a ClusterProfile (--member-source=clusterprofile), set by users: the virtual node's name (default clusterlet-<name>).
export const PROFILE_NODE_NAME_ANNOTATION = 'clusterlet.io/node-name';
// The condition clusterlet writes on each ClusterProfile it watches: whether it offloads to that cluster.
export const OFFLOADING_CONDITION = 'clusterlet.io/Offloading';

// API access of offloaded pods (src/forge/apiaccess.ts). On a proxy, set by users: host | member | none, which API
// server and identity its delegate's ServiceAccount token is for (default: the member's `apiAccess`).
export const API_ACCESS_ANNOTATION = 'clusterlet.io/api-access';
// On a member Secret that holds a delegate's host tokens: `host-token` (what else clusterlet owns has no role).
export const ROLE_OBJECT_LABEL = 'clusterlet.io/role';
export const HOST_TOKEN_ROLE = 'host-token';
// On such a Secret: the tokens it holds (JSON: key, audience, expiration), the proxy's ServiceAccount, and when its
// tokens are refreshed next (RFC 3339), so that a restarted process refreshes them on time without the proxy.
export const TOKENS_ANNOTATION = 'clusterlet.io/tokens';
export const SERVICE_ACCOUNT_ANNOTATION = 'clusterlet.io/service-account';
export const REFRESH_AT_ANNOTATION = 'clusterlet.io/refresh-at';
/** On a virtual node: the group of member nodes it stands for (forge/groups.ts groupId), so a node of an earlier granularity is understood. */
export const GROUP_ANNOTATION = 'clusterlet.io/node-group';
/** On a delegate: the virtual node of its proxy, when that is not the member's own node name (a pool's or a member node's). */
export const VIRTUAL_NODE_LABEL = 'clusterlet.io/virtual-node';
/** A taint on a virtual node of an earlier granularity, kept while pods are bound to it (forge/node.ts RETIRING_TAINT). */
export const RETIRING_TAINT_KEY = 'clusterlet.io/retiring';
/** A taint on a virtual node of a pool or member node whose Ready member nodes are all cordoned (forge/node.ts CORDONED_TAINT). */
export const CORDONED_TAINT_KEY = 'clusterlet.io/cordoned';
