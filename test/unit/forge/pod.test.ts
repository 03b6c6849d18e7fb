import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Affinity, V1Pod, V1PodSpec, V1PodStatus, V1Toleration, V1Volume } from '@kubernetes/client-node';
import {
  delegateUpdate,
  deletionDisruption,
  forgeDelegatePod,
  forgeProxyStatus,
  forgeProxyStatusForLostDelegate,
  isDaemonSetPod,
  isTerminal,
  statusEqual,
  pendingStatusInformative,
  proxyStatusPatch,
  restartsAfterLoss,
} from '../../../src/forge/pod.ts';
import type { DelegateContext } from '../../../src/forge/pod.ts';

const ctx: DelegateContext = { originCluster: 'host-a', nodeName: 'clusterlet-eu1', memberNamespace: 'team-x' };
const T0 = new Date('2026-03-01T10:00:00Z');
const T1 = new Date('2026-03-01T10:00:05Z');

const tokenVolume: V1Volume = {
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
const tokenMount = { name: 'kube-api-access-7xk2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true };

// A proxy as the host API server returns it after admission, scheduling and binding to the virtual node.
function hostPod(): V1Pod {
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

function specWith(extra: Partial<V1PodSpec>): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'u' }, spec: { containers: [{ name: 'c', image: 'i' }], ...extra } };
}

function forgedSpec(extra: Partial<V1PodSpec>): V1PodSpec {
  return forgeDelegatePod(specWith(extra), ctx).spec!;
}

