import { useState } from 'preact/hooks';
import { enc, getJson, request, type Session } from '../api.js';
import { ErrorBanner, go, Notice, pretty, Section, useAction, usePoll } from '../ui.js';

interface Projection {
  name: string;
  mode: string;
  status: string;
  stateReason: string;
  progress: number;
  position: string;
  eventsProcessedAfterRestart: number;
  bufferedEvents: number;
  lastCheckpoint: string;
}

/** #/projections (list and create) and #/projections/<name> (one projection). */
export function Projections({ path, session }: { path: string[]; session: Session }) {
  const [name] = path;
  if (name === undefined || name === '') return <ProjectionList />;
  return <ProjectionPage key={name} name={name} session={session} />;
}

function ProjectionList() {
  const list = usePoll((s) => getJson<{ projections: Projection[] }>('/projections/any', s), 2000, []);
  return (
    <div class="page">
      <h1>Projections</h1>
      <ErrorBanner error={list.error} />
      <Section title="All projections">
        <div class="scroll">
          <table data-testid="projections">
            <thead>
              <tr>
                <th>Name</th>
                <th>Mode</th>
                <th>Status</th>
                <th>Progress</th>
                <th>Events processed</th>
                <th>Position</th>
              </tr>
            </thead>
            <tbody>
              {(list.value?.projections ?? []).map((p) => (
                <tr key={p.name}>
                  <td>
                    <a href={`#/projections/${enc(p.name)}`}>{p.name}</a>
                  </td>
                  <td>{p.mode}</td>
                  <td class={p.status.startsWith('Faulted') ? 'bad' : ''}>{p.status}</td>
                  <td>{p.progress.toFixed(1)}%</td>
                  <td>{p.eventsProcessedAfterRestart}</td>
                  <td>{p.position}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
      <CreateProjection />
    </div>
  );
}

const TEMPLATE = `fromStream('orders')
.when({
  $init: function () { return { count: 0 }; },
  $any: function (state, event) { state.count += 1; return state; }
});
`;

function CreateProjection() {
  const [name, setName] = useState('');
  const [mode, setMode] = useState('continuous');
  const [emit, setEmit] = useState(false);
  const [query, setQuery] = useState(TEMPLATE);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const params = new URLSearchParams({ name, type: 'JS', enabled: 'true', emit: String(emit), ...(mode === 'onetime' ? { checkpoints: 'true' } : {}) });
      await request(`/projections/${mode}?${params.toString()}`, { method: 'POST', contentType: 'application/json', body: query });
      go(`/projections/${enc(name)}`);
    });
  };
  return (
    <Section title="Create a projection">
      <form class="stack" onSubmit={submit}>
        <div class="row">
          <label>
            Name
            <input name="projectionName" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            Mode
            <select name="mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
              <option value="continuous">Continuous</option>
              <option value="onetime">One-time</option>
            </select>
          </label>
          <label class="inline">
            <input type="checkbox" name="emit" checked={emit} onChange={(e) => setEmit(e.currentTarget.checked)} /> Emit enabled
          </label>
        </div>
        <label>
          Query (JavaScript)
          <textarea name="query" class="code" rows={10} spellcheck={false} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="submit" disabled={action.busy}>
            Create
          </button>
        </div>
        <ErrorBanner error={action.error} />
      </form>
    </Section>
  );
}

