// clusterlet --help: every flag, grouped as a user looks for them; docs/configuration.md says more of each.

export const HELP = `clusterlet — a virtual kubelet that makes each member cluster one node of the host cluster.

Usage:
  clusterlet --member-kubeconfig FILE [--member-name NAME] [--nodename NODE] [options]
  clusterlet --provider-config clusterlet.yaml [options]

Host cluster:
  --host-kubeconfig FILE     kubeconfig of the host cluster (alias --kubeconfig); in-cluster config when absent
  --host-name NAME           identity of the host cluster, stamped on member objects as clusterlet.io/origin
                             (default: the host's cluster ID, the UID of its kube-system namespace)
  --host-qps N, --host-burst N
                             client-side rate limit towards the host (default 200 / 400)
  --api-protocol P           http1.1 (default): HTTPS/1.1 to the host's and members' API servers, a keep-alive
                             connection per request under way (24 at most per pool) and one per watch. http2:
                             requests as streams over a few connections, watches on HTTPS/1.1 (less memory and
                             CPU, more latency under load: see docs/configuration.md); a server that refuses HTTP/2
                             gets HTTPS/1.1

One member (flags):
  --member-kubeconfig FILE   kubeconfig of the member cluster
  --member-name NAME         member name (default: member)
  --nodename NODE            virtual node name (default: clusterlet-<member-name>)
  --nodes MODE               the member's virtual nodes: cluster (default): one for the whole member; node: one
                             per member node; pool=KEY: one per value of the member nodes' label KEY (e.g.
                             pool=node.kubernetes.io/instance-type). With --provider-config, the default of members
                             without nodes in the file; with ClusterProfiles, every profile member's
  --member-qps N, --member-burst N
                             client-side rate limit towards the member (default 200 / 400)
  --fit MODE                 a pod that fits no member node now: auto (default): its delegate waits Pending in the
                             member where the member shows it adds nodes (a cluster-autoscaler status ConfigMap,
                             Karpenter NodePools), else it is not created (NoMemberNodeFits) until one has room;
                             enforce: never created until one has room; advisory: always created, to wait for the
                             member's autoscaler; off: not judged. With --provider-config, the default of members
                             without fit in the file; with ClusterProfiles, every profile member's

Several members:
  --provider-config FILE     YAML file listing members (see docs/configuration.md: name, kubeconfig or kubeconfigSecret,
                             nodeName, namespaceMapping, labels, taints, qps, burst, storage, apiAccess, hostAPI,
                             nodes, fit)

Storage (persistent volumes in the member, see docs/storage.md):
  --storage-class NAME       the host StorageClass whose claims get their volume in the member (one member by
                             flags; default clusterlet-<member-name>; in the config file: storage.storageClassName)
  --member-storage-class NAME
                             the member's StorageClass of those volumes (default: the member's default class)
  --storage-reclaim-policy P Delete (default): a deleted claim's member claim is deleted too; Retain: it is kept

API access of offloaded pods (see docs/api-access.md):
  --api-access MODE          which API server a delegate's ServiceAccount token is for, unless its pod says
                             otherwise (annotation clusterlet.io/api-access): host (default): the pod's host
                             ServiceAccount, a token bound to the proxy pod, KUBERNETES_SERVICE_HOST/PORT at the
                             host API server; member: the member's token for a ServiceAccount of the same name;
                             none: no token (in the config file: apiAccess per member)
  --host-api-server URL      the host API server as the member's pods reach it (https://host:port; default: the
                             host kubeconfig's server; required in-cluster, else host mode is off; in the config
                             file: hostAPI.server per member)
  --host-token-max-age D     refresh a delegate's host tokens after this long at the latest (default 24h, as the
                             kubelet; also at 80 % of their lifetime)

Members from ClusterProfiles (multicluster.x-k8s.io/v1alpha1, SIG-Multicluster's cluster inventory;
see docs/configuration.md):
  --member-source SOURCE     config (default): the members above only; clusterprofile: also one member per
                             ClusterProfile on the host (the static members, if any, still run)
  --clusterprofile-namespace NS
                             host namespace of the ClusterProfiles (default: $POD_NAMESPACE, else clusterlet)
  --clusterprofile-selector SELECTOR
                             label selector of the ClusterProfiles to offload to (default: all in the namespace)
  --clusterprofile-provider-file FILE
                             the cluster-inventory-api's access provider file (JSON or YAML: providers, each a
                             name and an execConfig); default: the built-in kubeconfig-secretreader only

Export (member → host):
  --export-namespaces A,B    host namespaces that accept member objects labelled clusterlet.io/export=true,
                             besides those annotated clusterlet.io/accept-exports: "true" (default: none;
                             overrides the config file's exportNamespaces)

Services (host → member):
  --reflect-host-endpoints   also copy the host-side endpoints of reflected Services into the member, as
                             EndpointSlices managed by clusterlet (needs a pod network routable between the
                             clusters and the extra RBAC of manifests/*/rbac-host-endpoints.yaml; default off;
                             the config file's reflectHostEndpoints: true does the same)

High availability (several replicas; see docs/high-availability.md):
  --leader-elect[=BOOL]      elect one replica per member on a host Lease clusterlet-<member> (default true;
                             false: this process leads every member, as a single replica does)
  --leader-elect-lease-duration D, --leader-elect-renew-deadline D, --leader-elect-retry-period D
                             durations such as 15s, 500ms, 1m (default 15s / 10s / 2s, as kube-controller-manager)
  --leader-elect-namespace NS
                             namespace of the Leases (default: $POD_NAMESPACE, else clusterlet)
  --leader-elect-identity ID this replica's holder identity (default: $POD_NAME, else the hostname); a process
                             restarted with the same identity takes its Leases back at once

Node and process:
  --node-ip IP               InternalIP of the virtual node(s) (default: $POD_IP, else 127.0.0.1)
  --kubelet-port N           kubelet API port (HTTPS), published as the node's daemon endpoint (default 10250)
  --serving-cert MODE        kubelet API serving certificate: file (--tls-cert-file/--tls-key-file), csr (a
                             kubernetes.io/kubelet-serving CSR on the host, renewed before expiry; self-signed
                             until approved) or self-signed (default: file when the files are given, else csr)
  --tls-cert-file FILE, --tls-key-file FILE
                             serving certificate and key (PEM), reloaded when they change
  --client-ca-file FILE      CA bundle for client certificates (default: the host's client CA, from
                             kube-system/extension-apiserver-authentication)
  --authentication-mode MODE webhook (default): client certificates or TokenReview, then SubjectAccessReview on
                             nodes/proxy|log|stats|metrics|pods, as the kubelet; none: no checks (trusted networks only)
  --health-port N            plain-HTTP port for /healthz, /readyz, /metrics (default 10255; 0 disables)
  --pod-sync-workers N       pods synced concurrently per member (default 10)
  --watch-silence-seconds N  restart a watch that received nothing for this long (default 90)
  --probe-period-seconds N   probe each member's API server (/readyz) this often (default 10)
  --probe-failure-threshold N
                             consecutive failed probes before the member's node turns NotReady and its lease
                             stops (default 3): a shorter outage changes nothing on the host
  --log-level LEVEL          trace|debug|info|warn|error (default: $LOG_LEVEL or info)
  -h, --help                 this text
  --version                  print the version
`;