describe('forgeDelegatePod', () => {
  it('turns a realistic host pod into the delegate the member must receive', () => {
    const proxy = hostPod();
    const before = structuredClone(proxy);
    const delegate = forgeDelegatePod(proxy, ctx);
    assert.deepEqual(delegate, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web-5d8f7-abcde',
        namespace: 'team-x',
        labels: {
          app: 'web',
          'pod-template-hash': '5d8f7',
          'kueue.x-k8s.io/queue-name': 'q',
          'clusterlet.io/origin': 'host-a',
          'clusterlet.io/proxy-uid': '6f1c2a4e-1111-2222-3333-444455556666',
          'clusterlet.io/node': 'clusterlet-eu1',
        },
        annotations: {
          'kubectl.kubernetes.io/restartedAt': '2026-03-01T09:00:00Z',
          'clusterlet.io/proxy-namespace': 'team-x',
          'clusterlet.io/proxy-name': 'web-5d8f7-abcde',
        },
      },
      spec: {
        enableServiceLinks: true,
        serviceAccountName: 'web',
        serviceAccount: 'web',
        restartPolicy: 'Always',
        dnsPolicy: 'ClusterFirst',
        terminationGracePeriodSeconds: 30,
        securityContext: {},
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] }] }],
            },
          },
          podAntiAffinity: proxy.spec!.affinity!.podAntiAffinity,
        },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule' }],
        initContainers: [
          {
            name: 'migrate',
            image: 'registry.example/web:1.2.0',
            command: ['migrate'],
            terminationMessagePath: '/dev/termination-log',
            terminationMessagePolicy: 'File',
            imagePullPolicy: 'IfNotPresent',
          },
        ],
        containers: [
          {
            ...proxy.spec!.containers[0],
            volumeMounts: [{ name: 'config', mountPath: '/etc/web' }],
          },
        ],
        volumes: [{ name: 'config', configMap: { name: 'web-config', defaultMode: 420 } }],
      },
    });
    assert.deepEqual(proxy, before, 'the proxy is not mutated');
  });

  it('keeps downward API references for the member kubelet to resolve', () => {
    const env = forgeDelegatePod(hostPod(), ctx).spec!.containers[0].env!;
    assert.deepEqual(
      env.map((e) => e.valueFrom?.fieldRef?.fieldPath),
      ['status.podIP', 'status.hostIP', 'spec.nodeName'],
    );
  });

  it('copies user labels unchanged and lets ours win on our own keys only', () => {
    const proxy = specWith({});
    proxy.metadata!.labels = { 'clusterlet.io/origin': 'spoofed', 'example.com/team': 'x' };
    assert.deepEqual(forgeDelegatePod(proxy, ctx).metadata!.labels, {
      'clusterlet.io/origin': 'host-a',
      'example.com/team': 'x',
      'clusterlet.io/proxy-uid': 'u',
      'clusterlet.io/node': 'clusterlet-eu1',
    });
  });

  it('drops spec fields that bind the pod to the host and keeps the rest', () => {
    const spec = forgedSpec({
      nodeName: 'clusterlet-eu1',
      priority: 1000,
      priorityClassName: 'high',
      preemptionPolicy: 'Never',
      schedulerName: 'virtual-scheduler',
      overhead: { cpu: '250m' },
      readinessGates: [{ conditionType: 'example.com/lb' }],
      ephemeralContainers: [{ name: 'debug', image: 'busybox' }],
      runtimeClassName: 'gvisor',
      activeDeadlineSeconds: 600,
      hostname: 'h',
    });
    assert.deepEqual(spec, {
      containers: [{ name: 'c', image: 'i' }],
      runtimeClassName: 'gvisor',
      activeDeadlineSeconds: 600,
      hostname: 'h',
      automountServiceAccountToken: false,
    });
  });

  const tolerationCases: { name: string; in: V1Toleration[]; out: V1Toleration[] | undefined }[] = [
    {
      name: 'virtual-kubelet toleration in every form',
      in: [
        { key: 'virtual-kubelet.io/provider', operator: 'Exists' },
        { key: 'virtual-kubelet.io/provider', operator: 'Equal', value: 'clusterlet', effect: 'NoSchedule' },
        { key: 'virtual-kubelet.io/provider', value: 'azure' },
      ],
      out: undefined,
    },
    {
      name: 'DefaultTolerationSeconds additions go, user tolerations of the same taints stay',
      in: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
      ],
      out: [
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
      ],
    },
    {
      name: 'tolerate-everything and other user tolerations stay',
      in: [{ operator: 'Exists' }, { key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }],
      out: [{ operator: 'Exists' }, { key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }],
    },
  ];
  for (const c of tolerationCases) {
    it(`tolerations: ${c.name}`, () => {
      assert.deepEqual(forgedSpec({ tolerations: c.in }).tolerations, c.out);
    });
  }

  const selectorCases: { name: string; in: Record<string, string>; out: Record<string, string> | undefined }[] = [
    { name: 'type=virtual-kubelet', in: { type: 'virtual-kubelet' }, out: undefined },
    { name: 'role=agent', in: { 'kubernetes.io/role': 'agent', disk: 'ssd' }, out: { disk: 'ssd' } },
    { name: 'hostname of the virtual node', in: { 'kubernetes.io/hostname': 'clusterlet-eu1' }, out: undefined },
    { name: 'hostname of another node stays', in: { 'kubernetes.io/hostname': 'worker-3' }, out: { 'kubernetes.io/hostname': 'worker-3' } },
    { name: 'member label, any value', in: { 'clusterlet.io/member': 'eu1', 'kubernetes.io/arch': 'arm64' }, out: { 'kubernetes.io/arch': 'arm64' } },
    { name: 'other type value stays', in: { type: 'gpu-box' }, out: { type: 'gpu-box' } },
  ];
  for (const c of selectorCases) {
    it(`nodeSelector: ${c.name}`, () => {
      assert.deepEqual(forgedSpec({ nodeSelector: c.in }).nodeSelector, c.out);
    });
  }

  const zone = { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] };
  const affinityCases: { name: string; in: V1Affinity; out: V1Affinity | undefined }[] = [
    {
      name: 'a required term only on the virtual node removes the affinity',
      in: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'type', operator: 'In', values: ['virtual-kubelet'] }] }],
          },
        },
      },
      out: undefined,
    },
    {
      name: 'virtual-node expressions and fields go, the rest of the term stays',
      in: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  { key: 'kubernetes.io/hostname', operator: 'In', values: ['clusterlet-eu1', 'worker-1'] },
                  { key: 'clusterlet.io/member', operator: 'Exists' },
                  zone,
                ],
                matchFields: [{ key: 'metadata.name', operator: 'In', values: ['clusterlet-eu1'] }],
              },
            ],
          },
        },
      },
      out: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [zone] }] } } },
    },
    {
      name: 'a term the virtual node does not satisfy is left alone',
      in: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['worker-1'] }] },
              { matchExpressions: [zone, { key: 'type', operator: 'In', values: ['virtual-kubelet'] }] },
            ],
          },
        },
      },
      out: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['worker-1'] }] },
              { matchExpressions: [zone] },
            ],
          },
        },
      },
    },
    {
      name: 'terms are ORed: one emptied by stripping admits any member node',
      in: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [zone] },
              { matchExpressions: [{ key: 'type', operator: 'In', values: ['virtual-kubelet'] }] },
            ],
          },
        },
      },
      out: undefined,
    },
    {
      name: 'preferred terms: emptied ones go, others are stripped',
      in: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 10, preference: { matchExpressions: [{ key: 'type', operator: 'Exists' }] } },
            { weight: 5, preference: { matchExpressions: [zone, { key: 'kubernetes.io/role', operator: 'In', values: ['agent'] }] } },
          ],
        },
      },
      out: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, preference: { matchExpressions: [zone] } }] } },
    },
    {
      name: 'pod affinity is kept when the node affinity goes',
      in: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['clusterlet-eu1'] }] }],
          },
        },
        podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname' }] },
      },
      out: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname' }] } },
    },
  ];
  for (const c of affinityCases) {
    it(`affinity: ${c.name}`, () => {
      assert.deepEqual(forgedSpec({ affinity: c.in }).affinity, c.out);
    });
  }

  // The member configured with `labels: { example.com/region: eu, ... }`: the virtual node carries them.
  const labelled: DelegateContext = {
    ...ctx,
    nodeLabels: { 'example.com/region': 'eu', 'example.com/tier': 'burst', type: 'gpu-box', 'topology.kubernetes.io/zone': 'eu-1a' },
  };
  const configuredSelectorCases: { name: string; in: Record<string, string>; out: Record<string, string> | undefined }[] = [
    { name: 'a configured label is dropped', in: { 'example.com/region': 'eu' }, out: undefined },
    { name: 'a configured label goes, the rest stays', in: { 'example.com/region': 'eu', disk: 'ssd' }, out: { disk: 'ssd' } },
    { name: 'a configured key with another value stays', in: { 'example.com/region': 'us' }, out: { 'example.com/region': 'us' } },
    { name: 'a configured value replaces the built-in one', in: { type: 'gpu-box' }, out: undefined },
    { name: 'the replaced built-in value stays', in: { type: 'virtual-kubelet' }, out: { type: 'virtual-kubelet' } },
    { name: 'a configured topology label stays (member nodes carry it)', in: { 'topology.kubernetes.io/zone': 'eu-1a' },
      out: { 'topology.kubernetes.io/zone': 'eu-1a' } },
    { name: 'built-in identity labels still go', in: { 'kubernetes.io/hostname': 'clusterlet-eu1', 'clusterlet.io/member': 'eu1' }, out: undefined },
  ];
  for (const c of configuredSelectorCases) {
    it(`nodeSelector with configured node labels: ${c.name}`, () => {
      assert.deepEqual(forgeDelegatePod(specWith({ nodeSelector: c.in }), labelled).spec!.nodeSelector, c.out);
    });
  }
  it('nodeSelector: a configured label is kept when the context does not know it', () => {
    assert.deepEqual(forgedSpec({ nodeSelector: { 'example.com/region': 'eu' } }).nodeSelector, { 'example.com/region': 'eu' });
  });

  const region = (operator: string, values?: string[]) => ({ key: 'example.com/region', operator, ...(values ? { values } : {}) });
  const required = (...matchExpressions: { key: string; operator: string; values?: string[] }[]): V1Affinity => ({
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions }] } },
  });
  const configuredAffinityCases: { name: string; in: V1Affinity; out: V1Affinity | undefined }[] = [
    { name: 'In with the configured value goes', in: required(region('In', ['eu', 'us'])), out: undefined },
    { name: 'In without the configured value stays', in: required(region('In', ['us'])), out: required(region('In', ['us'])) },
    { name: 'NotIn without the configured value goes', in: required(region('NotIn', ['us'])), out: undefined },
    { name: 'NotIn with the configured value stays', in: required(region('NotIn', ['eu'])), out: required(region('NotIn', ['eu'])) },
    { name: 'Exists goes', in: required(region('Exists')), out: undefined },
    { name: 'DoesNotExist stays', in: required(region('DoesNotExist')), out: required(region('DoesNotExist')) },
    { name: 'a zone term stays, the configured one beside it goes', in: required(zone, region('In', ['eu'])), out: required(zone) },
    {
      name: 'a configured topology label stays', in: required({ key: 'topology.kubernetes.io/zone', operator: 'Exists' }),
      out: required({ key: 'topology.kubernetes.io/zone', operator: 'Exists' }),
    },
    {
      name: 'instance type and GPU terms stay',
      in: required({ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }, { key: 'nvidia.com/gpu.present', operator: 'Exists' }),
      out: required({ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['m5.large'] }, { key: 'nvidia.com/gpu.present', operator: 'Exists' }),
    },
    {
      name: 'preferred terms on configured labels go',
      in: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [region('In', ['eu'])] } }] } },
      out: undefined,
    },
  ];
  for (const c of configuredAffinityCases) {
    it(`affinity with configured node labels: ${c.name}`, () => {
      assert.deepEqual(forgeDelegatePod(specWith({ affinity: c.in }), labelled).spec!.affinity, c.out);
    });
  }

  const legacyToken: V1Volume = { name: 'web-token-x9z8q', secret: { secretName: 'web-token-x9z8q', defaultMode: 420 } };
  const userToken: V1Volume = {
    name: 'vault-token',
    projected: { sources: [{ serviceAccountToken: { audience: 'vault', expirationSeconds: 600, path: 'token' } }] },
  };
  const tokenCases: {
    name: string;
    in: Partial<V1PodSpec>;
    volumes: string[] | undefined;
    automount: boolean | undefined;
  }[] = [
    { name: 'kube-api-access volume removed, automount left unset', in: { volumes: [tokenVolume] }, volumes: undefined, automount: undefined },
    { name: 'explicit automount true kept with the host volume', in: { volumes: [tokenVolume], automountServiceAccountToken: true }, volumes: undefined, automount: true },
    { name: 'legacy <sa>-token secret removed', in: { serviceAccountName: 'web', volumes: [legacyToken] }, volumes: undefined, automount: undefined },
    { name: 'legacy secret of another SA kept', in: { volumes: [legacyToken] }, volumes: ['web-token-x9z8q'], automount: false },
    { name: 'user projected token kept', in: { volumes: [userToken, tokenVolume] }, volumes: ['vault-token'], automount: undefined },
    { name: 'no host volume and automount false', in: { automountServiceAccountToken: false }, volumes: undefined, automount: false },
    { name: 'no host volume (SA disables automount)', in: {}, volumes: undefined, automount: false },
  ];
  for (const c of tokenCases) {
    it(`service account token: ${c.name}`, () => {
      const spec = forgedSpec(c.in);
      assert.deepEqual(spec.volumes?.map((v) => v.name), c.volumes);
      assert.equal(spec.automountServiceAccountToken, c.automount);
    });
  }

  it('removes the token mounts from containers and init containers, and drops ephemeral containers', () => {
    const spec = forgedSpec({
      volumes: [tokenVolume, { name: 'data', emptyDir: {} }],
      initContainers: [{ name: 'init', image: 'i', volumeMounts: [tokenMount] }],
      containers: [{ name: 'c', image: 'i', volumeMounts: [tokenMount, { name: 'data', mountPath: '/data' }] }],
      ephemeralContainers: [{ name: 'dbg', image: 'busybox', volumeMounts: [tokenMount] }],
    });
    assert.deepEqual(spec, {
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [{ name: 'init', image: 'i' }],
      containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    });
  });
});

