/**
 * The verbs of `kubectl eventdb`: each reads and writes through PluginIo / ClusterNodes, shows
 * progress on stderr, prints its result (text, or -o json|yaml) on stdout and returns the exit
 * code: 0 ok, 1 failure or a bad verdict. Usage errors (2) never get here.
 */
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { ANNOTATION_RESTARTED_AT, API_VERSION, KIND_BACKUP, LABEL_CLUSTER, LABEL_NAME } from '../api/group.js';
import { podView } from '../controllers/eventdbcluster/observe.js';
import type { PodView } from '../controllers/eventdbcluster/observe.js';
import { isNotFound, type KubeObject, type ResourceType } from '../runtime/kube-api.js';
import {
  BACKUPS,
  CONFIG_MAPS,
  EVENTDB_CLUSTERS,
  EVENTS,
  JOBS,
  PDBS,
  PODS,
  PVCS,
  SCAVENGE_SCHEDULES,
  SECRETS,
  SERVICES,
  VOLUME_SNAPSHOTS,
} from '../runtime/resource-types.js';
import type { Credentials } from '../node-client/node-client.js';
import type { Command } from './args.js';
import { ClusterNodes, PluginError, credentialsOf, loadCluster, newEventId, type ClusterHandle, type PluginIo } from './io.js';
import { followStart, interleave, newLinesOnly, parseLogLine, renderLogEntry } from './logs.js';
import { oneOffSchedule, stamp } from './one-off.js';
import { REDACTED, redactList, redactObject, redactSecret, redactionNotice, scrubText, secretValues, type RedactedSecret } from './redact.js';
import { formatData, paint, renderStatus, table } from './render.js';
import { buildStatusView, newestEventOf, replicaReports, type NewestEvent, type ReplicaReport, type StatusView } from './status-view.js';
import { tarGz, type TarEntry } from './tar.js';

export interface Terminal {
  stdout(text: string): void;
  stderr(text: string): void;
  /** stdout is a terminal (colour, redraws); false in a pipe. */
  readonly tty: boolean;
  readonly signal: AbortSignal;
  readonly nowMs: () => number;
}

type C<V extends Command['verb']> = Extract<Command, { verb: V }>;
type Any = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });

export async function runVerb(command: Command, io: PluginIo, term: Terminal): Promise<number> {
  switch (command.verb) {
    case 'status':
      return status(command, io, term);
    case 'report':
      return report(command, io, term);
    case 'backup':
      return backup(command, io, term);
    case 'scavenge':
      return scavenge(command, io, term);
    case 'restart':
      return restart(command, io, term);
    case 'switchover':
    case 'hibernate':
    case 'fence':
      return unsupported(command, io, term);
    case 'logs':
      return logs(command, io, term);
    case 'read':
      return read(command, io, term);
    case 'append':
      return append(command, io, term);
  }
}

function emit(term: Terminal, command: Command, data: unknown, text: () => string): void {
  term.stdout(command.output === 'text' ? text() : formatData(data, command.output));
}

// ------------------------------------------------------------------------------------ status

async function listOf(io: PluginIo, type: ResourceType, labelSelector?: string): Promise<KubeObject[]> {
  return (await io.api.list(type, { namespace: io.namespace, ...(labelSelector === undefined ? {} : { labelSelector }) })).items;
}

/** Events about the cluster, its pods, Backups and ScavengeSchedules. */
function eventsAbout(events: readonly KubeObject[], names: ReadonlySet<string>): KubeObject[] {
  return events.filter((event) => {
    const regarding = ((event as Any)['regarding'] ?? (event as Any)['involvedObject'] ?? {}) as Any;
    return names.has(String(regarding['name'] ?? ''));
  });
}

