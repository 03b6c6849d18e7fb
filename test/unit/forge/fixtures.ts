// Pods for the forge and status tests: a proxy as the host API server returns it, and delegates.
import type { V1Pod, V1PodSpec, V1PodStatus, V1Volume } from '@kubernetes/client-node';
import { forgeDelegatePod, type DelegateContext } from '../../../src/forge/pod.ts';

export const ctx: DelegateContext = { hostName: 'host-a', nodeName: 'clusterlet-eu1', memberNamespace: 'team-x' };
export const T0 = new Date('2026-03-01T10:00:00Z');
export const T1 = new Date('2026-03-01T10:00:05Z');

export const tokenVolume: V1Volume = {
  name: 'kube-api-access-7xk2p',
  projected: {
    defaultMode: 420,
    sources: [
      { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
    ],
  },
};
export const tokenMount = { name: 'kube-api-access-7xk2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };

// A proxy as the host API server returns it after admission, scheduling and binding to the virtual node.
export function hostPod(): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'web-5d8f7-abcde',
      generateName: 'web-5d8f7-',
      namespace: 'team-x',
      uid: '6f1c2a4e-1111-2222-3333-444455556666',
      resourceVersion: '48213',
      generation: 1,
      creationTimestamp: T0,
      labels: { app: 'web', 'pod-template-hash': '5d8f7', 'kueue.x-k8s.io/queue-name': 'q' },
      annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-03-01T09:00:00Z' },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d8f7', uid: 'rs-uid', controller: true, blockOwnerDeletion: true },
      ],
      finalizers: ['example.com/hold'],
      managedFields: [{ manager: 'kube-controller-manager', operation: 'Update', apiVersion: 'v1', time: T0 }],
    },
    spec: {
      nodeName: 'clusterlet-eu1',
      schedulerName: 'default-scheduler',
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
      enableServiceLinks: true,
      serviceAccountName: 'web',
      serviceAccount: 'web',
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      terminationGracePeriodSeconds: 30,
      securityContext: {},
      nodeSelector: { type: 'virtual-kubelet', 'kubernetes.io/os': 'linux' },
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'kubernetes.io/hostname', operator: 'In', values: ['clusterlet-eu1'] },
                  { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] },
                ],
              },
            ],
          },
        },
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'web' } } },
            },
          ],
        },
      },
      tolerations: [
        { key: 'virtual-kubelet.io/provider', operator: 'Exists' },
        { key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      initContainers: [
        {
          name: 'migrate',
          image: 'registry.example/web:1.2.0',
          command: ['migrate'],
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
          volumeMounts: [tokenMount],
        },
      ],
      containers: [
        {
          name: 'web',
          image: 'registry.example/web:1.2.0',
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          env: [
            { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
            { name: 'HOST_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.hostIP' } } },
            { name: 'NODE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } } },
          ],
          resources: { requests: { cpu: '100m', memory: '64Mi' } },
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
          volumeMounts: [{ name: 'config', mountPath: '/etc/web' }, tokenMount],
        },
      ],
      volumes: [{ name: 'config', configMap: { name: 'web-config', defaultMode: 420 } }, tokenVolume],
    },
    status: {
      phase: 'Pending',
      qosClass: 'Burstable',
      conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: T0 }],
    },
  };
}

export function specWith(extra: Partial<V1PodSpec>): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [{ name: 'c', image: 'i' }], ...extra } };
}

export function forgedSpec(extra: Partial<V1PodSpec>): V1PodSpec {
  return forgeDelegatePod(specWith(extra), ctx).spec!;
}


export function delegateWith(spec: Partial<V1PodSpec>, status: V1PodStatus | undefined): V1Pod {
  return { metadata: { name: 'p', namespace: 'team-x', generation: 3 }, spec: { containers: [{ name: 'c', image: 'i' }], ...spec }, status };
}

export const runningStatus: V1PodStatus = {
  phase: 'Running',
  observedGeneration: 3,
  conditions: [
    { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: T0, observedGeneration: 3 },
    { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
    { type: 'Ready', status: 'True', lastTransitionTime: T1 },
    { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
    { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
    { type: 'example.member/custom', status: 'True', lastTransitionTime: T0 },
  ],
  containerStatuses: [
    {
      name: 'c',
      image: 'docker.io/library/i:latest',
      imageID: 'docker.io/library/i@sha256:ab',
      containerID: 'containerd://123',
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: T1 } },
    },
  ],
  hostIP: '10.1.0.7',
  hostIPs: [{ ip: '10.1.0.7' }],
  podIP: '10.244.3.9',
  podIPs: [{ ip: '10.244.3.9' }],
  startTime: T0,
  qosClass: 'BestEffort',
  nominatedNodeName: 'member-node-2',
  resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: 'member-claim' }],
};

