// The local kubelet: registers a Node and runs the Pods bound to it as local processes.
// Only containers whose image repository ends in `eventdb` run; the image is the repository's build
// (see imageMapping below). Everything else is reported as failed with a clear reason.
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import http from 'node:http';
import https from 'node:https';
import { spawn, type ChildProcess } from 'node:child_process';
import type {
  V1Container,
  V1EnvVar,
  V1Pod,
  V1Probe,
  V1Volume,
  V1ConfigMap,
  V1Secret,
  V1PersistentVolumeClaim,
  V1PersistentVolume,
} from '@kubernetes/client-node';
import { Api, ApiError } from './api.js';
import {
  atomicWrite,
  configMapData,
  fieldRefValue,
  forgetVolume,
  projectKeys,
  secretData,
  type FileEntry,
} from './volumes.js';

export const PROVISIONER = 'eventdb.local/hostpath';
export const STORAGE_CLASS = 'standard';
const HOSTS_BEGIN = '# BEGIN eventdb-local-kubelet';
const HOSTS_END = '# END eventdb-local-kubelet';
const SYNC_MS = 1000;
const MAX_BACKOFF_MS = 300_000;
const BACKOFF_RESET_MS = 600_000;

export interface KubeletOptions {
  api: Api;
  nodeName: string;
  /** Nodes this kubelet registers and serves: nodeName, then nodeName-2 ... nodeName-N (all run pods here). */
  nodeCount: number;
  stateDir: string;
  repo: string;
  /** API server address given to pods as KUBERNETES_SERVICE_HOST/PORT. */
  apiHost: string;
  apiPort: string;
  k8sVersion: string;
  manageEtcHosts: boolean;
  /** Container writable layers (overlay upper/work dirs); must be outside the repository. */
  scratchDir: string;
  /** Serve the kubelet API subset for `kubectl logs` (HTTPS on 127.0.0.1:port); 0 disables it. */
  serverPort: number;
  serverCert?: string;
  serverKey?: string;
  log: (msg: string) => void;
}

/** The eventdb image: its filesystem root for the project is /app (= the repository), its entrypoint runs the node. */
export const IMAGE_WORKDIR = '/app';
export const IMAGE_ENTRYPOINT = ['node', '/app/dist/node/src/main.js'];

export function isEventDbImage(image: string): boolean {
  // the repository is the reference without digest and tag (a ':' after the last '/')
  let ref = image.split('@')[0] ?? image;
  const colon = ref.lastIndexOf(':');
  if (colon > ref.lastIndexOf('/')) ref = ref.slice(0, colon);
  return ref.endsWith('eventdb');
}

type Json = Record<string, unknown>;

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function expandVars(s: string, env: Map<string, string>): string {
  // $(VAR) expansion as Kubernetes does it; $$ escapes.
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    const v = name === undefined ? undefined : env.get(name);
    return v ?? m;
  });
}

interface Terminated {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID: string;
}

interface ProbeState {
  successes: number;
  failures: number;
  timer?: NodeJS.Timeout;
  initial?: NodeJS.Timeout;
  running: boolean;
}

class ContainerRuntime {
  proc?: ChildProcess;
  pid?: number;
  startedAt?: string;
  startedMs = 0;
  restartCount = 0;
  ready = false;
  started = false;
  lastTerminated?: Terminated;
  terminated?: Terminated;
  waiting?: { reason: string; message?: string };
  nextStartMs = 0;
  backoffMs = 0;
  exited?: Promise<void>;
  killing = false;
  env: Record<string, string> = {};
  probes: { readiness: ProbeState; liveness: ProbeState; startup: ProbeState } = {
    readiness: { successes: 0, failures: 0, running: false },
    liveness: { successes: 0, failures: 0, running: false },
    startup: { successes: 0, failures: 0, running: false },
  };

  constructor(
    readonly spec: V1Container,
    readonly isInit = false,
  ) {
    this.waiting = { reason: isInit ? 'PodInitializing' : 'ContainerCreating' };
  }

  get running(): boolean {
    return this.proc !== undefined;
  }
}

class PodWorker {
  readonly uid: string;
  readonly ns: string;
  readonly name: string;
  readonly dir: string;
  containers = new Map<string, ContainerRuntime>();
  inits: ContainerRuntime[] = [];
  phase = 'Pending';
  reason?: string;
  message?: string;
  terminating = false;
  finished = false;
  started = false;
  volumesReady = false;
  startTime = now();
  lastStatusJson = '';
  private tokens = new Map<string, { token: string; refreshAt: number }>();

  constructor(
    readonly k: Kubelet,
    public pod: V1Pod,
    readonly ip: string,
  ) {
    this.uid = pod.metadata?.uid ?? '';
    this.ns = pod.metadata?.namespace ?? 'default';
    this.name = pod.metadata?.name ?? '';
    this.dir = path.join(k.opts.stateDir, 'pods', `${this.ns}_${this.name}_${this.uid}`);
    for (const c of pod.spec?.containers ?? []) this.containers.set(c.name, new ContainerRuntime(c));
    for (const c of pod.spec?.initContainers ?? []) this.inits.push(new ContainerRuntime(c, true));
  }

  log(msg: string): void {
    this.k.opts.log(`pod ${this.ns}/${this.name}: ${msg}`);
  }

  get restartPolicy(): string {
    return this.pod.spec?.restartPolicy ?? 'Always';
  }

  /** Pod-level setup, then containers. Errors leave the pod Pending and are retried on the next sync. */
  async setup(): Promise<void> {
    const unsupported = [...(this.pod.spec?.initContainers ?? []), ...(this.pod.spec?.containers ?? [])].filter(
      (c) => !isEventDbImage(c.image ?? ''),
    );
    if (unsupported.length > 0) {
      this.phase = 'Failed';
      this.reason = 'UnsupportedImage';
      this.message =
        `the local kubelet runs only images whose repository ends in "eventdb"; ` +
        unsupported.map((c) => `container ${c.name} has image ${JSON.stringify(c.image ?? '')}`).join(', ');
      for (const c of this.containers.values()) {
        c.waiting = { reason: 'UnsupportedImage', message: this.message };
      }
      this.finished = true;
      this.log(this.message);
      return;
    }
    fs.mkdirSync(this.dir, { recursive: true });
    await this.syncVolumes();
    this.volumesReady = true;
    this.started = true;
    for (const c of [...this.inits, ...this.containers.values()]) c.nextStartMs = Date.now();
  }

  volumeDir(name: string): string {
    return path.join(this.dir, 'volumes', name);
  }

  /** (Re)writes ConfigMap, Secret, downward API and projected volumes; resolves PVCs. */
  async syncVolumes(): Promise<void> {
    for (const v of this.pod.spec?.volumes ?? []) {
      await this.syncVolume(v);
    }
  }

