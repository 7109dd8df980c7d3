/// <reference lib="dom" />
// The dashboard's only script (served as /assets/dashboard.js; no inline script anywhere). Pages are
// rendered by the server; this script keeps them live: on a change event it fetches the page again and
// swaps its regions, so markup always comes from the one server-side renderer (and its escaping).

const body = document.body;
const status = document.getElementById('live-status');

function say(text: string, state: string): void {
  if (!status) return;
  status.textContent = text;
  status.dataset.state = state;
}

/** Which <details> are open, by region and position, so a refresh does not fold what the user opened. */
function openDetails(): Set<string> {
  const open = new Set<string>();
  for (const region of document.querySelectorAll<HTMLElement>('[data-region][id]')) {
    region.querySelectorAll('details').forEach((d, i) => {
      if (d.open) open.add(`${region.id}:${i}`);
    });
  }
  return open;
}

let refreshing: Promise<void> | undefined;
let again = false;

async function refresh(): Promise<void> {
  const response = await fetch(location.href, { headers: { accept: 'text/html' }, cache: 'no-store' });
  // The session ended: load the page for real, which leads to the sign-in.
  if (response.status === 401) return location.reload();
  if (!response.ok) return;
  const next = new DOMParser().parseFromString(await response.text(), 'text/html');
  const open = openDetails();
  const active = document.activeElement;
  for (const fresh of next.querySelectorAll<HTMLElement>('[data-region][id]')) {
    const current = document.getElementById(fresh.id);
    // A region the user is typing in stays as it is until they are done.
    if (!current || (active && active !== document.body && current.contains(active))) continue;
    fresh.querySelectorAll('details').forEach((d, i) => {
      if (open.has(`${fresh.id}:${i}`)) d.open = true;
    });
    current.replaceWith(document.adoptNode(fresh));
  }
  if (next.body.dataset.version !== undefined) body.dataset.version = next.body.dataset.version;
  document.title = next.title;
  say(`updated ${new Date().toLocaleTimeString()}`, 'live');
  document.dispatchEvent(new CustomEvent('dashboard:refreshed'));
}

/** One refresh at a time; changes arriving meanwhile cause one more. */
function scheduleRefresh(): void {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = refresh()
    .catch(() => say('update failed; retrying', 'error'))
    .finally(() => {
      refreshing = undefined;
      if (again) {
        again = false;
        scheduleRefresh();
      }
    });
}

function connect(url: string): void {
  const events = new EventSource(url);
  let dropped = false;
  events.addEventListener('open', () => {
    say('live', 'live');
    // Changes made while disconnected were not sent: look once.
    if (dropped) scheduleRefresh();
    dropped = false;
  });
  events.addEventListener('error', () => {
    dropped = true;
    const closed = events.readyState === EventSource.CLOSED;
    say(closed ? 'offline' : 'reconnecting…', 'error');
    // Refused for good (a session that ended answers 401): a refresh finds out, and signs in again.
    if (closed) scheduleRefresh();
  });
  events.addEventListener('changed', (event) => {
    const change = JSON.parse((event as MessageEvent<string>).data) as { version?: string };
    if (body.dataset.version !== undefined && change.version === body.dataset.version) return;
    scheduleRefresh();
  });
}

const live = body.dataset.live;
if (live) connect(live);

document.addEventListener('click', (event) => {
  const button = (event.target as Element | null)?.closest<HTMLButtonElement>('button[data-copy]');
  if (!button) return;
  const source = document.getElementById(button.dataset.copy ?? '');
  if (!source) return;
  navigator.clipboard.writeText(source.textContent ?? '').then(
    () => {
      button.textContent = 'Copied';
    },
    () => {
      button.textContent = 'Select the text and copy it';
    },
  );
});

// Filters apply as soon as one changes.
for (const select of document.querySelectorAll<HTMLSelectElement>('form.filters select')) {
  select.addEventListener('change', () => select.form?.requestSubmit());
}

document.querySelector<HTMLInputElement>('form.confirm input[name="reason"]')?.focus();