async function gatherStatus(io: PluginIo, name: string, term: Terminal): Promise<{ view: StatusView; handle: ClusterHandle }> {
  const handle = await loadCluster(io, name);
  const selector = `${LABEL_CLUSTER}=${name}`;
  const [podObjects, claims, backups, schedules, events] = await Promise.all([
    listOf(io, PODS, selector),
    listOf(io, PVCS, selector),
    listOf(io, BACKUPS),
    listOf(io, SCAVENGE_SCHEDULES),
    listOf(io, EVENTS).catch(() => []),
  ]);
  const nodes = new ClusterNodes(io, handle);
  let live: Awaited<ReturnType<ClusterNodes['members']>> | undefined;
  let replicas: ReplicaReport[] | undefined;
  let newestEvents: Map<string, NewestEvent> | undefined;
  try {
    live = await nodes.members();
    const credentials = await credentialsOf(io, handle, 'admin').catch(() => undefined);
    // The leader's own account of each replica (acknowledged position, caught up), from /stats.
    const leader = [...live.values()].find((member) => member.role === 'Leader' && member.alive);
    const leaderPod = handle.pods.find((pod) => pod.name === leader?.pod);
    const answering = handle.pods.filter((pod) => live?.get(pod.name)?.alive === true);
    const [stats, heads] = await Promise.all([
      leaderPod === undefined || credentials === undefined ? undefined : leaderReplicas(nodes, leaderPod, credentials),
      credentials === undefined ? undefined : newestEventsOf(nodes, answering, credentials),
    ]);
    replicas = stats;
    newestEvents = heads;
  } catch (err: unknown) {
    term.stderr(`warning: the nodes could not be asked (${(err as Error).message}); node data from status.members\n`);
  } finally {
    await nodes.close();
  }
  const mine = (object: KubeObject): boolean => ((object['spec'] as Any | undefined)?.['cluster']?.['name'] ?? '') === name;
  const related = new Set([name, ...podObjects.map((pod) => pod.metadata.name ?? ''), ...backups.filter(mine).map((b) => b.metadata.name ?? ''), ...schedules.filter(mine).map((s) => s.metadata.name ?? '')]);
  const view = buildStatusView({ cluster: handle.cluster, pods: podObjects, claims, backups, schedules, events: eventsAbout(events, related), live, ...(replicas === undefined ? {} : { replicas }), ...(newestEvents === undefined ? {} : { newestEvents }), nowMs: term.nowMs() });
  return { view, handle };
}

/** The leader's replication report from its /stats; undefined when it did not answer. */
async function leaderReplicas(nodes: ClusterNodes, leader: PodView, credentials: Credentials): Promise<ReplicaReport[] | undefined> {
  try {
    const answer = await nodes.request(leader, '/stats', { headers: { accept: 'application/json' }, credentials });
    return answer.status === 200 ? replicaReports(JSON.parse(answer.text)) : undefined;
  } catch {
    return undefined; // no answer: the gossip lag stands alone
  }
}

/**
 * Each node's newest event as that node serves it (the head of its own `$all`, read from that
 * node, not forwarded): the leader's and a follower's created times give the follower's lag in
 * seconds. A node that does not answer has none.
 */
async function newestEventsOf(nodes: ClusterNodes, pods: readonly PodView[], credentials: Credentials): Promise<Map<string, NewestEvent>> {
  const heads = new Map<string, NewestEvent>();
  await Promise.all(
    pods.map(async (pod) => {
      try {
        const answer = await nodes.request(pod, '/streams/%24all/head/backward/1', { headers: { accept: 'application/vnd.eventstore.atom+json', 'es-requireleader': 'false' }, credentials, timeoutMs: 8000 });
        const head = answer.status === 200 ? newestEventOf(JSON.parse(answer.text)) : undefined;
        if (head !== undefined) heads.set(pod.name, head);
      } catch {
        // no head for this node: its lag in seconds shows as '-'
      }
    }),
  );
  return heads;
}

async function status(command: C<'status'>, io: PluginIo, term: Terminal): Promise<number> {
  for (let round = 0; ; round++) {
    const { view } = await gatherStatus(io, command.cluster, term);
    if (command.watch && term.tty && command.output === 'text') term.stdout('\u001b[H\u001b[2J');
    else if (round > 0 && command.output !== 'json') term.stdout(command.output === 'yaml' ? '---\n' : '\n');
    // --watch -o json: one JSON document a line (a round each), for jq and line readers.
    if (command.watch && command.output === 'json') term.stdout(`${JSON.stringify(view)}\n`);
    else emit(term, command, view, () => renderStatus(view, { colour: term.tty && process.env['NO_COLOR'] === undefined, nowMs: term.nowMs() }));
    if (!command.watch) return view.healthy ? 0 : 1;
    await sleep(command.intervalMs, term.signal);
    if (term.signal.aborted) return view.healthy ? 0 : 1;
  }
}

// ------------------------------------------------------------------------------------ report

