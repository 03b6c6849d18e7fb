import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Affinity, V1ContainerStatus, V1EphemeralContainer, V1Pod, V1PodSpec, V1Toleration, V1Volume } from '@kubernetes/client-node';
import {
  delegateUpdate, ephemeralContainersToAdd, forgeDelegatePod, isDaemonSetPod, isTerminal, type DelegateContext,
} from '../../../src/forge/pod.ts';
import { ctx, forgedSpec, hostPod, specWith, tokenMount, tokenVolume } from './fixtures.ts';

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
    const proxy = specWith({
      volumes: [tokenVolume, { name: 'data', emptyDir: {} }],
      initContainers: [{ name: 'init', image: 'i', volumeMounts: [tokenMount] }],
      containers: [{ name: 'c', image: 'i', volumeMounts: [tokenMount, { name: 'data', mountPath: '/data' }] }],
      ephemeralContainers: [{ name: 'dbg', image: 'busybox', volumeMounts: [tokenMount] }],
    });
    const before = structuredClone(proxy);
    const spec = forgeDelegatePod(proxy, ctx).spec;
    assert.deepEqual(proxy, before, 'the proxy is not mutated');
    assert.deepEqual(spec, {
      volumes: [{ name: 'data', emptyDir: {} }],
      initContainers: [{ name: 'init', image: 'i' }],
      containers: [{ name: 'c', image: 'i', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    });
  });
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

