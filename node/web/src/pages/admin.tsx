import { useState } from 'preact/hooks';
import { enc, getJson, request, sendJson, type Session } from '../api.js';
import { ErrorBanner, formatBytes, Notice, Section, useAction, usePoll } from '../ui.js';

export function Admin({ session }: { session: Session }) {
  return (
    <div class="page">
      <h1>Admin</h1>
      <Scavenges />
      <AutoScavenge />
      {session.admin && <Users />}
      <Options />
    </div>
  );
}

interface ScavengeEvent {
  eventType: string;
  data?: string;
  updated: string;
}

function Scavenges() {
  const current = usePoll((s) => getJson<{ scavengeId: string }>('/admin/scavenge/current', s), 2000, []);
  const history = usePoll(
    async (s) => {
      try {
        const r = await request('/streams/%24scavenges/head/backward/20?embed=tryharder', { accept: 'application/vnd.eventstore.atom+json', signal: s });
        return ((await r.json()) as { entries: ScavengeEvent[] }).entries;
      } catch (err) {
        if (err instanceof Error && 'status' in err && err.status === 404) return [];
        throw err;
      }
    },
    2000,
    [],
  );
  const action = useAction();
  const running = current.value?.scavengeId ?? '';
  return (
    <Section title="Scavenges">
      <ErrorBanner error={current.error} />
      <p data-testid="scavenge-current">{running === '' ? 'No scavenge is running.' : `Running: ${running}`}</p>
      <div class="row">
        <button
          type="button"
          disabled={action.busy || running !== ''}
          onClick={() =>
            action.run(async () => {
              const r = await request('/admin/scavenge', { method: 'POST' });
              current.reload();
              history.reload();
              const body = (await r.text()).trim();
              let id = body.replace(/^ScavengeId:\s*/, '');
              try {
                id = String((JSON.parse(body) as { scavengeId?: unknown }).scavengeId ?? id);
              } catch {
                // the plain-text answer: "ScavengeId: <id>"
              }
              return `Scavenge started: ${id}`;
            })
          }
        >
          Start scavenge
        </button>
        <button
          type="button"
          disabled={action.busy || running === ''}
          onClick={() =>
            action.run(async () => {
              await request(`/admin/scavenge/${enc(running)}`, { method: 'DELETE' });
              current.reload();
              return 'Scavenge stopping.';
            })
          }
        >
          Stop scavenge
        </button>
      </div>
      <Notice text={action.done} />
      <ErrorBanner error={action.error} />
      <h3>History</h3>
      <ErrorBanner error={history.error} />
      <div class="scroll">
        <table data-testid="scavenge-history">
          <thead>
            <tr>
              <th>Time</th>
              <th>Event</th>
              <th>Scavenge</th>
              <th>Result</th>
              <th>Space saved</th>
              <th>Time taken</th>
            </tr>
          </thead>
          <tbody>
            {(history.value ?? []).map((e, i) => {
              const d = parse(e.data);
              return (
                <tr key={i}>
                  <td>{e.updated}</td>
                  <td>{e.eventType.replace(/^\$scavenge/, '')}</td>
                  <td>{String(d.scavengeId ?? '')}</td>
                  <td>{String(d.result ?? (d.chunkStartNumber !== undefined ? `chunks ${String(d.chunkStartNumber)}-${String(d.chunkEndNumber)}` : ''))}</td>
                  <td>{typeof d.spaceSaved === 'number' ? formatBytes(d.spaceSaved) : ''}</td>
                  <td>{String(d.timeTaken ?? '')}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </Section>
  );
}

function parse(text: string | undefined): Record<string, unknown> {
  try {
    const v = JSON.parse(text ?? '{}') as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function AutoScavenge() {
  const status = usePoll(
    async (s) => {
      const r = await request('/auto-scavenge/status', { signal: s }).catch((err: unknown) => {
        if (err instanceof Error && 'status' in err && err.status === 503) return undefined;
        throw err;
      });
      return r === undefined ? undefined : ((await r.json()) as Record<string, unknown>);
    },
    5000,
    [],
  );
  return (
    <Section title="Auto-scavenge">
      <ErrorBanner error={status.error} />
      {status.value === undefined && status.error === undefined && <p>Auto-scavenge is not enabled on this node.</p>}
      {status.value !== undefined && (
        <dl class="facts">
          {Object.entries(status.value).map(([k, v]) => (
            <>
              <dt>{k}</dt>
              <dd>{typeof v === 'object' ? JSON.stringify(v) : String(v)}</dd>
            </>
          ))}
        </dl>
      )}
    </Section>
  );
}

interface User {
  loginName: string;
  fullName: string;
  groups: string[];
  disabled: boolean;
}

function Users() {
  const users = usePoll((s) => getJson<{ data: User[] }>('/users', s), 0, []);
  const [form, setForm] = useState({ loginName: '', fullName: '', groups: '', password: '' });
  const create = useAction();
  const row = useAction();
  const groupsOf = (text: string) => text.split(',').map((g) => g.trim()).filter((g) => g !== '');
  return (
    <Section title="Users">
      <ErrorBanner error={users.error} />
      <div class="scroll">
        <table data-testid="users">
          <thead>
            <tr>
              <th>Login</th>
              <th>Full name</th>
              <th>Groups</th>
              <th>Status</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {(users.value?.data ?? []).map((u) => (
              <UserRow key={u.loginName} user={u} action={row} reload={users.reload} />
            ))}
          </tbody>
        </table>
      </div>
      <Notice text={row.done} />
      <ErrorBanner error={row.error} />
      <h3>Create a user</h3>
      <form
        class="grid"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run(async () => {
            await sendJson('POST', '/users', { loginName: form.loginName, fullName: form.fullName || form.loginName, groups: groupsOf(form.groups), password: form.password });
            setForm({ loginName: '', fullName: '', groups: '', password: '' });
            users.reload();
            return `User ${form.loginName} created.`;
          });
        }}
      >
        <label>
          Login
          <input name="newLogin" required value={form.loginName} onInput={(e) => setForm({ ...form, loginName: e.currentTarget.value })} />
        </label>
        <label>
          Full name
          <input name="newFullName" value={form.fullName} onInput={(e) => setForm({ ...form, fullName: e.currentTarget.value })} />
        </label>
        <label>
          Groups (comma-separated)
          <input name="newGroups" value={form.groups} onInput={(e) => setForm({ ...form, groups: e.currentTarget.value })} />
        </label>
        <label>
          Password
          <input name="newPassword" type="password" autocomplete="new-password" required value={form.password} onInput={(e) => setForm({ ...form, password: e.currentTarget.value })} />
        </label>
        <div class="row">
          <button type="submit" disabled={create.busy}>
            Create user
          </button>
        </div>
      </form>
      <Notice text={create.done} />
      <ErrorBanner error={create.error} />
    </Section>
  );
}

function UserRow({ user, action, reload }: { user: User; action: ReturnType<typeof useAction>; reload: () => void }) {
  const [password, setPassword] = useState('');
  const [groups, setGroups] = useState(user.groups.join(', '));
  const u = enc(user.loginName);
  return (
    <tr data-login={user.loginName}>
      <td>{user.loginName}</td>
      <td>{user.fullName}</td>
      <td>
        <input aria-label={`Groups of ${user.loginName}`} value={groups} onInput={(e) => setGroups(e.currentTarget.value)} />
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              await sendJson('PUT', `/users/${u}`, { fullName: user.fullName, groups: groups.split(',').map((g) => g.trim()).filter((g) => g !== '') });
              reload();
              return `Groups of ${user.loginName} saved.`;
            })
          }
        >
          Save groups
        </button>
      </td>
      <td>{user.disabled ? 'disabled' : 'enabled'}</td>
      <td class="actions">
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              await request(`/users/${u}/command/${user.disabled ? 'enable' : 'disable'}`, { method: 'POST' });
              reload();
              return `${user.loginName} ${user.disabled ? 'enabled' : 'disabled'}.`;
            })
          }
        >
          {user.disabled ? 'Enable' : 'Disable'}
        </button>
        <input type="password" aria-label={`New password for ${user.loginName}`} placeholder="new password" autocomplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        <button
          type="button"
          disabled={action.busy || password === ''}
          onClick={() =>
            action.run(async () => {
              await sendJson('POST', `/users/${u}/command/reset-password`, { newPassword: password });
              setPassword('');
              return `Password of ${user.loginName} reset.`;
            })
          }
        >
          Reset password
        </button>
      </td>
    </tr>
  );
}

interface Option {
  name: string;
  group: string;
  value: unknown;
  configurationSource: string;
  description: string;
}

function Options() {
  const options = usePoll((s) => getJson<Option[]>('/info/options', s), 0, []);
  const [filter, setFilter] = useState('');
  const shown = (options.value ?? []).filter((o) => filter === '' || o.name.toLowerCase().includes(filter.toLowerCase()));
  return (
    <Section title="Options">
      <ErrorBanner error={options.error} />
      <label>
        Filter
        <input name="optionFilter" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      </label>
      <div class="scroll">
        <table data-testid="options">
          <thead>
            <tr>
              <th>Group</th>
              <th>Name</th>
              <th>Value</th>
              <th>Source</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((o) => (
              <tr key={o.name} title={o.description}>
                <td>{o.group}</td>
                <td>{o.name}</td>
                <td>{typeof o.value === 'object' ? JSON.stringify(o.value) : String(o.value)}</td>
                <td>{o.configurationSource}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Section>
  );
}