async function report(command: C<'report'>, io: PluginIo, term: Terminal): Promise<number> {
  const nowMs = term.nowMs();
  const file = command.file ?? `report-${command.cluster}-${stamp(nowMs)}.tar.gz`;
  const root = `report-${command.cluster}-${stamp(nowMs)}`;
  const entries: TarEntry[] = [];
  const errors: string[] = [];
  const add = (name: string, content: string): void => {
    entries.push({ name: `${root}/${name}`, content, mtimeMs: nowMs });
  };
  const step = (text: string): void => term.stderr(`${paint(false).dim('·')} ${text}\n`);
  const attempt = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (err: unknown) {
      const message = (err as Error).message;
      errors.push(message.startsWith(what) ? message : `${what}: ${message}`);
      return undefined;
    }
  };
  step(`reading EventDBCluster ${io.namespace}/${command.cluster}`);
  const { view, handle } = await gatherStatus(io, command.cluster, term);
  const name = command.cluster;
  const selector = `${LABEL_CLUSTER}=${name}`;
  add('summary.txt', renderStatus(view, { colour: false, nowMs }));
  add('status.json', `${JSON.stringify(view, null, 2)}\n`);
  add('eventdbcluster.yaml', stringify(redactObject(handle.cluster)));
  step('reading the children, Backups, ScavengeSchedules and Events');
  const mine = (object: KubeObject): boolean => ((object['spec'] as Any | undefined)?.['cluster']?.['name'] ?? '') === name;
  const kinds: [string, ResourceType, string | undefined, ((object: KubeObject) => boolean)?][] = [
    ['pods.yaml', PODS, selector],
    ['services.yaml', SERVICES, selector],
    ['persistentvolumeclaims.yaml', PVCS, selector],
    ['configmaps.yaml', CONFIG_MAPS, selector],
    ['poddisruptionbudgets.yaml', PDBS, selector],
    ['jobs.yaml', JOBS, undefined, (job) => job.metadata.labels?.[LABEL_CLUSTER] === name || (job.metadata.name ?? '').startsWith(`${name}-`)],
    ['volumesnapshots.yaml', VOLUME_SNAPSHOTS, undefined, (snapshot) => (snapshot.metadata.name ?? '').startsWith(`${name}-`) || snapshot.metadata.labels?.[LABEL_CLUSTER] === name],
    ['backups.yaml', BACKUPS, undefined, mine],
    ['scavengeschedules.yaml', SCAVENGE_SCHEDULES, undefined, mine],
  ];
  const related = new Set<string>([name]);
  let podObjects: KubeObject[] = [];
  for (const [fileName, type, labelSelector, filter] of kinds) {
    const items = await attempt(`list ${type.plural}`, () => listOf(io, type, labelSelector));
    if (items === undefined) continue;
    const kept = filter === undefined ? items : items.filter(filter);
    for (const item of kept) related.add(item.metadata.name ?? '');
    if (type === PODS) podObjects = kept;
    add(fileName, stringify(redactList(kept)));
  }
  add('statefulsets.txt', 'The operator runs no StatefulSet: it creates the node pods and their PVCs itself (operator/ARCHITECTURE.md, "Pods, not a StatefulSet"); see pods.yaml and persistentvolumeclaims.yaml.\n');
  const events = await attempt('list events', () => listOf(io, EVENTS));
  if (events !== undefined) add('events.yaml', stringify(redactList(eventsAbout(events, related))));
  step('listing Secrets (names and keys only)');
  const secretNames = new Set<string>([handle.spec.users.admin.name, handle.spec.users.ops.name]);
  if (handle.spec.tls.certificateSecret !== undefined) secretNames.add(handle.spec.tls.certificateSecret);
  if (handle.spec.tls.caSecret !== undefined) secretNames.add(handle.spec.tls.caSecret);
  if (handle.spec.licenseSecret !== undefined) secretNames.add(handle.spec.licenseSecret.name);
  const labelled = (await attempt('list secrets', () => listOf(io, SECRETS, selector))) ?? [];
  const secrets = new Map(labelled.map((secret) => [secret.metadata.name ?? '', secret]));
  for (const secretName of secretNames) {
    if (secrets.has(secretName)) continue;
    const secret = await attempt(`get secret ${secretName}`, () => io.api.get(SECRETS, io.namespace, secretName));
    if (secret !== undefined) secrets.set(secretName, secret);
  }
  const scrub: string[] = [];
  const redacted: RedactedSecret[] = [];
  for (const secret of secrets.values()) {
    scrub.push(...secretValues(secret));
    redacted.push({ name: secret.metadata.name ?? '', type: secret['type'] as string | undefined, keys: Object.keys((secret['data'] ?? {}) as Any) });
  }
  add('secrets.yaml', stringify({ apiVersion: 'v1', kind: 'List', items: [...secrets.values()].map((secret) => redactSecret(secret)) }));
  add('REDACTED.txt', redactionNotice(redacted));
  step(`node logs (${podObjects.length} pods, last ${command.logLines} lines each)`);
  for (const pod of podObjects) {
    const podName = pod.metadata.name ?? '';
    const text = await attempt(`logs of ${podName}`, () => io.podLog(podName, 'eventdb', { tailLines: command.logLines }));
    if (text !== undefined) add(`logs/nodes/${podName}.log`, text);
    const restarts = (((pod['status'] as Any | undefined)?.['containerStatuses'] ?? []) as Any[]).reduce((sum, s) => sum + Number(s['restartCount'] ?? 0), 0);
    if (restarts > 0) {
      const previous = await attempt(`previous logs of ${podName}`, () => io.podLog(podName, 'eventdb', { tailLines: command.logLines, previous: true }));
      if (previous !== undefined) add(`logs/nodes/${podName}.previous.log`, previous);
    }
  }
  step('operator logs');
  const operatorPods = await attempt('list operator pods (all namespaces)', async () => (await io.api.list(PODS, { labelSelector: `${LABEL_NAME}=eventdb-operator` })).items);
  for (const pod of operatorPods ?? []) {
    const podName = pod.metadata.name ?? '';
    const namespace = pod.metadata.namespace ?? '';
    const containers = (((pod['spec'] as Any | undefined)?.['containers'] ?? []) as Any[]).map((container) => String(container['name']));
    for (const container of containers) {
      const text = await attempt(`logs of operator pod ${namespace}/${podName}`, () => operatorLog(io, namespace, podName, container, command.logLines));
      if (text !== undefined) add(`logs/operator/${namespace}-${podName}-${container}.log`, text);
    }
  }
  if ((operatorPods ?? []).length === 0) errors.push('no operator pod found (label app.kubernetes.io/name=eventdb-operator): the operator may run outside the cluster');
  step('each node\'s /info, /gossip, /stats, /info/options');
  const nodes = new ClusterNodes(io, handle);
  try {
    // /stats and /info/options want an authenticated user (admin is one of ops-or-admins).
    const ops = (await attempt('admin credentials', () => credentialsOf(io, handle, 'admin'))) ?? (await attempt('ops credentials', () => credentialsOf(io, handle, 'ops')));
    for (const pod of handle.pods.filter((candidate) => candidate.phase === 'Running' && !candidate.terminating)) {
      for (const [path, fileName, authenticated] of [
        ['/info', 'info.json', false],
        ['/gossip', 'gossip.json', false],
        ['/stats', 'stats.json', true],
        ['/info/options', 'options.json', true],
      ] as const) {
        const answer = await attempt(`GET ${path} on ${pod.name}`, () => nodes.request(pod, path, { headers: { accept: 'application/json' }, ...(authenticated && ops !== undefined ? { credentials: ops } : {}) }));
        if (answer === undefined) continue;
        if (answer.status !== 200) {
          errors.push(`GET ${path} on ${pod.name}: ${answer.status} ${answer.text.slice(0, 200)}`);
          continue;
        }
        add(`nodes/${pod.name}/${fileName}`, prettyJson(answer.text));
      }
    }
  } finally {
    await nodes.close();
  }
  add('errors.txt', errors.length === 0 ? 'none\n' : `${errors.join('\n')}\n`);
  const scrubbed = entries.map((entry) => ({ ...entry, content: scrubText(String(entry.content), scrub) }));
  const manifest = { cluster: name, namespace: io.namespace, createdAt: new Date(nowMs).toISOString(), files: scrubbed.map((entry) => entry.name.slice(root.length + 1)), secretsRedacted: redacted.map((secret) => secret.name), errors };
  scrubbed.push({ name: `${root}/manifest.json`, content: `${JSON.stringify(manifest, null, 2)}\n`, mtimeMs: nowMs });
  const archive = tarGz(scrubbed);
  await writeFile(file, archive);
  const p = paint(term.tty);
  emit(term, command, { file, sizeBytes: archive.length, ...manifest }, () =>
    [
      `${p.green('Report written')}: ${file} (${archive.length} bytes, ${scrubbed.length} files)`,
      `Secrets redacted (data never included): ${redacted.map((secret) => secret.name).join(', ') || 'none'}`,
      errors.length === 0 ? 'Everything was collected.' : p.yellow(`${errors.length} item(s) could not be collected (errors.txt):\n  ${errors.join('\n  ')}`),
      '',
    ].join('\n'),
  );
  return 0;
}