function ProjectionPage({ name, session }: { name: string; session: Session }) {
  const status = usePoll((s) => getJson<Projection>(`/projection/${enc(name)}`, s), 2000, [name]);
  const [partition, setPartition] = useState('');
  const state = usePoll(
    async (s) => {
      const q = partition === '' ? '' : `?partition=${enc(partition)}`;
      const [st, result] = await Promise.all([
        request(`/projection/${enc(name)}/state${q}`, { signal: s }).then((r) => r.text()),
        request(`/projection/${enc(name)}/result${q}`, { signal: s }).then((r) => r.text()),
      ]);
      return { state: st, result };
    },
    2000,
    [name, partition],
  );
  const [query, setQuery] = useState<string | undefined>(undefined);
  const [emit, setEmit] = useState(false);
  const source = usePoll(
    async (s) => {
      const q = await getJson<{ query: string; emitEnabled?: boolean }>(`/projection/${enc(name)}/query?config=yes`, s);
      setQuery(q.query);
      setEmit(q.emitEnabled === true);
      return q;
    },
    0,
    [name],
  );
  const command = useAction();
  const save = useAction();
  const p = status.value;
  const run = (cmd: string, label: string) =>
    command.run(async () => {
      await request(`/projection/${enc(name)}/command/${cmd}`, { method: 'POST' });
      status.reload();
      return `${label}: done.`;
    });
  return (
    <div class="page">
      <h1>
        <a href="#/projections">Projections</a> / {name}
      </h1>
      <ErrorBanner error={status.error} />
      <Section title="Status">
        {p !== undefined && (
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="projection-status" class={p.status.startsWith('Faulted') ? 'bad' : ''}>
              {p.status}
            </dd>
            {p.stateReason !== '' && (
              <>
                <dt>Reason</dt>
                <dd class="bad" data-testid="projection-reason">
                  {p.stateReason}
                </dd>
              </>
            )}
            <dt>Mode</dt>
            <dd>{p.mode}</dd>
            <dt>Progress</dt>
            <dd>{p.progress.toFixed(1)}%</dd>
            <dt>Position</dt>
            <dd>{p.position}</dd>
            <dt>Events processed</dt>
            <dd>{p.eventsProcessedAfterRestart}</dd>
            <dt>Last checkpoint</dt>
            <dd>{p.lastCheckpoint}</dd>
          </dl>
        )}
        <div class="row">
          <button type="button" disabled={command.busy} onClick={() => run('enable', 'Start')}>
            Start
          </button>
          <button type="button" disabled={command.busy} onClick={() => run('disable', 'Stop')}>
            Stop
          </button>
          <button type="button" disabled={command.busy} onClick={() => run('reset', 'Reset')}>
            Reset
          </button>
          <button type="button" disabled={command.busy} onClick={() => run('abort', 'Abort')}>
            Abort
          </button>
          {session.operator && (
            <button
              type="button"
              class="danger"
              disabled={command.busy}
              onClick={() =>
                command.run(async () => {
                  await request(`/projection/${enc(name)}?deleteCheckpointStream=true&deleteStateStream=true`, { method: 'DELETE' });
                  go('/projections');
                })
              }
            >
              Delete
            </button>
          )}
        </div>
        <Notice text={command.done} />
        <ErrorBanner error={command.error} />
      </Section>
      <Section title="State and result">
        <label>
          Partition (empty: the whole projection)
          <input name="partition" value={partition} onChange={(e) => setPartition(e.currentTarget.value)} />
        </label>
        <ErrorBanner error={state.error} />
        <h3>State</h3>
        <pre data-testid="projection-state">{pretty(state.value?.state)}</pre>
        <h3>Result</h3>
        <pre>{pretty(state.value?.result)}</pre>
      </Section>
      <Section title="Query">
        <ErrorBanner error={source.error} />
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void save.run(async () => {
              await request(`/projection/${enc(name)}/query?type=JS&emit=${emit}`, { method: 'PUT', contentType: 'application/json', body: query ?? '' });
              status.reload();
              return 'Query saved: restart the projection (Stop, Start) or Reset it to run it over again.';
            });
          }}
        >
          <label>
            Query (JavaScript)
            <textarea name="query" class="code" rows={12} spellcheck={false} value={query ?? ''} onInput={(e) => setQuery(e.currentTarget.value)} />
          </label>
          <label class="inline">
            <input type="checkbox" checked={emit} onChange={(e) => setEmit(e.currentTarget.checked)} /> Emit enabled
          </label>
          <div class="row">
            <button type="submit" disabled={save.busy || query === undefined}>
              Save query
            </button>
          </div>
          <Notice text={save.done} />
          <ErrorBanner error={save.error} />
        </form>
      </Section>
    </div>
  );
}
