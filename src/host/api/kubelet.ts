// Assembles the kubelet API from the process configuration: TLS material, authentication and authorisation,
// usage statistics and the streaming endpoints, around one server for every virtual node.
import type { Config } from '../../config.ts';
import type { ClusterClient } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { Auth, hostReviewClient } from './auth.ts';
import type { NodeDirectory } from './nodes.ts';
import { KubeletServer, type NodeStats, type StreamHandlers } from './server.ts';
import { ClientCA, ServingCertificate } from './tls.ts';
import { RuntimeStats } from './stats.ts';
import { PodStreams } from './streams.ts';

export interface KubeletApi {
  server: KubeletServer;
  serving: ServingCertificate;
  stop(): void;
}

export interface KubeletApiParts {
  stats?: NodeStats;
  streams?: StreamHandlers;
}

export async function startKubeletApi(config: Config, host: ClusterClient, dir: NodeDirectory, log: Logger,
  parts: KubeletApiParts = {}): Promise<KubeletApi> {
  const alog = log.child({ component: 'kubelet-api' });
  const serving = new ServingCertificate({
    mode: config.servingCert, certFile: config.tlsCertFile, keyFile: config.tlsKeyFile,
    nodeNames: config.members.map((m) => m.nodeName), nodeIP: config.nodeIP, host, log: alog,
  });
  await serving.start();
  const webhook = config.authenticationMode === 'webhook';
  if (!webhook) alog.warn('kubelet API: --authentication-mode=none: every caller that reaches the port may read logs and exec into pods');
  const clientCA = webhook ? new ClientCA({ file: config.clientCAFile, host, log: alog }) : undefined;
  // A host that does not answer yet must not hold up the nodes: the CA keeps being read in the background.
  if (clientCA) await Promise.race([clientCA.start(), new Promise((r) => setTimeout(r, 5000).unref())]);
  const server = new KubeletServer({
    ports: [config.kubeletPort, ...config.members.flatMap((m) => m.kubeletPort ?? [])], dir, serving, clientCA, log: alog,
    auth: webhook ? new Auth(hostReviewClient(host), { clientCA }) : undefined,
    stats: parts.stats ?? new RuntimeStats(), streams: parts.streams ?? new PodStreams(alog),
  });
  server.start();
  return {
    server, serving,
    stop() {
      server.stop();
      serving.stop();
      clientCA?.stop();
    },
  };
}