async function operatorLog(io: PluginIo, namespace: string, pod: string, container: string, tailLines: number): Promise<string> {
  if (namespace === io.namespace) return io.podLog(pod, container, { tailLines });
  const { Log } = await import('@kubernetes/client-node');
  const { Writable } = await import('node:stream');
  const chunks: Buffer[] = [];
  const sink = new Writable({ write(chunk: Buffer, _e, callback) { chunks.push(Buffer.from(chunk)); callback(); } });
  await new Promise<void>((resolve, reject) => {
    sink.on('finish', resolve);
    new Log(io.kubeConfig).log(namespace, pod, container, sink, { tailLines, timestamps: true }).catch(reject);
    setTimeout(resolve, 60_000).unref();
  });
  return Buffer.concat(chunks).toString('utf8');
}

function prettyJson(text: string): string {
  try {
    return `${JSON.stringify(JSON.parse(text), null, 2)}\n`;
  } catch {
    return text;
  }
}

// ------------------------------------------------------------------------------------ backup

async function backup(command: C<'backup'>, io: PluginIo, term: Terminal): Promise<number> {
  await loadCluster(io, command.cluster);
  const name = command.name ?? `${command.cluster}-${stamp(term.nowMs())}`.slice(0, 63);
  const spec: Any = { cluster: { name: command.cluster } };
  if (command.method !== undefined) spec['method'] = command.method;
  if (command.node !== undefined) spec['node'] = command.node;
  if (command.snapshotClass !== undefined) spec['volumeSnapshotClassName'] = command.snapshotClass;
  if (command.claim !== undefined) spec['fileCopy'] = { claimName: command.claim, ...(command.differential ? { differential: true } : {}) };
  await io.api.create(BACKUPS, { apiVersion: API_VERSION, kind: KIND_BACKUP, metadata: { name, namespace: io.namespace, labels: { [LABEL_CLUSTER]: command.cluster } }, spec });
  term.stderr(`backup.eventdb.io/${name} created\n`);
  if (!command.wait) {
    emit(term, command, { name, namespace: io.namespace, phase: 'Pending' }, () => `Backup ${name} created; follow it with: kubectl get edbbackup ${name} -n ${io.namespace} -w\n`);
    return 0;
  }
  const deadline = term.nowMs() + command.timeoutMs;
  let last = '';
  let object: KubeObject | undefined;
  while (!term.signal.aborted) {
    object = await io.api.get(BACKUPS, io.namespace, name);
    const status = (object?.['status'] ?? {}) as Any;
    const phase = String(status['phase'] ?? 'Pending');
    const cluster = await io.api.get(EVENTDB_CLUSTERS, io.namespace, command.cluster);
    const operation = (cluster?.['status'] as Any | undefined)?.['operation'] as Any | undefined;
    const progress = `${phase}${status['sourcePod'] === undefined ? '' : ` from ${status['sourcePod']} (${status['sourceRole'] ?? '?'})`}${operation?.['kind'] === 'Backup' ? `; cluster: ${operation['step']}` : ''}${status['message'] === undefined ? '' : `; ${status['message']}`}`;
    if (progress !== last) term.stderr(`  ${new Date(term.nowMs()).toISOString().slice(11, 19)} ${progress}\n`);
    last = progress;
    if (phase === 'Completed' || phase === 'Failed') break;
    if (term.nowMs() > deadline) {
      term.stdout(`Verdict: Backup ${name} not finished within ${Math.round(command.timeoutMs / 1000)} s (phase ${phase})\n`);
      return 1;
    }
    await sleep(2000, term.signal);
  }
  const status = (object?.['status'] ?? {}) as Any;
  const ok = status['phase'] === 'Completed';
  const p = paint(term.tty);
  emit(term, command, object, () =>
    ok
      ? `${p.green('Verdict: Completed')}: Backup ${name} of ${status['sourcePod']} (${status['sourceRole']}), writer checkpoint ${status['writerCheckpoint']}${status['path'] === undefined ? '' : `, folder ${status['path']}`}${Array.isArray(status['snapshots']) ? `, snapshots ${(status['snapshots'] as Any[]).map((s) => `${s['volume']}=${s['name']}`).join(' ')}` : ''}\n`
      : `${p.red(`Verdict: ${status['phase'] ?? 'interrupted'}`)}: Backup ${name}${status['message'] === undefined ? '' : `: ${status['message']}`}\n`,
  );
  return ok ? 0 : 1;
}

