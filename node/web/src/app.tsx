import { Component, type ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { logOut, message, type Session } from './api.js';
import { Admin } from './pages/admin.js';
import { Dashboard } from './pages/dashboard.js';
import { Login } from './pages/login.js';
import { Projections } from './pages/projections.js';
import { Streams } from './pages/streams.js';
import { Subscriptions } from './pages/subscriptions.js';
import { useHashRoute } from './ui.js';

const PAGES = [
  { path: '/dashboard', label: 'Dashboard' },
  { path: '/streams', label: 'Streams' },
  { path: '/projections', label: 'Projections' },
  { path: '/subscriptions', label: 'Subscriptions' },
  { path: '/admin', label: 'Admin', operatorOnly: true },
] as const;

export function App() {
  const [session, setSession] = useState<Session | undefined>(undefined);
  const route = useHashRoute();
  if (session === undefined) return <Login onLogIn={setSession} />;
  const [, top = 'dashboard', ...rest] = route.split('/');
  const pages = PAGES.filter((p) => !('operatorOnly' in p) || session.operator);
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">EventDB</span>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a href={`#${p.path}`} aria-current={p.path === `/${top}` ? 'page' : undefined}>
              {p.label}
            </a>
          ))}
        </nav>
        <span class="who">
          {session.login}
          <button
            type="button"
            class="link"
            onClick={() => {
              logOut();
              setSession(undefined);
            }}
          >
            Log out
          </button>
        </span>
      </header>
      <main>
        <Boundary key={top}>
          <Page top={top} rest={rest.map(decodeURIComponent)} session={session} />
        </Boundary>
      </main>
    </div>
  );
}

function Page({ top, rest, session }: { top: string; rest: string[]; session: Session }) {
  switch (top) {
    case 'dashboard':
      return <Dashboard session={session} />;
    case 'streams':
      return <Streams path={rest} session={session} />;
    case 'projections':
      return <Projections path={rest} session={session} />;
    case 'subscriptions':
      return <Subscriptions path={rest} session={session} />;
    case 'admin':
      return session.operator ? <Admin session={session} /> : <p class="error">Only $ops and $admins see this page.</p>;
    default:
      return <p class="error">No page at #{'/' + top}.</p>;
  }
}

/** A page that throws while rendering shows the error instead of a blank page. */
class Boundary extends Component<{ children: ComponentChildren }, { error?: unknown }> {
  override state: { error?: unknown } = {};
  override componentDidCatch(error: unknown) {
    this.setState({ error });
  }
  override render() {
    if (this.state.error !== undefined)
      return (
        <p class="error" role="alert">
          This page failed: {message(this.state.error)}
        </p>
      );
    return this.props.children;
  }
}
