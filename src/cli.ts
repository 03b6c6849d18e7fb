#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 --heap-growing-percent=10 --no-node-snapshot --expose-gc
// clusterlet's entry point. Exit codes (docs/CONVENTIONS.md): 0 clean stop, 2 bad configuration, 1 anything else.
import type { Server } from 'node:http';
import { config as rxConfig } from 'rxjs';
import { ConfigError, HELP, parseConfig } from './config.ts';
import { errorFields, installCrashHandlers } from './crash.ts';
import { createLogger } from './log.ts';
import { Manager } from './manager.ts';
import { startHealthServer } from './health.ts';
import { startKubeletApi, type KubeletApi } from './host/api/kubelet.ts';
import { VERSION } from './version.ts';
import { HEAP_GROWTH, startHeapGrowth } from './heapgrowth.ts';
import { exposedGc, startIdleCollect, v8Hooks } from './idlecollect.ts';
import { metrics } from './metrics.ts';
import { settle } from './util/settle.ts';

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseConfig(process.argv.slice(2));
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`clusterlet: bad configuration: ${err.message}\n(see clusterlet --help)\n`);
      return 2;
    }
    throw err;
  }
  if (parsed.kind === 'help') { process.stdout.write(HELP); return 0; }
  if (parsed.kind === 'version') { process.stdout.write(`clusterlet ${VERSION}\n`); return 0; }
  const config = parsed.config;
  const log = createLogger(config.logLevel);
  installCrashHandlers({ log });
  rxConfig.onUnhandledError = (err: unknown) => log.error(errorFields(err), 'unhandled stream error');

  let manager: Manager;
  try {
    manager = new Manager(config, log);
  } catch (err) {
    // The message names the kubeconfig (file, Secret or in-cluster) and the field.
    process.stderr.write(`clusterlet: bad configuration: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    await manager.preflight();
  } catch (err) {
    process.stderr.write(`clusterlet: bad configuration: ${(err as Error).message}\n`);
    return 2;
  }
  let api: KubeletApi;
  try {
    api = await startKubeletApi(config, manager.host, manager, log);
    const server = api.server;
    manager.useKubeletPorts({ open: () => server.openPort(), close: (port) => server.closePort(port) });
  } catch (err) {
    process.stderr.write(`clusterlet: bad configuration: kubelet API: ${(err as Error).message}\n`);
    return 2;
  }
  let health: Server | undefined;
  if (config.healthPort > 0) {
    health = await startHealthServer(config.healthPort, [
      { name: 'members', ready: () => manager.ready() },
      { name: 'kubelet-api', ready: () => api.server.listening },
    ]);
  }
  log.info({ version: VERSION, members: config.members.map((m) => m.name), hostName: config.hostName }, 'clusterlet starting');
  // With the flags it is shipped with (src/nodeflags.ts), the old generation's growth scales with it above a knee.
  if (process.execArgv.includes(`--heap-growing-percent=${HEAP_GROWTH.basePercent}`)) {
    startHeapGrowth((percent, used) => log.debug({ percent, heapUsedMB: Math.round(used / 1048576) }, 'old generation growth between full collections'));
  }
  // With --expose-gc (src/nodeflags.ts), one compacting collection each time it goes quiet after its heap grew.
  const gc = exposedGc();
  if (gc) {
    startIdleCollect(v8Hooks(gc), (ms) => {
      metrics.idleCollection.observe(ms / 1000);
      log.debug({ ms: Math.round(ms) }, 'quiet: heap collected and compacted');
    });
  }
  manager.start();

  return new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      log.info({ signal }, 'stopping; virtual nodes stay registered');
      // The members this replica leads are handed over (their Leases written free); a host that does not answer
      // within 3 s gets no hand-over, and the Leases expire instead.
      const handedOver = manager.stop({ handOver: true });
      settle(Promise.race([handedOver, new Promise((r) => setTimeout(r, 3000).unref())]).finally(() => {
        api.stop();
        health?.close();
        resolve(0);
      }), log, 'hand-over failed');
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

main().then((code) => {
  process.exitCode = code;
  // Open sockets (watches being torn down) must not keep a stopping process alive.
  setTimeout(() => process.exit(code), 2000).unref();
}, (err: unknown) => {
  process.stderr.write(`clusterlet: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
