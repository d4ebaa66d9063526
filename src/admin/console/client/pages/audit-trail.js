import { html, useState } from '../preact-htm.js';
import { api, encode, itemsOf } from '../api.js';
import { navigate } from '../router.js';
import { Alert, formatTime, Loading, PageHeading, useAction, useLoad } from '../components.js';

/** Every change, who made it and when, newest first; filtered by site and action. */
export function AuditTrail({ query }) {
  const site = query?.get('site') ?? '';
  const action = query?.get('action') ?? '';
  const [siteText, setSiteText] = useState(site);
  const [actionText, setActionText] = useState(action);
  const filter = () => `${site === '' ? '' : `&site=${encode(site)}`}${action === '' ? '' : `&action=${encode(action)}`}`;
  const [first, error] = useLoad(() => api('GET', `/audit?limit=50${filter()}`), [site, action]);
  const [more, setMore] = useState({ entries: [], next: undefined, for: undefined });
  const older = useAction();
  const key = `${site}|${action}`;
  const entries = [...itemsOf(first), ...(more.for === key ? more.entries : [])];
  const next = more.for === key && more.next !== undefined ? more.next : first?.next;
  const loadOlder = () => older.run(async () => {
    const page = await api('GET', `/audit?limit=50${filter()}&cursor=${encode(next)}`);
    setMore({ entries: [...(more.for === key ? more.entries : []), ...itemsOf(page)], next: page?.next ?? null, for: key });
  });
  const apply = (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    if (siteText.trim() !== '') params.set('site', siteText.trim());
    if (actionText.trim() !== '') params.set('action', actionText.trim());
    navigate(`/audit${params.size > 0 ? `?${params}` : ''}`);
  };
  return html`
    <${PageHeading}>Audit trail</${PageHeading}>
    <form onSubmit=${apply}>
      <div class="grid">
        <label>Site id<input name="site" value=${siteText} onInput=${(event) => setSiteText(event.currentTarget.value)} /></label>
        <label>Action (e.g. key, key.revoke)<input name="action" value=${actionText} onInput=${(event) => setActionText(event.currentTarget.value)} /></label>
      </div>
      <button type="submit">Filter</button>
    </form>
    <${Alert} error=${error} />
    ${first === undefined && !error ? html`<${Loading} />` : entries.length === 0 ? html`<p>No change matches.</p>` : html`
      <div class="overflow-auto">
        <table>
          <caption>Changes, newest first</caption>
          <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Site</th><th scope="col">Details</th></tr></thead>
          <tbody>
            ${entries.map((entry) => html`<tr key=${entry.id}>
              <td class="when">${formatTime(entry.at)}</td>
              <td>${entry.actor}</td>
              <td><code>${entry.action}</code></td>
              <td>${entry.siteId ? html`<a href=${`/sites/${encode(entry.siteId)}`}>${entry.siteId}</a>` : '—'}</td>
              <td><code class="details">${entry.details === null || entry.details === undefined ? '' : JSON.stringify(entry.details)}</code></td>
            </tr>`)}
          </tbody>
        </table>
      </div>
      ${next && html`<button type="button" class="secondary" onClick=${loadOlder} disabled=${older.busy} aria-busy=${older.busy}>Older changes</button>`}
      <${Alert} error=${older.error} />`}
  `;
}