// ------------------------------------------------------------------------------------ scavenge

async function scavenge(command: C<'scavenge'>, io: PluginIo, term: Terminal): Promise<number> {
  await loadCluster(io, command.cluster);
  const nodeTimeoutH = Math.max(1, Math.ceil(command.timeoutMs / 3_600_000));
  const { object, atMs } = oneOffSchedule({ cluster: command.cluster, namespace: io.namespace, nowMs: term.nowMs(), respectMaintenanceWindows: !command.ignoreMaintenanceWindows, throttlePercent: command.throttlePercent, nodeTimeout: `${nodeTimeoutH}h` });
  const name = object.metadata.name;
  await io.api.create(SCAVENGE_SCHEDULES, object as unknown as KubeObject);
  term.stderr(`scavengeschedule.eventdb.io/${name} created: one cycle at ${new Date(atMs).toISOString()} (schedule '${object.spec.schedule}' UTC; the ScavengeSchedule API has no run-now trigger)\n`);
  if (!command.wait) {
    emit(term, command, { name, namespace: io.namespace, startsAt: new Date(atMs).toISOString() }, () => `One-off ScavengeSchedule ${name} created; its cycle starts at ${new Date(atMs).toISOString()}. Delete it after the cycle: kubectl delete edbscav ${name} -n ${io.namespace}\n`);
    return 0;
  }
  const deadline = term.nowMs() + command.timeoutMs + (atMs - term.nowMs());
  let last = '';
  let result: Any | undefined;
  // The cycle's nodes as last seen: the history entry that replaces currentCycle has none.
  let lastNodes: Any[] = [];
  try {
    while (!term.signal.aborted) {
      const schedule = await io.api.get(SCAVENGE_SCHEDULES, io.namespace, name);
      const status = (schedule?.['status'] ?? {}) as Any;
      const ready = ((status['conditions'] ?? []) as Any[]).find((condition) => condition['type'] === 'Ready');
      const history = (status['history'] ?? []) as Any[];
      const cycle = status['currentCycle'] as Any | undefined;
      if (Array.isArray(cycle?.['nodes'])) lastNodes = cycle['nodes'] as Any[];
      const nodes = ((cycle?.['nodes'] ?? []) as Any[]).map((node) => `${node['pod']} ${node['result'] ?? 'Pending'}`).join(', ');
      const progress = `${status['state'] ?? 'Waiting'}${nodes === '' ? '' : `: ${nodes}`}${ready?.['status'] === 'False' ? ` (${ready['reason']}: ${ready['message']})` : ''}`;
      if (progress !== last) term.stderr(`  ${new Date(term.nowMs()).toISOString().slice(11, 19)} ${progress}\n`);
      last = progress;
      if (history.length > 0) {
        result = history[0];
        break;
      }
      if (ready?.['status'] === 'False' && ['InvalidSpec', 'ClusterNotFound', 'InvalidClusterSpec', 'NodeAutoScavenge'].includes(String(ready['reason']))) {
        term.stdout(`Verdict: the operator will not run the cycle: ${ready['reason']}: ${ready['message']}\n`);
        return 1;
      }
      if (term.nowMs() > deadline) {
        term.stdout(`Verdict: no result within the timeout (state ${status['state'] ?? '?'}); the schedule ${name} is deleted\n`);
        return 1;
      }
      await sleep(2000, term.signal);
    }
    if (result === undefined) return 1;
  } finally {
    await io.api.delete(SCAVENGE_SCHEDULES, io.namespace, name).catch(() => false);
  }
  const ok = result['result'] === 'Success';
  // The last node's result is written in the same status update that moves the cycle to the
  // history, so it may last have been seen InProgress; a cycle is Success only when every node
  // succeeded (operator-api.md), so then every node did.
  const nodes = lastNodes.map((node) => ({ pod: String(node['pod']), ...(node['role'] === undefined ? {} : { role: String(node['role']) }), result: ok ? 'Success' : String(node['result'] ?? 'Pending') }));
  const p = paint(term.tty);
  emit(term, command, { schedule: name, cycle: result, nodes }, () => `${ok ? p.green('Verdict: Success') : p.red(`Verdict: ${result?.['result']}`)}: cycle ${result?.['id']} from ${result?.['startedAt']} to ${result?.['finishedAt'] ?? '-'}, in order: ${nodes.map((node) => `${node.pod} ${node.result}`).join(', ') || '-'}; one-off schedule ${name} deleted\n`);
  return ok ? 0 : 1;
}