describe('ephemeralContainersToAdd', () => {
  // What `kubectl debug --image=busybox --target=c -it` adds to the proxy (as the API defaults it).
  const debugger0: V1EphemeralContainer = {
    name: 'debugger-abcde', image: 'busybox', targetContainerName: 'c', stdin: true, tty: true,
    terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'Always',
  };
  const debugger1: V1EphemeralContainer = {
    name: 'debugger-fghij', image: 'registry.example/tools:2', command: ['sh'], env: [{ name: 'MODE', value: 'trace' }],
    securityContext: { capabilities: { add: ['SYS_PTRACE'] } },
  };
  const running = (name: string): V1ContainerStatus =>
    ({ name, image: 'busybox', imageID: '', ready: false, restartCount: 0, state: { running: { startedAt: new Date(0) } } });
  const pod = (ephemeralContainers?: V1EphemeralContainer[], statuses?: V1ContainerStatus[], volumes?: V1Volume[]): V1Pod => ({
    ...specWith({ ephemeralContainers, volumes }),
    ...(statuses ? { status: { ephemeralContainerStatuses: statuses } } : {}),
  });

  const cases: { name: string; proxy: V1Pod; delegate: V1Pod; want: V1EphemeralContainer[] }[] = [
    { name: 'none on the proxy', proxy: pod(), delegate: pod(), want: [] },
    { name: 'one added to the proxy: the same container, target included', proxy: pod([debugger0]), delegate: pod(), want: [debugger0] },
    { name: 'already in the delegate', proxy: pod([debugger0]), delegate: pod([debugger0]), want: [] },
    {
      name: 'a second one: only it, the first is never sent again',
      proxy: pod([debugger0, debugger1]), delegate: pod([debugger0]), want: [debugger1],
    },
    {
      name: 'several at once, in the proxy\'s order', proxy: pod([debugger1, debugger0]), delegate: pod(), want: [debugger1, debugger0],
    },
    {
      name: 'one the proxy shows a status of ran in a lost delegate: not restarted in its successor',
      proxy: pod([debugger0, debugger1], [running(debugger0.name)]), delegate: pod(), want: [debugger1],
    },
    {
      name: 'one only the delegate has (added in the member) is no reason for anything',
      proxy: pod(), delegate: pod([debugger1]), want: [],
    },
    {
      name: 'the host\'s token mount is removed, as from the pod\'s containers',
      proxy: pod([{ ...debugger1, volumeMounts: [tokenMount, { name: 'data', mountPath: '/data' }] }], undefined,
        [tokenVolume, { name: 'data', emptyDir: {} }]),
      delegate: pod(),
      want: [{ ...debugger1, volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const before = structuredClone(c.proxy);
      assert.deepEqual(ephemeralContainersToAdd(c.proxy, c.delegate, ctx), c.want);
      assert.deepEqual(c.proxy, before, 'the proxy is not mutated');
    });
  }

  it('a delegate forged for a proxy with ephemeral containers has none, and then lacks them all', () => {
    const proxy = pod([debugger0]);
    const created = forgeDelegatePod(proxy, ctx);
    assert.equal(created.spec!.ephemeralContainers, undefined, 'the API refuses them on create');
    assert.deepEqual(ephemeralContainersToAdd(proxy, created, ctx), [debugger0]);
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

describe('forgeDelegatePod and delegateUpdate for a virtual node of a group of the member\'s nodes', () => {
  const POOL = 'example.com/pool';
  const VN = 'clusterlet-eu1-gpu';
  const poolReq = { key: POOL, operator: 'In', values: ['gpu'] };
  const pooled: DelegateContext = { ...ctx, virtualNode: { name: VN, constraint: { matchExpression: poolReq } } };
  const onNode: DelegateContext = {
    ...ctx, virtualNode: { name: 'clusterlet-eu1-w1', constraint: { matchField: { key: 'metadata.name', operator: 'In', values: ['w1'] } } },
  };
  /** A proxy bound to the pool's virtual node, chosen by its hostname and the pool label. */
  const boundToPool = (): V1Pod => {
    const p = hostPod();
    p.spec!.nodeName = VN;
    p.spec!.nodeSelector = { 'kubernetes.io/hostname': VN, [POOL]: 'gpu' };
    p.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0].matchExpressions![0].values = [VN];
    return p;
  };
  const terms = (pod: V1Pod) => pod.spec!.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;

  it('labels the delegate with its virtual node when that is not the member\'s own node; clusterlet.io/node stays the member\'s', () => {
    const labels = forgeDelegatePod(boundToPool(), pooled).metadata!.labels!;
    assert.equal(labels['clusterlet.io/virtual-node'], VN);
    assert.equal(labels['clusterlet.io/node'], 'clusterlet-eu1');
  });

  it('no virtual-node label for the member\'s own node, named or not', () => {
    for (const c of [ctx, { ...ctx, virtualNode: { name: ctx.nodeName } }]) {
      const labels = forgeDelegatePod(hostPod(), c).metadata!.labels!;
      assert.equal('clusterlet.io/virtual-node' in labels, false);
      assert.equal(labels['clusterlet.io/node'], 'clusterlet-eu1');
    }
  });

  it('strips the virtual node\'s hostname from the node selector (it chose the virtual node), keeps the pool label', () => {
    assert.deepEqual(forgeDelegatePod(boundToPool(), pooled).spec!.nodeSelector, { [POOL]: 'gpu' });
    assert.deepEqual(forgeDelegatePod(boundToPool(), ctx).spec!.nodeSelector, { 'kubernetes.io/hostname': VN, [POOL]: 'gpu' },
      'the member\'s own node\'s identity does not strip another virtual node\'s hostname');
  });

  it('strips required and preferred terms on the virtual node\'s hostname and name, then constrains the result to the group', () => {
    const proxy = specWith({
      affinity: { nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [
          { key: 'kubernetes.io/hostname', operator: 'In', values: [VN] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] },
        ], matchFields: [{ key: 'metadata.name', operator: 'In', values: [VN] }] }] },
        preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchFields: [{ key: 'metadata.name', operator: 'In', values: [VN] }] } }],
      } },
    });
    assert.deepEqual(forgeDelegatePod(proxy, pooled).spec!.affinity, { nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{
        matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] }, poolReq],
      }] },
    } });
  });

  it('the forged spec carries the group\'s constraint in every required term; the proxy is not changed', () => {
    const proxy = boundToPool();
    const before = structuredClone(proxy);
    const d = forgeDelegatePod(proxy, pooled);
    assert.deepEqual(terms(d), [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['eu-1a'] }, poolReq] }]);
    assert.deepEqual(d.spec!.affinity!.podAntiAffinity, proxy.spec!.affinity!.podAntiAffinity, 'the pod anti-affinity kept');
    assert.deepEqual(proxy, before);
    assert.deepEqual(terms(forgeDelegatePod(specWith({}), onNode)), [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['w1'] }] }]);
    assert.equal(forgeDelegatePod(specWith({}), ctx).spec!.affinity, undefined, 'the whole member: no constraint');
    assert.equal(forgeDelegatePod(specWith({}), { ...ctx, virtualNode: { name: ctx.nodeName } }).spec!.affinity, undefined);
  });

  it('delegateUpdate: nothing to do for a delegate forged for the same virtual node (no churn), constraint given or not', () => {
    const proxy = boundToPool();
    const forged = forgeDelegatePod(proxy, pooled);
    assert.equal(delegateUpdate(proxy, forged, pooled), undefined);
    // The provider's updatePod names the virtual node without its constraint: the affinity is not compared.
    assert.equal(delegateUpdate(proxy, forged, { ...ctx, virtualNode: { name: VN } }), undefined);
    const own = forgeDelegatePod(hostPod(), ctx);
    assert.equal(delegateUpdate(hostPod(), own, { ...ctx, virtualNode: { name: ctx.nodeName } }), undefined);
  });

  it('delegateUpdate: a delegate forged without the label, updated for a group\'s virtual node, gets it', () => {
    const proxy = boundToPool();
    const updated = delegateUpdate(proxy, forgeDelegatePod(proxy, ctx), pooled);
    assert.equal(updated?.metadata?.labels?.['clusterlet.io/virtual-node'], VN);
  });
});