function delegateWith(spec: Partial<V1PodSpec>, status: V1PodStatus | undefined): V1Pod {
  return { metadata: { name: 'p', namespace: 'team-x', generation: 3 }, spec: { containers: [{ name: 'c', image: 'i' }], ...spec }, status };
}

const runningStatus: V1PodStatus = {
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

describe('forgeProxyStatus', () => {
  it('maps a running delegate: member IPs and containers, virtual node hostIP, member-only fields dropped', () => {
    const status = forgeProxyStatus(delegateWith({ nodeName: 'member-node-1' }, runningStatus), { hostIP: '192.0.2.10' });
    assert.deepEqual(status, {
      phase: 'Running',
      conditions: [
        { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: T0 },
        { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
        { type: 'Ready', status: 'True', lastTransitionTime: T1 },
        { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      ],
      containerStatuses: runningStatus.containerStatuses,
      hostIP: '192.0.2.10',
      hostIPs: [{ ip: '192.0.2.10' }],
      podIP: '10.244.3.9',
      podIPs: [{ ip: '10.244.3.9' }],
      startTime: T0,
      qosClass: 'BestEffort',
    });
  });

  const phaseCases: { name: string; nodeName?: string; status: V1PodStatus | undefined; phase: string }[] = [
    { name: 'no status yet', status: undefined, phase: 'Pending' },
    { name: 'scheduled, no phase yet', nodeName: 'm1', status: {}, phase: 'Pending' },
    { name: 'unschedulable in the member', status: { phase: 'Pending' }, phase: 'Pending' },
    { name: 'claims Running but not scheduled', status: { phase: 'Running' }, phase: 'Pending' },
    { name: 'running', nodeName: 'm1', status: { phase: 'Running' }, phase: 'Running' },
    { name: 'succeeded', nodeName: 'm1', status: { phase: 'Succeeded' }, phase: 'Succeeded' },
    { name: 'failed before being scheduled', status: { phase: 'Failed', reason: 'DeadlineExceeded' }, phase: 'Failed' },
  ];
  for (const c of phaseCases) {
    it(`phase: ${c.name} -> ${c.phase}`, () => {
      const status = forgeProxyStatus(delegateWith({ nodeName: c.nodeName }, c.status), { hostIP: '192.0.2.10' });
      assert.equal(status.phase, c.phase);
      assert.equal(status.hostIP, '192.0.2.10');
    });
  }

  it('reports why the delegate is not scheduled yet', () => {
    const status = forgeProxyStatus(
      delegateWith({}, {
        phase: 'Pending',
        conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }],
        qosClass: 'BestEffort',
      }),
      { hostIP: '192.0.2.10' },
    );
    assert.deepEqual(status, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }],
      hostIP: '192.0.2.10',
      hostIPs: [{ ip: '192.0.2.10' }],
      qosClass: 'BestEffort',
    });
  });

  it('keeps conditions host controllers own and applies the proxy readiness gates to Ready', () => {
    const proxy: V1Pod = {
      spec: { containers: [], readinessGates: [{ conditionType: 'example.com/lb-healthy' }] },
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Ready', status: 'False', lastTransitionTime: T0 },
          { type: 'example.com/lb-healthy', status: 'False', lastTransitionTime: T0 },
          { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', lastTransitionTime: T1 },
        ],
      },
    };
    const delegate = delegateWith(
      { nodeName: 'm1' },
      {
        phase: 'Running',
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        ],
      },
    );
    const status = forgeProxyStatus(delegate, { hostIP: '192.0.2.10', proxy });
    assert.deepEqual(status.conditions, [
      {
        type: 'Ready',
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message: 'the status of pod readiness gates "example.com/lb-healthy" is not "True"',
        lastTransitionTime: T1,
      },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      { type: 'example.com/lb-healthy', status: 'False', lastTransitionTime: T0 },
      { type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI', lastTransitionTime: T1 },
    ]);

    proxy.status!.conditions![2].status = 'True';
    const ready = forgeProxyStatus(delegate, { hostIP: '192.0.2.10', proxy }).conditions!.find((c) => c.type === 'Ready');
    assert.deepEqual(ready, { type: 'Ready', status: 'True', lastTransitionTime: T1 });
  });
  it('drops the proxy\'s kubelet conditions the delegate no longer has (a recreated delegate is not Ready)', () => {
    const proxy: V1Pod = {
      spec: { containers: [] },
      status: {
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Initialized', status: 'True', lastTransitionTime: T0 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'example.com/custom', status: 'True', lastTransitionTime: T0 },
        ],
      },
    };
    const status = forgeProxyStatus(delegateWith({}, undefined), { hostIP: '192.0.2.10', proxy });
    assert.deepEqual(status.conditions, [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
      { type: 'example.com/custom', status: 'True', lastTransitionTime: T0 },
    ]);
  });
});