// ------------------------------------------------------------------------------------ restart

async function restart(command: C<'restart'>, io: PluginIo, term: Terminal): Promise<number> {
  const handle = await loadCluster(io, command.cluster);
  const status = (handle.cluster['status'] ?? {}) as Any;
  if (command.pod === undefined) {
    const value = new Date(term.nowMs()).toISOString();
    await io.api.patch(EVENTDB_CLUSTERS, io.namespace, command.cluster, { metadata: { annotations: { [ANNOTATION_RESTARTED_AT]: value } } }, { patchType: 'merge' });
    term.stderr(`annotated ${command.cluster} ${ANNOTATION_RESTARTED_AT}=${value}: the operator restarts read-only replicas, followers one at a time, then the leader after it resigned\n`);
    if (!command.wait) {
      emit(term, command, { cluster: command.cluster, restartedAt: value }, () => `Rolling restart of ${command.cluster} requested; follow it with: kubectl eventdb status ${command.cluster} -n ${io.namespace} --watch\n`);
      return 0;
    }
    const deadline = term.nowMs() + command.timeoutMs;
    let last = '';
    while (!term.signal.aborted && term.nowMs() < deadline) {
      const cluster = await io.api.get(EVENTDB_CLUSTERS, io.namespace, command.cluster);
      const s = (cluster?.['status'] ?? {}) as Any;
      const operation = s['operation'] as Any | undefined;
      const progress = operation === undefined ? `phase ${s['phase']}` : `${operation['kind']}: ${operation['step']}${operation['completed'] === undefined ? '' : ` (done: ${(operation['completed'] as string[]).join(', ')})`}`;
      if (progress !== last) term.stderr(`  ${new Date(term.nowMs()).toISOString().slice(11, 19)} ${progress}\n`);
      last = progress;
      if (s['restartedAt'] === value && operation === undefined && s['phase'] === 'Ready') {
        const lastOperation = s['lastOperation'] as Any | undefined;
        emit(term, command, s, () => `${paint(term.tty).green('Verdict: restarted')}: ${command.cluster} is Ready${lastOperation === undefined ? '' : ` (${lastOperation['kind']} ${lastOperation['result']} at ${lastOperation['finishedAt']})`}\n`);
        return 0;
      }
      await sleep(2000, term.signal);
    }
    term.stdout(`Verdict: the rolling restart of ${command.cluster} did not finish within ${Math.round(command.timeoutMs / 1000)} s\n`);
    return 1;
  }
  const pod = handle.pods.find((candidate) => candidate.name === command.pod);
  if (pod === undefined) throw new PluginError('EDBPLUGIN_NOT_FOUND', `pod ${command.pod} is not a node of ${command.cluster} (nodes: ${handle.pods.map((candidate) => candidate.name).join(', ')})`);
  const operation = status['operation'] as Any | undefined;
  if (operation !== undefined) throw new PluginError('EDBPLUGIN_BUSY', `the cluster is busy with ${operation['kind']} (${operation['step']}); restart ${pod.name} when it is over`);
  if (status['leader'] === pod.name) {
    term.stderr(`${pod.name} leads: asking it to resign first\n`);
    const nodes = new ClusterNodes(io, handle);
    try {
      await nodes.resign(pod, await credentialsOf(io, handle, 'ops'));
    } finally {
      await nodes.close();
    }
    const leader = await waitUntil(term, 60_000, async () => {
      const cluster = await io.api.get(EVENTDB_CLUSTERS, io.namespace, command.cluster);
      const next = (cluster?.['status'] as Any | undefined)?.['leader'] as string | undefined;
      return next !== undefined && next !== pod.name ? next : undefined;
    });
    if (leader === undefined) throw new PluginError('EDBPLUGIN_RESIGN', `no other leader within 60 s after ${pod.name} resigned; ${pod.name} not restarted`);
    term.stderr(`  ${leader} leads now\n`);
  }
  await io.api.delete(PODS, io.namespace, pod.name, { uid: pod.uid });
  term.stderr(`pod ${pod.name} deleted; the operator recreates it on the same volumes\n`);
  if (!command.wait) {
    emit(term, command, { pod: pod.name, deleted: true }, () => `Restart of ${pod.name} started\n`);
    return 0;
  }
  const back = await waitUntil(term, command.timeoutMs, async () => {
    const object = await io.api.get(PODS, io.namespace, pod.name);
    const view: PodView | undefined = object === undefined ? undefined : podView(command.cluster, object);
    return view !== undefined && view.uid !== pod.uid && view.ready ? view : undefined;
  });
  if (back === undefined) {
    term.stdout(`Verdict: ${pod.name} is not back and ready within ${Math.round(command.timeoutMs / 1000)} s\n`);
    return 1;
  }
  emit(term, command, { pod: pod.name, restarted: true }, () => `${paint(term.tty).green('Verdict: restarted')}: ${pod.name} is back and ready\n`);
  return 0;
}

