import { useState } from 'preact/hooks';
import { logIn, type Session } from '../api.js';
import { ErrorBanner } from '../ui.js';

export function Login({ onLogIn }: { onLogIn: (session: Session) => void }) {
  const [login, setLogin] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await logIn(login, password);
      setPassword('');
      onLogIn(session);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <form class="card" onSubmit={submit} aria-label="Log in">
        <h1>EventDB</h1>
        <label>
          User
          <input name="login" autocomplete="username" required value={login} onInput={(e) => setLogin(e.currentTarget.value)} autofocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={busy}>
          Log in
        </button>
        <ErrorBanner error={error} />
        <p class="hint">The credentials are kept in this page's memory only: reloading the page asks for them again.</p>
      </form>
    </main>
  );
}