describe('pendingStatusInformative', () => {
  const scheduled: V1PodStatus = { phase: 'Pending', hostIP: '10.0.0.1', conditions: [{ type: 'PodScheduled', status: 'True' }] };
  const cases: { name: string; desired: V1PodStatus; proxy?: V1PodStatus; want: boolean }[] = [
    { name: 'scheduled in the member, nothing else yet', desired: scheduled, proxy: { phase: 'Pending' }, want: false },
    { name: 'waiting for the member scheduler', desired: { phase: 'Pending', hostIP: '10.0.0.1' }, proxy: undefined, want: false },
    { name: 'a host condition that is not True is not the delegate\'s news',
      desired: { ...scheduled, conditions: [...scheduled.conditions!, { type: 'clusterlet.io/Offloaded', status: 'False' }] }, want: false },
    { name: 'unschedulable in the member', desired: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }] }, want: true },
    { name: 'containers being created', desired: { ...scheduled, containerStatuses: [{ name: 'a', image: 'i', imageID: '', ready: false, restartCount: 0,
      state: { waiting: { reason: 'ContainerCreating' } } }] }, want: true },
    { name: 'init containers reported', desired: { ...scheduled, initContainerStatuses: [{ name: 'i', image: 'i', imageID: '', ready: false, restartCount: 0 }] }, want: true },
    { name: 'a reason', desired: { ...scheduled, reason: 'SchedulingGated' }, want: true },
    { name: 'Running', desired: { ...scheduled, phase: 'Running' }, want: true },
    { name: 'the proxy shows another phase (a recreated delegate)', desired: scheduled, proxy: { phase: 'Running' }, want: true },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.want}`, () => assert.equal(pendingStatusInformative(c.desired, c.proxy), c.want));
  }
});

describe('statusEqual', () => {
  const base: V1PodStatus = {
    phase: 'Running',
    startTime: T0,
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: T1 },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
    ],
    containerStatuses: [
      { name: 'a', image: 'i', imageID: '', ready: true, restartCount: 0 },
      { name: 'b', image: 'i', imageID: '', ready: true, restartCount: 0 },
    ],
  };
  const variant = (patch: Partial<V1PodStatus>): V1PodStatus => ({ ...structuredClone(base), ...patch });
  const asString = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const cases: { name: string; a: V1PodStatus | undefined; b: V1PodStatus | undefined; equal: boolean }[] = [
    { name: 'identical', a: base, b: variant({}), equal: true },
    { name: 'conditions reordered', a: base, b: variant({ conditions: [...base.conditions!].reverse() }), equal: true },
    { name: 'container statuses reordered', a: base, b: variant({ containerStatuses: [...base.containerStatuses!].reverse() }), equal: true },
    {
      name: 'Date vs ISO string',
      a: base,
      b: JSON.parse(JSON.stringify({ ...base, startTime: asString(T0) })) as V1PodStatus,
      equal: true,
    },
    { name: 'sub-second difference', a: base, b: variant({ startTime: new Date(T0.getTime() + 400) }), equal: true },
    { name: 'undefined vs empty array', a: variant({ podIPs: undefined }), b: variant({ podIPs: [] }), equal: true },
    {
      name: 'lastProbeTime null vs undefined',
      a: base,
      b: variant({
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: T1, lastProbeTime: null as unknown as undefined },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
        ],
      }),
      equal: true,
    },
    { name: 'both undefined', a: undefined, b: undefined, equal: true },
    { name: 'undefined vs empty', a: undefined, b: {}, equal: true },
    { name: 'phase differs', a: base, b: variant({ phase: 'Succeeded' }), equal: false },
    { name: 'time differs', a: base, b: variant({ startTime: T1 }), equal: false },
    {
      name: 'condition status differs',
      a: base,
      b: variant({ conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: T1 }, base.conditions![1]] }),
      equal: false,
    },
    { name: 'pod IP order matters', a: variant({ podIPs: [{ ip: 'a' }, { ip: 'b' }] }), b: variant({ podIPs: [{ ip: 'b' }, { ip: 'a' }] }), equal: false },
    { name: 'condition added', a: base, b: variant({ conditions: [...base.conditions!, { type: 'Initialized', status: 'True' }] }), equal: false },
  ];
  for (const c of cases) {
    it(`${c.name} -> ${c.equal}`, () => {
      assert.equal(statusEqual(c.a, c.b), c.equal);
      assert.equal(statusEqual(c.b, c.a), c.equal);
    });
  }
});

describe('delegateUpdate', () => {
  // The delegate as the member API server returns it: our forge output plus defaults and member additions.
  function actualDelegate(): V1Pod {
    const d = forgeDelegatePod(hostPod(), ctx);
    d.metadata!.uid = 'member-uid';
    d.metadata!.resourceVersion = '991';
    d.metadata!.annotations!['cni.projectcalico.org/podIP'] = '10.244.3.9/32';
    d.spec!.nodeName = 'member-node-1';
    d.spec!.schedulerName = 'default-scheduler';
    d.spec!.priority = 0;
    d.spec!.automountServiceAccountToken = undefined;
    d.spec!.volumes!.push({ ...tokenVolume, name: 'kube-api-access-member' });
    d.spec!.tolerations!.push(
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    );
    for (const c of d.spec!.containers) {
      c.terminationMessagePath = '/dev/termination-log';
      c.imagePullPolicy = 'Always';
    }
    return d;
  }

  it('finds nothing to do when only defaulted or member-added fields differ', () => {
    assert.equal(delegateUpdate(hostPod(), actualDelegate(), ctx), undefined);
  });

  const cases: { name: string; change(proxy: V1Pod): void; expect(updated: V1Pod): void }[] = [
    {
      name: 'user label changed',
      change: (p) => (p.metadata!.labels!.app = 'web-v2'),
      expect: (u) => assert.equal(u.metadata!.labels!.app, 'web-v2'),
    },
    {
      name: 'annotation added, member annotations kept',
      change: (p) => (p.metadata!.annotations!['example.com/note'] = 'hi'),
      expect: (u) => {
        assert.equal(u.metadata!.annotations!['example.com/note'], 'hi');
        assert.equal(u.metadata!.annotations!['cni.projectcalico.org/podIP'], '10.244.3.9/32');
      },
    },
    {
      name: 'container image',
      change: (p) => (p.spec!.containers[0].image = 'registry.example/web:1.3.0'),
      expect: (u) => {
        assert.equal(u.spec!.containers[0].image, 'registry.example/web:1.3.0');
        assert.equal(u.spec!.containers[0].imagePullPolicy, 'Always');
      },
    },
    {
      name: 'init container image',
      change: (p) => (p.spec!.initContainers![0].image = 'registry.example/web:1.3.0'),
      expect: (u) => assert.equal(u.spec!.initContainers![0].image, 'registry.example/web:1.3.0'),
    },
    {
      name: 'activeDeadlineSeconds',
      change: (p) => (p.spec!.activeDeadlineSeconds = 120),
      expect: (u) => assert.equal(u.spec!.activeDeadlineSeconds, 120),
    },
    {
      name: 'toleration added',
      change: (p) => p.spec!.tolerations!.push({ key: 'spot', operator: 'Exists' }),
      expect: (u) =>
        assert.deepEqual(u.spec!.tolerations!.map((t) => t.key), [
          'dedicated',
          'node.kubernetes.io/not-ready',
          'node.kubernetes.io/unreachable',
          'spot',
        ]),
    },
  ];
  for (const c of cases) {
    it(`updates on ${c.name}, keeping the rest of the actual delegate`, () => {
      const proxy = hostPod();
      c.change(proxy);
      const actual = actualDelegate();
      const before = structuredClone(actual);
      const updated = delegateUpdate(proxy, actual, ctx);
      assert.ok(updated);
      c.expect(updated);
      assert.equal(updated.metadata!.resourceVersion, '991');
      assert.equal(updated.spec!.nodeName, 'member-node-1');
      assert.deepEqual(actual, before, 'the actual delegate is not mutated');
    });
  }

  it('compares tolerations semantically: an omitted operator is Equal, tolerationSeconds counts', () => {
    const proxy = hostPod();
    proxy.spec!.tolerations![1] = { key: 'dedicated', value: 'batch', effect: 'NoSchedule' };
    assert.equal(delegateUpdate(proxy, actualDelegate(), ctx), undefined);

    proxy.spec!.tolerations!.push({ key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule', tolerationSeconds: 60 });
    const updated = delegateUpdate(proxy, actualDelegate(), ctx);
    assert.deepEqual(updated?.spec!.tolerations!.at(-1), {
      key: 'dedicated', operator: 'Equal', value: 'batch', effect: 'NoSchedule', tolerationSeconds: 60,
    });
  });

  it('with configured node labels, finds nothing to do for a delegate forged with them', () => {
    const labelled: DelegateContext = { ...ctx, nodeLabels: { 'example.com/region': 'eu' } };
    const proxy = hostPod();
    proxy.spec!.nodeSelector = { ...proxy.spec!.nodeSelector, 'example.com/region': 'eu' };
    const actual = forgeDelegatePod(proxy, labelled);
    assert.equal(actual.spec!.nodeSelector!['example.com/region'], undefined);
    assert.equal(delegateUpdate(proxy, actual, labelled), undefined);
  });

  it('ignores changes the API would refuse and a virtual-node toleration', () => {
    const proxy = hostPod();
    proxy.spec!.containers[0].env = [];
    proxy.spec!.tolerations!.push({ key: 'virtual-kubelet.io/provider', operator: 'Equal', value: 'clusterlet' });
    assert.equal(delegateUpdate(proxy, actualDelegate(), ctx), undefined);
  });
});

describe('forgeProxyStatusForLostDelegate', () => {
  it('fails the proxy and terminates the containers that had not finished', () => {
    const now = new Date('2026-03-01T11:00:00.750Z');
    const proxy: V1Pod = {
      spec: {
        initContainers: [{ name: 'init', image: 'i' }],
        containers: [
          { name: 'web', image: 'w' },
          { name: 'never-started', image: 'n' },
        ],
      },
      status: {
        phase: 'Running',
        hostIP: '192.0.2.10',
        podIP: '10.244.3.9',
        qosClass: 'BestEffort',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
          { type: 'Ready', status: 'True', lastTransitionTime: T1 },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: T1 },
        ],
        initContainerStatuses: [
          {
            name: 'init', image: 'i', imageID: 'sha', ready: false, restartCount: 0,
            state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: T0 } },
          },
        ],
        containerStatuses: [
          {
            name: 'web', image: 'w', imageID: 'sha-w', containerID: 'containerd://1', ready: true, started: true, restartCount: 2,
            state: { running: { startedAt: T1 } },
          },
        ],
      },
    };
    const finishedAt = new Date('2026-03-01T11:00:00Z');
    assert.deepEqual(forgeProxyStatusForLostDelegate(proxy, 'DelegateLost', 'deleted in member eu1', now), {
      phase: 'Failed',
      reason: 'DelegateLost',
      message: 'deleted in member eu1',
      hostIP: '192.0.2.10',
      podIP: '10.244.3.9',
      qosClass: 'BestEffort',
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: T0 },
        { type: 'ContainersReady', status: 'False', reason: 'PodCompleted', lastTransitionTime: finishedAt },
        { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: finishedAt },
      ],
      initContainerStatuses: proxy.status!.initContainerStatuses,
      containerStatuses: [
        {
          name: 'web', image: 'w', imageID: 'sha-w', containerID: 'containerd://1', ready: false, started: false, restartCount: 2,
          state: {
            terminated: {
              exitCode: 137, reason: 'DelegateLost', message: 'deleted in member eu1', containerID: 'containerd://1',
              startedAt: T1, finishedAt,
            },
          },
        },
        {
          name: 'never-started', image: 'n', imageID: '', ready: false, started: false, restartCount: 0,
          state: { terminated: { exitCode: 137, reason: 'DelegateLost', message: 'deleted in member eu1', finishedAt } },
        },
      ],
    });
  });
});

describe('predicates', () => {
  const owned = (kind: string, controller?: boolean): V1Pod => ({
    metadata: { ownerReferences: [{ apiVersion: 'apps/v1', kind, name: 'o', uid: 'x', controller }] },
  });
  const cases: [string, boolean, boolean][] = [
    ['DaemonSet', true, true],
    ['DaemonSet', false, false],
    ['ReplicaSet', true, false],
  ];
  for (const [kind, controller, expected] of cases) {
    it(`isDaemonSetPod(${kind}, controller=${controller}) = ${expected}`, () => {
      assert.equal(isDaemonSetPod(owned(kind, controller)), expected);
    });
  }
  it('isDaemonSetPod without owners is false', () => assert.equal(isDaemonSetPod({}), false));

  for (const [phase, expected] of [['Succeeded', true], ['Failed', true], ['Running', false], ['Pending', false], [undefined, false]] as const) {
    it(`isTerminal(${phase}) = ${expected}`, () => assert.equal(isTerminal({ status: { phase } }), expected));
  }
});

describe('proxyStatusPatch', () => {
  const current: V1PodStatus = {
    phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }], hostIP: '192.0.2.1', hostIPs: [{ ip: '192.0.2.1' }],
    startTime: new Date(0), reason: 'Old', containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready: true, restartCount: 0 }],
    conditions: [
      { type: 'Ready', status: 'True' }, { type: 'PodReadyToStartContainers', status: 'True' },
      { type: 'clusterlet.io/Offloaded', status: 'True' }, { type: 'example.com/Gate', status: 'True' },
    ],
  };

  it('replaces podIPs and hostIPs instead of merging a new IP next to the old one', () => {
    const patch = proxyStatusPatch({ phase: 'Running', podIP: '10.0.0.2', podIPs: [{ ip: '10.0.0.2' }], hostIP: '192.0.2.1',
      hostIPs: [{ ip: '192.0.2.1' }] }, current);
    assert.deepEqual(patch.podIPs, [{ $patch: 'replace' }, { ip: '10.0.0.2' }]);
    assert.deepEqual(patch.hostIPs, [{ $patch: 'replace' }, { ip: '192.0.2.1' }]);
    assert.equal(patch.podIP, '10.0.0.2');
  });

  it('clears what the delegate no longer reports, and deletes its conditions, but not the ones it does not own', () => {
    const desired: V1PodStatus = { phase: 'Pending', hostIP: '192.0.2.1', hostIPs: [{ ip: '192.0.2.1' }],
      conditions: [{ type: 'PodScheduled', status: 'False' }, { type: 'example.com/Gate', status: 'True' }] };
    const patch = proxyStatusPatch(desired, current, new Set(['clusterlet.io/Offloaded']));
    assert.deepEqual(
      [patch.podIP, patch.podIPs, patch.startTime, patch.reason, patch.containerStatuses],
      [null, null, null, null, null],
    );
    assert.deepEqual(patch.conditions, [
      { type: 'PodScheduled', status: 'False' }, { type: 'example.com/Gate', status: 'True' },
      { type: 'Ready', $patch: 'delete' }, { type: 'PodReadyToStartContainers', $patch: 'delete' },
    ]);
    assert.equal(patch.phase, 'Pending');
    assert.equal('message' in patch, false, 'nothing to clear');
  });

  it('never writes an owned condition, even one the desired status carries', () => {
    const patch = proxyStatusPatch({ phase: 'Running', conditions: [{ type: 'clusterlet.io/Offloaded', status: 'False' }] },
      { phase: 'Running', conditions: [{ type: 'clusterlet.io/Offloaded', status: 'True' }] }, new Set(['clusterlet.io/Offloaded']));
    assert.equal('conditions' in patch, false);
  });

  it('of an unchanged status, sends the same values (a no-op for the API)', () => {
    const desired: V1PodStatus = { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] };
    const patch = proxyStatusPatch(desired, desired);
    assert.deepEqual(patch, { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] });
  });
});

describe('a lost delegate created again', () => {
  const proxy: V1Pod = {
    metadata: { name: 'web-1', namespace: 'web', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'a' }, { name: 'side', image: 's' }] },
    status: { phase: 'Running', containerStatuses: [
      { name: 'app', image: 'a', imageID: '', ready: true, restartCount: 2 },
    ] },
  };
  it('restartsAfterLoss: what the proxy shows plus one, per container', () => {
    assert.deepEqual(restartsAfterLoss(proxy), { app: 3, side: 1 });
  });
  it('the new delegate carries them and the proxy status adds them to what it reports', () => {
    const d = forgeDelegatePod(proxy, { ...ctx, restarts: { app: 3, side: 1 } });
    assert.equal(d.metadata!.annotations!['clusterlet.io/restarts'], '{"app":3,"side":1}');
    d.status = { phase: 'Running', containerStatuses: [
      { name: 'app', image: 'a', imageID: '', ready: true, restartCount: 0 },
      { name: 'side', image: 's', imageID: '', ready: true, restartCount: 4 },
    ] };
    d.spec!.nodeName = 'm1';
    const s = forgeProxyStatus(d, { hostIP: '10.0.0.1', proxy });
    assert.deepEqual(s.containerStatuses!.map((c) => [c.name, c.restartCount]), [['app', 3], ['side', 5]]);
  });
  it('a first delegate carries no restarts annotation, and a garbled one is ignored', () => {
    assert.equal(forgeDelegatePod(proxy, ctx).metadata!.annotations!['clusterlet.io/restarts'], undefined);
    const d = forgeDelegatePod(proxy, ctx);
    d.metadata!.annotations!['clusterlet.io/restarts'] = '{not json';
    d.spec!.nodeName = 'm1';
    d.status = { phase: 'Running', containerStatuses: [{ name: 'app', image: 'a', imageID: '', ready: true, restartCount: 1 }] };
    assert.equal(forgeProxyStatus(d, { hostIP: '10.0.0.1', proxy }).containerStatuses![0].restartCount, 1);
  });
});

describe('deletionDisruption', () => {
  const cases: [string, V1PodStatus, string | undefined][] = [
    ['pod GC of a lost node', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByPodGC' }] }, 'DeletionByPodGC'],
    ['taint eviction', { phase: 'Running', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager' }] }, 'DeletionByTaintManager'],
    ['the kubelet ended it (stays Failed, not deleted)', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' }] }, undefined],
    ['a condition that is False', { phase: 'Failed', conditions: [{ type: 'DisruptionTarget', status: 'False', reason: 'DeletionByPodGC' }] }, undefined],
    ['no disruption', { phase: 'Failed' }, undefined],
  ];
  for (const [name, status, want] of cases) {
    it(name, () => assert.equal(deletionDisruption({ metadata: {}, status }), want));
  }
});