async function waitUntil<T>(term: Terminal, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T | undefined> {
  const deadline = term.nowMs() + timeoutMs;
  while (!term.signal.aborted && term.nowMs() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err: unknown) {
      if (!isNotFound(err)) throw err;
    }
    await sleep(1000, term.signal);
  }
  return undefined;
}

// ------------------------------------------------------------------------------------ day-2

/**
 * Switchover, hibernation and fencing are contract additions ("Additions for day-2 operations")
 * that the operator's API does not have yet: these verbs say so instead of writing an annotation
 * or field nothing would act on.
 */
export const DAY2_SUPPORT: Readonly<Record<'switchover' | 'hibernate' | 'fence', boolean>> = { switchover: false, hibernate: false, fence: false };

async function unsupported(command: C<'switchover' | 'hibernate' | 'fence'>, io: PluginIo, term: Terminal): Promise<number> {
  await loadCluster(io, command.cluster);
  const what = { switchover: 'switchover (annotation eventdb.io/switchover)', hibernate: 'hibernation (spec.hibernation)', fence: 'fencing (annotation eventdb.io/fenced)' }[command.verb];
  term.stderr(`kubectl eventdb ${command.verb}: the operator does not support ${what} yet; nothing was changed. It comes with the operator's day-2 operations (operator-api.md, "Additions for day-2 operations").\n`);
  return 1;
}

// ------------------------------------------------------------------------------------ logs

async function logs(command: C<'logs'>, io: PluginIo, term: Terminal): Promise<number> {
  const handle = await loadCluster(io, command.cluster);
  const pods = handle.pods.map((pod) => pod.name).sort();
  if (pods.length === 0) throw new PluginError('EDBPLUGIN_NO_PODS', `${command.cluster} has no pods`);
  const podWidth = Math.max(...pods.map((pod) => pod.length));
  const colour = term.tty && process.env['NO_COLOR'] === undefined;
  const options = { ...(command.tail === undefined ? {} : { tailLines: command.tail }), ...(command.sinceSeconds === undefined ? {} : { sinceSeconds: command.sinceSeconds }) };
  const texts = new Map<string, string>();
  const failures: string[] = [];
  const askedAtMs = term.nowMs();
  await Promise.all(
    pods.map(async (pod) => {
      try {
        texts.set(pod, await io.podLog(pod, 'eventdb', options));
      } catch (err: unknown) {
        failures.push(`${pod}: ${(err as Error).message}`);
      }
    }),
  );
  for (const entry of interleave(texts)) term.stdout(`${renderLogEntry(entry, { colour, podWidth, json: command.json })}\n`);
  for (const failure of failures) term.stderr(`warning: no log of ${failure}\n`);
  if (!command.follow) return failures.length === pods.length ? 1 : 0;
  // Following: each pod's stream from the second of its last printed line (nothing written in
  // between is lost; the lines of that second printed already are dropped), lines as they come.
  await Promise.all(
    pods.map((pod) => {
      const start = followStart(texts.get(pod) ?? '', askedAtMs);
      const fresh = newLinesOnly(start);
      return io
        .followLog(pod, 'eventdb', { sinceTime: start.sinceTime }, (line) => {
          if (!fresh(line)) return;
          const entry = parseLogLine(pod, line);
          if (entry !== undefined) term.stdout(`${renderLogEntry(entry, { colour, podWidth, json: command.json })}\n`);
        }, term.signal)
        .catch((err: unknown) => term.stderr(`warning: following ${pod} stopped: ${(err as Error).message}\n`));
    }),
  );
  return 0;
}