  private async syncVolume(v: V1Volume): Promise<void> {
    const dir = this.volumeDir(v.name);
    const api = this.k.opts.api;
    if (v.emptyDir) {
      fs.mkdirSync(dir, { recursive: true });
    } else if (v.configMap) {
      const cm = await api.get<V1ConfigMap>(`/api/v1/namespaces/${this.ns}/configmaps/${v.configMap.name ?? ''}`);
      if (!cm && !v.configMap.optional) throw new Error(`configmap ${v.configMap.name ?? ''} not found`);
      atomicWrite(dir, projectKeys(cm ? configMapData(cm) : new Map(), v.configMap.items, v.configMap.defaultMode, !!v.configMap.optional));
    } else if (v.secret) {
      const s = await api.get<V1Secret>(`/api/v1/namespaces/${this.ns}/secrets/${v.secret.secretName ?? ''}`);
      if (!s && !v.secret.optional) throw new Error(`secret ${v.secret.secretName ?? ''} not found`);
      atomicWrite(dir, projectKeys(s ? secretData(s) : new Map(), v.secret.items, v.secret.defaultMode, !!v.secret.optional));
    } else if (v.downwardAPI) {
      const files = new Map<string, FileEntry>();
      for (const item of v.downwardAPI.items ?? []) {
        if (!item.fieldRef) continue;
        files.set(item.path, {
          data: Buffer.from(fieldRefValue(this.pod, item.fieldRef.fieldPath, this.ip)),
          mode: item.mode ?? v.downwardAPI.defaultMode ?? 0o644,
        });
      }
      atomicWrite(dir, files);
    } else if (v.projected) {
      const files = new Map<string, FileEntry>();
      const mode = v.projected.defaultMode ?? 0o644;
      for (const src of v.projected.sources ?? []) {
        if (src.configMap) {
          const cm = await api.get<V1ConfigMap>(`/api/v1/namespaces/${this.ns}/configmaps/${src.configMap.name ?? ''}`);
          if (!cm && !src.configMap.optional) throw new Error(`configmap ${src.configMap.name ?? ''} not found`);
          for (const [p, f] of projectKeys(cm ? configMapData(cm) : new Map(), src.configMap.items, mode, !!src.configMap.optional)) files.set(p, f);
        } else if (src.secret) {
          const s = await api.get<V1Secret>(`/api/v1/namespaces/${this.ns}/secrets/${src.secret.name ?? ''}`);
          if (!s && !src.secret.optional) throw new Error(`secret ${src.secret.name ?? ''} not found`);
          for (const [p, f] of projectKeys(s ? secretData(s) : new Map(), src.secret.items, mode, !!src.secret.optional)) files.set(p, f);
        } else if (src.downwardAPI) {
          for (const item of src.downwardAPI.items ?? []) {
            if (!item.fieldRef) continue;
            files.set(item.path, {
              data: Buffer.from(fieldRefValue(this.pod, item.fieldRef.fieldPath, this.ip)),
              mode: item.mode ?? mode,
            });
          }
        } else if (src.serviceAccountToken) {
          const t = src.serviceAccountToken;
          files.set(t.path, { data: Buffer.from(await this.token(t.audience, t.expirationSeconds ?? 3600)), mode });
        }
      }
      atomicWrite(dir, files);
    } else if (v.persistentVolumeClaim) {
      if (fs.existsSync(path.join(dir, '.bound-path'))) return;
      const claim = v.persistentVolumeClaim.claimName;
      const pvc = await api.get<V1PersistentVolumeClaim>(`/api/v1/namespaces/${this.ns}/persistentvolumeclaims/${claim}`);
      if (!pvc) throw new Error(`persistentvolumeclaim ${claim} not found`);
      const pvName = pvc.spec?.volumeName;
      if (pvc.status?.phase !== 'Bound' || !pvName) throw new Error(`persistentvolumeclaim ${claim} is not bound`);
      const pv = await api.get<V1PersistentVolume>(`/api/v1/persistentvolumes/${pvName}`);
      const p = pv?.spec?.hostPath?.path ?? pv?.spec?.local?.path;
      if (!p) throw new Error(`persistentvolume ${pvName} has no hostPath/local path`);
      fs.mkdirSync(p, { recursive: true });
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, '.bound-path'), p);
    } else if (v.hostPath) {
      if (v.hostPath.type === 'DirectoryOrCreate') fs.mkdirSync(v.hostPath.path, { recursive: true });
    } else {
      throw new Error(`volume ${v.name}: unsupported volume type for the local kubelet`);
    }
  }

  private async token(audience: string | undefined, expirationSeconds: number): Promise<string> {
    const key = `${audience ?? ''}/${expirationSeconds}`;
    const cached = this.tokens.get(key);
    if (cached && cached.refreshAt > Date.now()) return cached.token;
    const sa = this.pod.spec?.serviceAccountName ?? 'default';
    const res = await this.k.opts.api.call<{ status?: { token?: string } }>(
      'POST',
      `/api/v1/namespaces/${this.ns}/serviceaccounts/${sa}/token`,
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: audience ? [audience] : [],
          expirationSeconds,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: this.name, uid: this.uid },
        },
      },
    );
    const token = res.body?.status?.token ?? '';
    this.tokens.set(key, { token, refreshAt: Date.now() + expirationSeconds * 500 });
    return token;
  }

  /** The host path that backs a volume. */
  volumeSource(name: string): string {
    const v = (this.pod.spec?.volumes ?? []).find((x) => x.name === name);
    if (!v) throw new Error(`volume ${name} not found in pod spec`);
    if (v.hostPath) return v.hostPath.path;
    if (v.persistentVolumeClaim) return fs.readFileSync(path.join(this.volumeDir(name), '.bound-path'), 'utf8');
    return this.volumeDir(name);
  }

  async buildEnv(c: V1Container): Promise<Map<string, string>> {
    const api = this.k.opts.api;
    const env = new Map<string, string>();
    env.set('PATH', process.env['PATH'] ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
    env.set('HOME', '/root');
    env.set('HOSTNAME', this.pod.spec?.hostname ?? this.name);
    env.set('KUBERNETES_SERVICE_HOST', this.k.opts.apiHost);
    env.set('KUBERNETES_SERVICE_PORT', this.k.opts.apiPort);
    env.set('KUBERNETES_SERVICE_PORT_HTTPS', this.k.opts.apiPort);
    for (const from of c.envFrom ?? []) {
      const prefix = from.prefix ?? '';
      if (from.configMapRef) {
        const cm = await api.get<V1ConfigMap>(`/api/v1/namespaces/${this.ns}/configmaps/${from.configMapRef.name ?? ''}`);
        if (!cm && !from.configMapRef.optional) throw new Error(`configmap ${from.configMapRef.name ?? ''} not found`);
        for (const [k, v] of Object.entries(cm?.data ?? {})) env.set(prefix + k, v);
      } else if (from.secretRef) {
        const s = await api.get<V1Secret>(`/api/v1/namespaces/${this.ns}/secrets/${from.secretRef.name ?? ''}`);
        if (!s && !from.secretRef.optional) throw new Error(`secret ${from.secretRef.name ?? ''} not found`);
        for (const [k, v] of secretData(s ?? {})) env.set(prefix + k, v.toString('utf8'));
      }
    }
    for (const e of c.env ?? []) {
      env.set(e.name, await this.envValue(e, env));
    }
    // Not part of the product's contract: lets the DNS preload resolve namespace-relative names and
    // lets `cluster.sh down` recognise processes it must clean up.
    env.set('EVENTDB_K8S_POD_NAMESPACE', this.ns);
    env.set('EVENTDB_K8S_HOSTS_FILE', this.k.hostsFile);
    env.set('EVENTDB_K8S_STATE', path.dirname(this.k.opts.stateDir));
    if (process.env['EVENTDB_K8S_EXTERNAL_DNS'] === '1') env.set('EVENTDB_K8S_EXTERNAL_DNS', '1');
    // the preload as the container sees it (/app is the repository); host paths may be hidden by mounts
    const preload = `--require=${IMAGE_WORKDIR}/test/k8s/kubelet/dns-preload.cjs`;
    env.set('NODE_OPTIONS', [env.get('NODE_OPTIONS'), preload].filter(Boolean).join(' '));
    return env;
  }

  private async envValue(e: V1EnvVar, env: Map<string, string>): Promise<string> {
    const api = this.k.opts.api;
    if (e.value !== undefined) return expandVars(e.value, env);
    const src = e.valueFrom;
    if (!src) return '';
    if (src.fieldRef) return fieldRefValue(this.pod, src.fieldRef.fieldPath, this.ip);
    if (src.configMapKeyRef) {
      const r = src.configMapKeyRef;
      const cm = await api.get<V1ConfigMap>(`/api/v1/namespaces/${this.ns}/configmaps/${r.name ?? ''}`);
      const v = cm?.data?.[r.key];
      if (v === undefined && !r.optional) throw new Error(`configmap ${r.name ?? ''} key ${r.key} not found`);
      return v ?? '';
    }
    if (src.secretKeyRef) {
      const r = src.secretKeyRef;
      const s = await api.get<V1Secret>(`/api/v1/namespaces/${this.ns}/secrets/${r.name ?? ''}`);
      const v = s ? secretData(s).get(r.key) : undefined;
      if (v === undefined && !r.optional) throw new Error(`secret ${r.name ?? ''} key ${r.key} not found`);
      return v?.toString('utf8') ?? '';
    }
    if (src.resourceFieldRef) return '0';
    return '';
  }

  /** Starts one container process (inside a private mount namespace when it has volume mounts). */
  async startContainer(c: ContainerRuntime): Promise<void> {
    const spec = c.spec;
    const env = await this.buildEnv(spec);
    const entry = spec.command && spec.command.length > 0 ? spec.command : IMAGE_ENTRYPOINT;
    const args = spec.command && spec.command.length > 0 ? (spec.args ?? []) : (spec.args ?? []);
    const argv = [...entry, ...args].map((a) => expandVars(a, env));
    if (argv[0] === 'node') argv[0] = process.execPath;
    const cwd = spec.workingDir ?? IMAGE_WORKDIR; // a path in the container's view
    const mounts = [...(spec.volumeMounts ?? [])].sort((a, b) => a.mountPath.length - b.mountPath.length);
    const lines = ['#!/bin/sh', 'set -e', `hostname ${shq(this.pod.spec?.hostname ?? this.name)}`];
    const created: string[] = [];
    const repo = this.k.opts.repo;
    // mount points are created on the host when missing (recorded; removed when the kubelet stops)
    const ensureHostPath = (target: string, isDir: boolean): void => {
      const parts = path.resolve(target).split('/').filter(Boolean);
      let cur = '';
      for (let i = 0; i < parts.length; i++) {
        cur += `/${parts[i] ?? ''}`;
        if (fs.existsSync(cur)) continue;
        if (i === parts.length - 1 && !isDir) fs.writeFileSync(cur, '');
        else fs.mkdirSync(cur);
        created.push(cur);
      }
    };
    // The image's filesystem: /app is the repository seen through an overlay whose upper layer is private
    // to this container run, so files the process writes (e.g. a relative data directory) never land in
    // the repository and go away with the container, as with a real container runtime.
    const layer = path.join(this.k.scratchDir, `${this.uid}_${spec.name}`);
    fs.rmSync(layer, { recursive: true, force: true });
    fs.mkdirSync(path.join(layer, 'upper'), { recursive: true });
    fs.mkdirSync(path.join(layer, 'work'), { recursive: true });
    fs.mkdirSync(path.join(layer, 'stage'), { recursive: true });
    ensureHostPath(IMAGE_WORKDIR, true);
    // Volume sources are first bind-mounted into a staging directory, so that a mountPath which hides a
    // host directory (e.g. /work when the repository is /work/main) cannot hide the sources of later mounts.
    const stage = path.join(layer, 'stage');
    const plan: Array<{ staged: string; target: string; isDir: boolean; readOnly: boolean }> = [];
    mounts.forEach((m, i) => {
      let src = this.volumeSource(m.name);
      if (m.subPath) src = path.join(src, m.subPath);
      if (m.subPath && !fs.existsSync(src)) fs.mkdirSync(src, { recursive: true });
      const isDir = !fs.existsSync(src) || fs.statSync(src).isDirectory();
      const staged = path.join(stage, String(i));
      if (isDir) fs.mkdirSync(staged);
      else fs.writeFileSync(staged, '');
      lines.push(`mount --bind ${shq(src)} ${shq(staged)}`);
      plan.push({ staged, target: path.resolve(m.mountPath), isDir, readOnly: !!m.readOnly });
    });
    lines.push(
      `mount -t overlay overlay -o ${shq(`lowerdir=${repo},upperdir=${layer}/upper,workdir=${layer}/work`)} ${IMAGE_WORKDIR}`,
    );
    // targets that would hide the staging directory go last
    const hidesStage = (t: string): boolean => stage.startsWith(`${t}/`);
    plan.sort((x, y) => Number(hidesStage(x.target)) - Number(hidesStage(y.target)));
    const mounted: string[] = [IMAGE_WORKDIR];
    for (const m of plan) {
      const nested = mounted.some((p) => m.target.startsWith(`${p}/`));
      if (!nested) ensureHostPath(m.target, m.isDir);
      else lines.push(m.isDir ? `mkdir -p ${shq(m.target)}` : `mkdir -p ${shq(path.dirname(m.target))}; touch ${shq(m.target)}`);
      lines.push(`mount --bind ${shq(m.staged)} ${shq(m.target)}`);
      if (m.readOnly) lines.push(`mount -o remount,bind,ro ${shq(m.target)}`);
      mounted.push(m.target);
    }
    if (created.length > 0) this.k.recordCreated(created);
    lines.push(`cd ${shq(cwd)}`);
    lines.push(`exec ${argv.map(shq).join(' ')}`);
    const script = path.join(this.dir, `${spec.name}.sh`);
    fs.writeFileSync(script, `${lines.join('\n')}\n`, { mode: 0o700 });
    const logFile = path.join(this.dir, `${spec.name}.log`);
    const fd = fs.openSync(logFile, 'a');
    // private mount namespace (volume mounts) and UTS namespace (the pod's hostname)
    const cmd = 'unshare';
    const cmdArgs = ['--mount', '--uts', '--propagation', 'private', '/bin/sh', script];
    const proc = spawn(cmd, cmdArgs, {
      cwd: fs.existsSync(cwd) ? cwd : this.k.opts.repo,
      env: Object.fromEntries(env),
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    fs.closeSync(fd);
    const startedAt = now();
    c.proc = proc;
    c.pid = proc.pid;
    c.env = Object.fromEntries(env);
    c.startedAt = startedAt;
    c.startedMs = Date.now();
    c.waiting = undefined;
    c.terminated = undefined;
    c.ready = false;
    c.started = !spec.startupProbe;
    c.killing = false;
    if (proc.pid) fs.writeFileSync(path.join(this.dir, `${spec.name}.pid`), String(proc.pid));
    this.log(`started ${c.isInit ? 'init ' : ''}container ${spec.name} pid ${proc.pid ?? '?'}: ${argv.join(' ')}`);
    c.exited = new Promise<void>((resolve) => {
      proc.on('error', (err) => {
        this.log(`container ${spec.name}: spawn error ${err.message}`);
      });
      proc.on('exit', (code, signal) => {
        const finishedAt = now();
        const exitCode = code ?? 128 + (signal ? (osSignals[signal] ?? 9) : 9);
        const t: Terminated = {
          exitCode,
          reason: exitCode === 0 ? 'Completed' : c.killing && signal ? 'Killed' : 'Error',
          startedAt,
          finishedAt,
          containerID: `eventdb-local://${proc.pid ?? 0}`,
          ...(signal ? { signal: osSignals[signal] ?? 9 } : {}),
        };
        this.log(`container ${spec.name} exited code=${String(code)} signal=${String(signal)}`);
        this.stopProbes(c);
        c.proc = undefined;
        c.pid = undefined;
        c.ready = false;
        c.started = false;
        fs.rmSync(path.join(this.dir, `${spec.name}.pid`), { force: true });
        const restart =
          !this.terminating &&
          (c.isInit
            ? exitCode !== 0 && this.restartPolicy !== 'Never'
            : this.restartPolicy === 'Always' || (this.restartPolicy === 'OnFailure' && exitCode !== 0));
        if (restart) {
          c.lastTerminated = t;
          if (Date.now() - c.startedMs > BACKOFF_RESET_MS) c.backoffMs = 0;
          const delay = c.backoffMs;
          c.backoffMs = c.backoffMs === 0 ? 10_000 : Math.min(c.backoffMs * 2, MAX_BACKOFF_MS);
          c.nextStartMs = Date.now() + delay;
          c.restartCount++;
          c.waiting = delay > 0 ? { reason: 'CrashLoopBackOff', message: `back-off ${delay / 1000}s restarting failed container=${spec.name} pod=${this.name}` } : { reason: 'ContainerCreating' };
        } else {
          c.terminated = t;
        }
        resolve();
      });
    });
    if (!c.isInit) this.startProbes(c);
  }

  private startProbes(c: ContainerRuntime): void {
    const spec = c.spec;
    const run = (kind: 'readiness' | 'liveness' | 'startup', probe: V1Probe | undefined): void => {
      const st = c.probes[kind];
      st.successes = 0;
      st.failures = 0;
      if (!probe) return;
      const period = Math.max(1, probe.periodSeconds ?? 10) * 1000;
      const tick = async (): Promise<void> => {
        if (st.running || !c.proc) return;
        if (kind !== 'startup' && !c.started) return;
        if (kind === 'startup' && c.started) return;
        st.running = true;
        let ok = false;
        try {
          ok = await this.probe(c, probe);
        } catch {
          ok = false;
        } finally {
          st.running = false;
        }
        if (!c.proc) return;
        if (ok) {
          st.successes++;
          st.failures = 0;
        } else {
          st.failures++;
          st.successes = 0;
        }
        const successThreshold = probe.successThreshold ?? 1;
        const failureThreshold = probe.failureThreshold ?? 3;
        if (kind === 'readiness') {
          if (ok && st.successes >= successThreshold) c.ready = true;
          if (!ok && st.failures >= failureThreshold) c.ready = false;
        } else if (kind === 'startup') {
          if (ok) c.started = true;
          else if (st.failures >= failureThreshold) {
            this.log(`container ${spec.name} failed its startup probe; killing`);
            void this.killContainer(c, this.graceSeconds());
          }
        } else if (!ok && st.failures >= failureThreshold) {
          this.log(`container ${spec.name} failed its liveness probe; killing`);
          st.failures = 0;
          void this.killContainer(c, probe.terminationGracePeriodSeconds ?? this.graceSeconds());
        }
      };
      st.initial = setTimeout(() => {
        void tick();
        st.timer = setInterval(() => void tick(), period);
      }, (probe.initialDelaySeconds ?? 0) * 1000);
    };
    run('startup', spec.startupProbe);
    run('readiness', spec.readinessProbe);
    run('liveness', spec.livenessProbe);
    if (!spec.readinessProbe) {
      // no readiness probe: ready once started
      const tick = setInterval(() => {
        if (!c.proc) clearInterval(tick);
        else if (c.started) {
          c.ready = true;
          clearInterval(tick);
        }
      }, 200);
      c.probes.readiness.timer = tick;
    }
  }

  private stopProbes(c: ContainerRuntime): void {
    for (const st of Object.values(c.probes)) {
      if (st.initial) clearTimeout(st.initial);
      if (st.timer) clearInterval(st.timer);
      st.initial = undefined;
      st.timer = undefined;
    }
  }

  private resolvePort(spec: V1Container, port: number | string): number {
    if (typeof port === 'number') return port;
    if (/^\d+$/.test(port)) return Number(port);
    const p = (spec.ports ?? []).find((x) => x.name === port);
    if (!p) throw new Error(`named port ${port} not found`);
    return p.containerPort;
  }

  private async probe(c: ContainerRuntime, probe: V1Probe): Promise<boolean> {
    const spec = c.spec;
    const timeoutMs = Math.max(1, probe.timeoutSeconds ?? 1) * 1000;
    if (probe.httpGet) {
      const g = probe.httpGet;
      const port = this.resolvePort(spec, g.port);
      const host = g.host ?? this.ip;
      const mod = (g.scheme ?? 'HTTP').toUpperCase() === 'HTTPS' ? https : http;
      const headers: Record<string, string> = { 'User-Agent': 'kube-probe/local' };
      for (const h of g.httpHeaders ?? []) headers[h.name] = h.value;
      return await new Promise<boolean>((resolve) => {
        const req = mod.request(
          { host, port, path: g.path ?? '/', method: 'GET', headers, rejectUnauthorized: false, timeout: timeoutMs },
          (res) => {
            res.resume();
            const code = res.statusCode ?? 0;
            resolve(code >= 200 && code < 400);
          },
        );
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', () => resolve(false));
        req.end();
      });
    }
    if (probe.tcpSocket) {
      const port = this.resolvePort(spec, probe.tcpSocket.port);
      const host = probe.tcpSocket.host ?? this.ip;
      return await new Promise<boolean>((resolve) => {
        const s = net.connect({ host, port });
        const t = setTimeout(() => {
          s.destroy();
          resolve(false);
        }, timeoutMs);
        s.on('connect', () => {
          clearTimeout(t);
          s.destroy();
          resolve(true);
        });
        s.on('error', () => {
          clearTimeout(t);
          resolve(false);
        });
      });
    }
    if (probe.exec?.command && probe.exec.command.length > 0 && c.pid) {
      // inside the container's mount and UTS namespaces, with its environment
      const cmd = probe.exec.command.map((a, i) => (i === 0 && a === 'node' ? process.execPath : a));
      return await new Promise<boolean>((resolve) => {
        const child = spawn('nsenter', ['--target', String(c.pid), '--mount', '--uts', '--', '/bin/sh', '-c', `cd ${shq(c.spec.workingDir ?? IMAGE_WORKDIR)} && exec "$@"`, 'probe', ...cmd], {
          env: c.env,
          stdio: 'ignore',
        });
        const t = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(false);
        }, timeoutMs);
        child.on('error', () => {
          clearTimeout(t);
          resolve(false);
        });
        child.on('exit', (code) => {
          clearTimeout(t);
          resolve(code === 0);
        });
      });
    }
    return true;
  }

  isReady(): boolean {
    const all = [...this.containers.values()];
    return all.length > 0 && all.every((c) => c.ready && !!c.proc);
  }

  graceSeconds(): number {
    const d = this.pod.metadata?.deletionGracePeriodSeconds;
    if (typeof d === 'number') return d;
    return this.pod.spec?.terminationGracePeriodSeconds ?? 30;
  }

  /** SIGTERM to the container's process group, wait up to `grace` seconds, then SIGKILL; resolves when it exited. */
  async killContainer(c: ContainerRuntime, grace: number): Promise<void> {
    const proc = c.proc;
    const pid = c.pid;
    if (!proc || !pid) return;
    c.killing = true;
    const exited = c.exited ?? Promise.resolve();
    const deadline = Date.now() + grace * 1000;
    const preStop = c.isInit ? undefined : c.spec.lifecycle?.preStop;
    if (preStop) {
      // the preStop hook runs first, within the grace period
      const hook = preStop.sleep
        ? sleep(preStop.sleep.seconds * 1000)
        : this.probe(c, {
            exec: preStop.exec,
            httpGet: preStop.httpGet,
            tcpSocket: preStop.tcpSocket,
            timeoutSeconds: Math.max(1, grace),
          } as V1Probe).catch(() => false);
      await Promise.race([hook, exited, sleep(Math.max(0, deadline - Date.now()))]);
    }
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      try {
        proc.kill('SIGTERM');
      } catch {
        /* already gone */
      }
    }
    const done = await Promise.race([exited.then(() => true), sleep(Math.max(0, deadline - Date.now())).then(() => false)]);
    if (!done) {
      this.log(`container ${c.spec.name} did not stop within ${grace}s; SIGKILL`);
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      await Promise.race([exited, sleep(10_000)]);
    }
    // anything left in the process group goes too
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }

  /** Called every sync: (re)start containers that are due, update phase for finished pods. */
  async tick(): Promise<void> {
    if (!this.started || this.terminating || this.finished) return;
    // init containers run one after the other, each to successful completion, before the others start
    for (const ic of this.inits) {
      if (ic.terminated?.exitCode === 0) continue;
      if (ic.terminated) {
        this.phase = 'Failed';
        this.finished = true;
        return;
      }
      if (!ic.proc && Date.now() >= ic.nextStartMs) {
        try {
          await this.startContainer(ic);
        } catch (err) {
          ic.waiting = { reason: 'CreateContainerError', message: (err as Error).message };
          ic.nextStartMs = Date.now() + 5000;
        }
      }
      return;
    }
    this.phase = 'Running';
    for (const c of this.containers.values()) {
      if (!c.proc && !c.terminated && Date.now() >= c.nextStartMs) {
        try {
          await this.startContainer(c);
        } catch (err) {
          c.waiting = { reason: 'CreateContainerError', message: (err as Error).message };
          c.nextStartMs = Date.now() + 5000;
          this.log(`container ${c.spec.name}: ${(err as Error).message}`);
        }
      }
    }
    const all = [...this.containers.values()];
    if (all.length > 0 && all.every((c) => c.terminated)) {
      this.phase = all.every((c) => c.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
      this.finished = true;
    }
  }

  async terminate(grace: number): Promise<void> {
    this.terminating = true;
    await Promise.all([...this.inits, ...this.containers.values()].map((c) => this.killContainer(c, grace)));
    for (const c of this.containers.values()) this.stopProbes(c);
  }

  cleanup(): void {
    for (const v of this.pod.spec?.volumes ?? []) forgetVolume(this.volumeDir(v.name));
    for (const c of [...this.inits, ...this.containers.values()]) {
      fs.rmSync(path.join(this.k.scratchDir, `${this.uid}_${c.spec.name}`), { recursive: true, force: true });
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  status(): Json {
    const toStatus = (c: ContainerRuntime): Json => {
      let state: Json;
      if (c.proc && c.startedAt) state = { running: { startedAt: c.startedAt } };
      else if (c.terminated) state = { terminated: c.terminated };
      else state = { waiting: c.waiting ?? { reason: 'ContainerCreating' } };
      const s: Json = {
        name: c.spec.name,
        image: c.spec.image ?? '',
        imageID: `eventdb-local://${c.spec.image ?? ''}`,
        ready: c.ready && !!c.proc,
        started: c.started && !!c.proc,
        restartCount: c.restartCount,
        state,
      };
      if (c.pid) s['containerID'] = `eventdb-local://${c.pid}`;
      if (c.lastTerminated) s['lastState'] = { terminated: c.lastTerminated };
      if (c.isInit) s['ready'] = c.terminated?.exitCode === 0;
      return s;
    };
    const containerStatuses = [...this.containers.values()].map(toStatus);
    const initialized = this.inits.every((c) => c.terminated?.exitCode === 0);
    const allReady = containerStatuses.length > 0 && containerStatuses.every((s) => s['ready'] === true);
    const t = now();
    const cond = (type: string, ok: boolean, reason?: string): Json => ({
      type,
      status: ok ? 'True' : 'False',
      lastTransitionTime: t,
      ...(reason && !ok ? { reason } : {}),
    });
    const st: Json = {
      phase: this.phase,
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      startTime: this.startTime,
      qosClass: 'BestEffort',
      conditions: [
        cond('PodReadyToStartContainers', this.volumesReady),
        cond('Initialized', initialized, 'ContainersNotInitialized'),
        cond('Ready', allReady && this.phase === 'Running', 'ContainersNotReady'),
        cond('ContainersReady', allReady, 'ContainersNotReady'),
        cond('PodScheduled', true),
      ],
      containerStatuses,
      ...(this.inits.length > 0 ? { initContainerStatuses: this.inits.map(toStatus) } : {}),
    };
    if (this.started) {
      st['podIP'] = this.ip;
      st['podIPs'] = [{ ip: this.ip }];
    }
    if (this.reason) st['reason'] = this.reason;
    if (this.message) st['message'] = this.message;
    return st;
  }
}

const osSignals: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15, SIGABRT: 6, SIGSEGV: 11 };

export class Kubelet {
  private workers = new Map<string, PodWorker>();
  private usedIPs = new Set<string>();
  private stopped = false;
  private loopDone?: Promise<void>;
  private lastHosts = '';
  private services: Array<{ ns: string; name: string; selector: Record<string, string>; publishNotReady: boolean; headless: boolean }> = [];
  private syncCount = 0;
  readonly hostsFile: string;

  readonly scratchDir: string;
  readonly nodeNames: string[];

  constructor(readonly opts: KubeletOptions) {
    this.nodeNames = [opts.nodeName];
    for (let i = 2; i <= Math.max(1, Math.min(opts.nodeCount, 16)); i++) this.nodeNames.push(`${opts.nodeName}-${i}`);
    // pods read their DNS records from /etc/hosts (the kubelet's own copy only when it may not write
    // /etc/hosts); both live outside the repository, which pods see through an overlay
    this.hostsFile = opts.manageEtcHosts ? '/etc/hosts' : path.join(opts.stateDir, 'hosts');
    this.scratchDir = opts.scratchDir;
  }

  private log(msg: string): void {
    this.opts.log(msg);
  }

  /** Mount points created on the host for pods. They are shared by pods and removed (if empty) only
   * when the kubelet stops: removing a directory that is a mount point in another pod's namespace
   * would detach that pod's mount. */
  recordCreated(paths: string[]): void {
    fs.appendFileSync(path.join(this.opts.stateDir, 'created-dirs'), paths.map((d) => `${d}\n`).join(''));
  }

  private removeCreated(): void {
    const f = path.join(this.opts.stateDir, 'created-dirs');
    let paths: string[] = [];
    try {
      paths = fs.readFileSync(f, 'utf8').split('\n').filter(Boolean);
    } catch {
      return;
    }
    for (const d of paths.sort().reverse()) {
      try {
        const st = fs.statSync(d);
        if (st.isDirectory()) fs.rmdirSync(d);
        else if (st.size === 0) fs.rmSync(d);
      } catch {
        /* not empty or gone: leave it */
      }
    }
    fs.rmSync(f, { force: true });
  }

  private server?: https.Server;

  /** `kubectl logs` support: GET /containerLogs/<ns>/<pod>/<container>?follow&tailLines. */
  private async startServer(): Promise<void> {
    const { serverPort, serverCert, serverKey } = this.opts;
    if (!serverPort || !serverCert || !serverKey) return;
    const server = https.createServer({ cert: fs.readFileSync(serverCert), key: fs.readFileSync(serverKey) }, (req, res) => {
      const url = new URL(req.url ?? '/', 'https://kubelet');
      const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      if (req.method !== 'GET' || !m) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('the local kubelet serves only /containerLogs\n');
        return;
      }
      const [, ns, pod, container] = m;
      const w = [...this.workers.values()].find((x) => x.ns === ns && x.name === pod);
      const file = w ? path.join(w.dir, `${container ?? ''}.log`) : '';
      if (!w || !fs.existsSync(file)) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end(`no log for ${ns ?? ''}/${pod ?? ''}/${container ?? ''}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      let text = fs.readFileSync(file, 'utf8');
      const tail = url.searchParams.get('tailLines');
      if (tail && /^\d+$/.test(tail)) {
        const lines = text.split('\n');
        if (lines[lines.length - 1] === '') lines.pop();
        text = lines.slice(-Number(tail)).map((l) => `${l}\n`).join('');
      }
      res.write(text);
      if (url.searchParams.get('follow') !== 'true') {
        res.end();
        return;
      }
      let offset = fs.statSync(file).size;
      const timer = setInterval(() => {
        try {
          const size = fs.statSync(file).size;
          if (size > offset) {
            const fd = fs.openSync(file, 'r');
            const buf = Buffer.alloc(size - offset);
            fs.readSync(fd, buf, 0, buf.length, offset);
            fs.closeSync(fd);
            offset = size;
            res.write(buf);
          }
        } catch {
          clearInterval(timer);
          res.end();
        }
      }, 500);
      req.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(serverPort, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }

  async start(): Promise<void> {
    if (!this.server) await this.startServer();
    fs.mkdirSync(path.join(this.opts.stateDir, 'pods'), { recursive: true });
    fs.mkdirSync(path.join(this.opts.stateDir, 'volumes'), { recursive: true });
    if (!this.opts.manageEtcHosts) fs.writeFileSync(this.hostsFile, '');
    fs.mkdirSync(this.scratchDir, { recursive: true });
    await this.registerNode();
    await this.ensureStorageClass();
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loopDone;
    await Promise.all(
      [...this.workers.values()].map(async (w) => {
        await w.terminate(Math.min(w.graceSeconds(), 10));
        w.cleanup();
      }),
    );
    this.workers.clear();
    this.server?.close();
    this.server?.closeAllConnections();
    this.writeHosts(true);
    this.removeCreated();
  }

  // ---------------- node ----------------

  private nodeStatus(name: string): Json {
    const t = now();
    const c = (type: string, status: string, reason: string, message: string): Json => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: t,
      lastTransitionTime: t,
    });
    const resources = { cpu: '32', memory: '128Gi', pods: '250', 'ephemeral-storage': '100Gi' };
    return {
      capacity: resources,
      allocatable: resources,
      conditions: [
        c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        c('Ready', 'True', 'KubeletReady', 'local eventdb kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: this.server ? this.opts.serverPort : 0 } },
      nodeInfo: {
        machineID: 'eventdb-local',
        systemUUID: 'eventdb-local',
        bootID: 'eventdb-local',
        kernelVersion: '',
        osImage: 'eventdb local kubelet',
        containerRuntimeVersion: 'eventdb-local://1',
        kubeletVersion: this.opts.k8sVersion,
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: process.arch === 'x64' ? 'amd64' : process.arch,
      },
    };
  }

  private async registerNode(): Promise<void> {
    for (const [i, name] of this.nodeNames.entries()) await this.registerOneNode(name, i + 1);
  }

  private async registerOneNode(name: string, index: number): Promise<void> {
    const api = this.opts.api;
    const existing = await api.get<Json>(`/api/v1/nodes/${name}`);
    if (!existing) {
      await api.call('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          labels: {
            'kubernetes.io/hostname': name,
            'topology.kubernetes.io/zone': `local-${index}`,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch,
            'eventdb.local/kubelet': 'true',
          },
        },
        spec: {},
      }, { ok: [409] });
    }
    await this.heartbeatOne(name);
  }

  private async heartbeat(): Promise<void> {
    for (const name of this.nodeNames) await this.heartbeatOne(name);
  }

  private async heartbeatOne(name: string): Promise<void> {
    const api = this.opts.api;
    await api.call('PATCH', `/api/v1/nodes/${name}/status`, { status: this.nodeStatus(name) }, { patch: 'merge' });
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`;
    const renewTime = new Date().toISOString().replace('Z', '000Z').replace(/\.(\d{6})\d*Z$/, '.$1Z');
    const lease = await api.get<Json>(leasePath);
    if (!lease) {
      await api.call(
        'POST',
        '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: 'kube-node-lease' },
          spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime },
        },
        { ok: [409, 404] },
      );
    } else {
      await api.call('PATCH', leasePath, { spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime } }, { patch: 'merge' });
    }
  }

  private async ensureStorageClass(): Promise<void> {
    await this.opts.api.call(
      'POST',
      '/apis/storage.k8s.io/v1/storageclasses',
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: STORAGE_CLASS, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
        provisioner: PROVISIONER,
        reclaimPolicy: 'Delete',
        volumeBindingMode: 'Immediate',
      },
      { ok: [409] },
    );
  }

  // ---------------- provisioner ----------------

  private async provision(): Promise<void> {
    const api = this.opts.api;
    const classes = await api.get<{ items: Array<{ metadata?: { name?: string }; provisioner?: string; reclaimPolicy?: string }> }>(
      '/apis/storage.k8s.io/v1/storageclasses',
    );
    const ours = new Map<string, string>();
    for (const sc of classes?.items ?? []) {
      if (sc.provisioner === PROVISIONER && sc.metadata?.name) ours.set(sc.metadata.name, sc.reclaimPolicy ?? 'Delete');
    }
    const pvcs = await api.get<{ items: V1PersistentVolumeClaim[] }>('/api/v1/persistentvolumeclaims');
    for (const pvc of pvcs?.items ?? []) {
      const sc = pvc.spec?.storageClassName;
      if (!sc || !ours.has(sc) || pvc.status?.phase !== 'Pending' || pvc.spec?.volumeName || pvc.metadata?.deletionTimestamp) continue;
      const uid = pvc.metadata?.uid ?? '';
      const pvName = `pvc-${uid}`;
      const dir = path.join(this.opts.stateDir, 'volumes', pvName);
      fs.mkdirSync(dir, { recursive: true });
      const res = await api.call(
        'POST',
        '/api/v1/persistentvolumes',
        {
          apiVersion: 'v1',
          kind: 'PersistentVolume',
          metadata: { name: pvName, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
          spec: {
            capacity: { storage: pvc.spec?.resources?.requests?.['storage'] ?? '1Gi' },
            accessModes: pvc.spec?.accessModes ?? ['ReadWriteOnce'],
            persistentVolumeReclaimPolicy: ours.get(sc),
            storageClassName: sc,
            volumeMode: pvc.spec?.volumeMode ?? 'Filesystem',
            hostPath: { path: dir, type: 'DirectoryOrCreate' },
            claimRef: {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              namespace: pvc.metadata?.namespace,
              name: pvc.metadata?.name,
              uid,
            },
          },
        },
        { ok: [409] },
      );
      if (res.status !== 409) this.log(`provisioned ${pvName} for ${pvc.metadata?.namespace ?? ''}/${pvc.metadata?.name ?? ''} at ${dir}`);
    }
    const pvs = await api.get<{ items: V1PersistentVolume[] }>('/api/v1/persistentvolumes');
    for (const pv of pvs?.items ?? []) {
      const ann = pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'];
      if (ann !== PROVISIONER || pv.metadata?.deletionTimestamp) continue;
      if (pv.status?.phase !== 'Released' || pv.spec?.persistentVolumeReclaimPolicy !== 'Delete') continue;
      const p = pv.spec?.hostPath?.path;
      if (p && p.startsWith(path.join(this.opts.stateDir, 'volumes'))) fs.rmSync(p, { recursive: true, force: true });
      await api.call('DELETE', `/api/v1/persistentvolumes/${pv.metadata?.name ?? ''}`, undefined, { ok: [404] });
      this.log(`deleted released volume ${pv.metadata?.name ?? ''}`);
    }
  }

  // ---------------- pods ----------------

  private allocateIP(): string {
    for (let x = 10; x < 255; x++) {
      for (let y = 1; y < 255; y++) {
        const ip = `127.0.${x}.${y}`;
        if (!this.usedIPs.has(ip)) {
          this.usedIPs.add(ip);
          return ip;
        }
      }
    }
    throw new Error('no free loopback pod IPs');
  }

  private async loop(): Promise<void> {
    let lastHeartbeat = Date.now();
    while (!this.stopped) {
      const t0 = Date.now();
      try {
        await this.sync();
      } catch (err) {
        this.log(`sync failed: ${(err as Error).message}`);
      }
      if (Date.now() - lastHeartbeat >= 10_000) {
        lastHeartbeat = Date.now();
        try {
          await this.heartbeat();
        } catch (err) {
          this.log(`heartbeat failed: ${(err as Error).message}`);
        }
      }
      if (this.syncCount % 2 === 0) {
        try {
          await this.provision();
          await this.refreshServices();
        } catch (err) {
          this.log(`provisioner failed: ${(err as Error).message}`);
        }
      }
      this.syncCount++;
      const wait = SYNC_MS - (Date.now() - t0);
      if (wait > 0) await sleep(wait);
    }
  }

  private async sync(): Promise<void> {
    const api = this.opts.api;
    const list = await api.call<{ items: V1Pod[] }>(
      'GET',
      this.nodeNames.length === 1
        ? `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${this.opts.nodeName}`)}`
        : `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName!=')}`,
    );
    const pods = (list.body?.items ?? []).filter((p) => this.nodeNames.includes(p.spec?.nodeName ?? ''));
    const seen = new Set<string>();
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? '';
      seen.add(uid);
      let w = this.workers.get(uid);
      const terminal = pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
      if (!w) {
        if (pod.metadata?.deletionTimestamp) {
          // nothing runs for it here: let it go
          await this.deletePod(pod);
          continue;
        }
        if (terminal) continue;
        const known = pod.status?.podIP;
        const ip = pod.spec?.hostNetwork
          ? '127.0.0.1'
          : known && /^127\.0\.\d+\.\d+$/.test(known) && !this.usedIPs.has(known)
            ? known
            : this.allocateIP();
        if (ip !== '127.0.0.1') this.usedIPs.add(ip);
        w = new PodWorker(this, pod, ip);
        this.workers.set(uid, w);
        try {
          await w.setup();
        } catch (err) {
          w.message = (err as Error).message;
          w.log(`setup: ${w.message}`);
        }
      } else {
        w.pod = pod;
      }
      if (pod.metadata?.deletionTimestamp) {
        if (!w.terminating) {
          w.terminating = true;
          const grace = w.graceSeconds();
          w.log(`deleting: SIGTERM, grace ${grace}s`);
          void (async () => {
            await w.terminate(grace);
            await this.pushStatus(w).catch(() => undefined);
            w.cleanup();
            this.usedIPs.delete(w.ip);
            this.workers.delete(uid);
            this.writeHosts();
            await this.deletePod(pod).catch((err: unknown) => this.log(`delete pod: ${(err as Error).message}`));
            w.log('gone');
          })();
        }
        continue;
      }
      if (!w.started && !w.finished) {
        try {
          await w.setup();
          w.message = undefined;
        } catch (err) {
          w.message = (err as Error).message;
        }
      } else if (w.started && !w.finished && this.syncCount % 2 === 0) {
        try {
          await w.syncVolumes();
        } catch (err) {
          w.log(`volume sync: ${(err as Error).message}`);
        }
      }
      await w.tick();
      await this.pushStatus(w).catch((err: unknown) => w.log(`status: ${(err as Error).message}`));
    }
    for (const [uid, w] of this.workers) {
      if (seen.has(uid) || w.terminating) continue;
      w.log('removed from the API: stopping');
      w.terminating = true;
      void (async () => {
        await w.terminate(2);
        w.cleanup();
        this.usedIPs.delete(w.ip);
        this.workers.delete(uid);
        this.writeHosts();
      })();
    }
    this.writeHosts();
  }

  private async pushStatus(w: PodWorker): Promise<void> {
    const st = w.status();
    const key = JSON.stringify({ ...st, conditions: (st['conditions'] as Json[]).map((c) => ({ ...c, lastTransitionTime: '' })), startTime: '' });
    if (key === w.lastStatusJson) return;
    await this.opts.api.call(
      'PATCH',
      `/api/v1/namespaces/${w.ns}/pods/${w.name}/status`,
      { metadata: { uid: w.uid }, status: st },
      { patch: 'merge', ok: [404] },
    );
    w.lastStatusJson = key;
  }

  private async deletePod(pod: V1Pod): Promise<void> {
    await this.opts.api.call(
      'DELETE',
      `/api/v1/namespaces/${pod.metadata?.namespace ?? ''}/pods/${pod.metadata?.name ?? ''}`,
      { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid } },
      { ok: [404, 409] },
    );
  }

  // ---------------- DNS ----------------

  private async refreshServices(): Promise<void> {
    const list = await this.opts.api.get<{
      items: Array<{
        metadata?: { name?: string; namespace?: string };
        spec?: { clusterIP?: string; selector?: Record<string, string>; publishNotReadyAddresses?: boolean };
      }>;
    }>('/api/v1/services');
    this.services = (list?.items ?? [])
      .filter((s) => s.spec?.selector && Object.keys(s.spec.selector).length > 0)
      .map((s) => ({
        ns: s.metadata?.namespace ?? '',
        name: s.metadata?.name ?? '',
        selector: s.spec?.selector ?? {},
        publishNotReady: !!s.spec?.publishNotReadyAddresses,
        headless: s.spec?.clusterIP === 'None',
      }));
  }

  /** Pod DNS names (hostname.subdomain.ns.svc.cluster.local and the .svc form) into /etc/hosts and the preload's file. */
  private writeHosts(remove = false): void {
    const lines: string[] = [];
    if (!remove) {
      // Records as cluster DNS serves them from EndpointSlices of headless Services: the Service name
      // (ClusterIP Services are not proxied here: their name resolves to the pods directly, too)
      // resolves to the selected pods, and <hostname>.<service> to a selected pod whose subdomain is the
      // Service; not-ready pods count only with publishNotReadyAddresses.
      for (const svc of this.services) {
        for (const w of this.workers.values()) {
          if (w.ns !== svc.ns || !w.started || w.terminating || w.finished) continue;
          const labels = w.pod.metadata?.labels ?? {};
          if (!Object.entries(svc.selector).every(([k, v]) => labels[k] === v)) continue;
          if (!svc.publishNotReady && !w.isReady()) continue;
          lines.push(`${w.ip} ${svc.name}.${svc.ns}.svc.cluster.local ${svc.name}.${svc.ns}.svc`);
          const hn = w.pod.spec?.hostname;
          if (svc.headless && hn && w.pod.spec?.subdomain === svc.name) {
            lines.push(`${w.ip} ${hn}.${svc.name}.${svc.ns}.svc.cluster.local ${hn}.${svc.name}.${svc.ns}.svc`);
          }
        }
      }
      lines.sort();
    }
    const block = lines.join('\n');
    if (block === this.lastHosts && !remove) return;
    this.lastHosts = block;
    if (!this.opts.manageEtcHosts) {
      fs.writeFileSync(`${this.hostsFile}.tmp`, block ? `${block}\n` : '');
      fs.renameSync(`${this.hostsFile}.tmp`, this.hostsFile);
      return;
    }
    try {
      const cur = fs.readFileSync('/etc/hosts', 'utf8');
      const begin = `${HOSTS_BEGIN} ${this.opts.nodeName}`;
      const end = `${HOSTS_END} ${this.opts.nodeName}`;
      const kept: string[] = [];
      let inside = false;
      for (const l of cur.split('\n')) {
        if (l.startsWith(HOSTS_BEGIN)) inside = true;
        else if (l.startsWith(HOSTS_END)) inside = false;
        else if (!inside) kept.push(l);
      }
      while (kept.length > 0 && kept[kept.length - 1] === '') kept.pop();
      const next = `${kept.join('\n')}\n${lines.length > 0 ? `${begin}\n${block}\n${end}\n` : ''}`;
      if (next !== cur) fs.writeFileSync('/etc/hosts', next); // in place: /etc/hosts may be a bind mount
    } catch (err) {
      this.log(`cannot update /etc/hosts: ${(err as Error).message}`);
    }
  }
}

export { ApiError };