// ------------------------------------------------------------------------------------ read / append

/** The leader when it is ready, else any ready node (a follower forwards or serves reads). */
function pickNode(handle: ClusterHandle): PodView {
  const leader = (handle.cluster['status'] as Any | undefined)?.['leader'] as string | undefined;
  const ready = handle.pods.filter((pod) => pod.ready && !pod.terminating);
  const pod = ready.find((candidate) => candidate.name === leader) ?? ready[0];
  if (pod === undefined) throw new PluginError('EDBPLUGIN_NO_PODS', `${handle.cluster.metadata.name} has no ready node`);
  return pod;
}

const encodeStream = (stream: string): string => encodeURIComponent(stream);

async function read(command: C<'read'>, io: PluginIo, term: Terminal): Promise<number> {
  const handle = await loadCluster(io, command.cluster);
  const pod = pickNode(handle);
  const nodes = new ClusterNodes(io, handle);
  let answer;
  try {
    answer = await nodes.request(pod, `/streams/${encodeStream(command.stream)}/${command.from}/forward/${command.count}?embed=body`, { headers: { accept: 'application/vnd.eventstore.atom+json' }, credentials: await credentialsOf(io, handle, 'admin') });
  } finally {
    await nodes.close();
  }
  if (answer.status === 404) throw new PluginError('EDBPLUGIN_STREAM_NOT_FOUND', `stream ${command.stream} not found`);
  if (answer.status === 410) throw new PluginError('EDBPLUGIN_STREAM_DELETED', `stream ${command.stream} is deleted`);
  if (answer.status !== 200) throw new PluginError('EDBPLUGIN_READ', `reading ${command.stream}: ${answer.status} ${answer.text.slice(0, 300)}`);
  const feed = JSON.parse(answer.text) as { entries?: Any[] };
  const events = (feed.entries ?? [])
    .map((entry) => {
      const data = typeof entry['data'] === 'string' && entry['isJson'] === true ? safeJson(entry['data']) : entry['data'];
      return { eventNumber: Number(entry['eventNumber']), eventType: String(entry['eventType'] ?? ''), eventId: String(entry['eventId'] ?? ''), created: String(entry['updated'] ?? ''), data };
    })
    .sort((a, b) => a.eventNumber - b.eventNumber);
  emit(term, command, events, () => (events.length === 0 ? `no events in ${command.stream} from ${command.from}\n` : `${table(['NUMBER', 'TYPE', 'CREATED', 'DATA'], events.map((event) => [String(event.eventNumber), event.eventType, event.created, typeof event.data === 'string' ? event.data : JSON.stringify(event.data)]))}\n`));
  return 0;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function append(command: C<'append'>, io: PluginIo, term: Terminal): Promise<number> {
  const handle = await loadCluster(io, command.cluster);
  const pod = pickNode(handle);
  const eventId = newEventId();
  const nodes = new ClusterNodes(io, handle);
  let answer;
  try {
    answer = await nodes.request(pod, `/streams/${encodeStream(command.stream)}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'es-eventtype': command.type, 'es-eventid': eventId },
      body: JSON.stringify(command.data),
      credentials: await credentialsOf(io, handle, 'admin'),
    });
  } finally {
    await nodes.close();
  }
  if (answer.status !== 201) throw new PluginError('EDBPLUGIN_APPEND', `appending to ${command.stream}: ${answer.status} ${answer.text.slice(0, 300)}`);
  const location = String(answer.headers['location'] ?? '');
  const eventNumber = Number(/\/(\d+)$/.exec(location)?.[1] ?? Number.NaN);
  const result = { stream: command.stream, eventType: command.type, eventId, eventNumber: Number.isNaN(eventNumber) ? null : eventNumber, node: pod.name };
  emit(term, command, result, () => `appended ${command.type} to ${command.stream} as event ${Number.isNaN(eventNumber) ? '?' : eventNumber} (id ${eventId}, via ${pod.name})\n`);
  return 0;
}

export { REDACTED };
