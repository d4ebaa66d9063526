import { html, useState } from '../preact-htm.js';
import { api, itemsOf } from '../api.js';
import { navigate } from '../router.js';
import { Alert, formatTime, Loading, PageHeading, useLoad } from '../components.js';

/** The filters the page takes from its address, as the API's query parameters of the same names. */
const FILTERS = ['site', 'actor', 'from', 'until', 'action'];
const PAGE_SIZE = '50';

/**
 * Who made the change, each part on its own line: the subject, the e-mail the provider verified, or
 * the CLI's name; an entry from before the parts were kept apart shows its one text, as recorded.
 */
function Actor({ entry }) {
  if (entry.actorKind === 'admin-token') {
    return html`<span class="actor-subject">sub ${entry.actorSubject}</span><br /><span class="actor-email">${entry.actorEmail ?? 'no verified e-mail'}</span>`;
  }
  if (entry.actorKind === 'cli') return html`<span class="actor-subject">CLI user ${entry.actorSubject}</span>`;
  return html`<span class="actor-recorded">${JSON.stringify(entry.actor)} (as recorded, not verified)</span>`;
}

/** Every change as a sentence (who did what to which site, before and after, when), newest first; filtered and paged. */
export function AuditTrail({ query }) {
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query?.get(name) ?? '']));
  const cursor = query?.get('cursor') ?? '';
  const [texts, setTexts] = useState(filters);
  const asked = new URLSearchParams();
  for (const name of FILTERS) if (filters[name] !== '') asked.set(name, filters[name]);
  // A time filter reaches as far back as it says; without one, the API's default window applies.
  if (filters.from === '' && filters.until !== '') asked.set('since', '3650');
  const key = `${asked}|${cursor}`;
  const [loaded, error] = useLoad(async () => ({ key, answer: await api('GET', `/audit?limit=${PAGE_SIZE}&${asked}${cursor === '' ? '' : `&cursor=${encodeURIComponent(cursor)}`}`) }), [key]);
  // The last answer stays until the next arrives: never show one page's entries under another's filters.
  const answer = loaded?.key === key ? loaded.answer : undefined;
  const entries = itemsOf(answer);
  const apply = (event) => {
    event.preventDefault();
    const params = new URLSearchParams();
    for (const name of FILTERS) if (texts[name].trim() !== '') params.set(name, texts[name].trim());
    navigate(`/audit${params.size > 0 ? `?${params}` : ''}`);
  };
  const next = () => {
    const params = new URLSearchParams(asked);
    params.delete('since');
    params.set('cursor', answer.next);
    navigate(`/audit?${params}`);
  };
  const field = (name, label, type = 'text') => html`<label>${label}
    <input name=${name} type=${type} value=${texts[name]} onInput=${(event) => setTexts({ ...texts, [name]: event.currentTarget.value })} />
  </label>`;
  return html`
    <${PageHeading}>Audit trail</${PageHeading}>
    <form onSubmit=${apply}>
      <div class="grid">
        ${field('site', 'Site id')}
        ${field('actor', 'Person (sub or verified e-mail, or part of it)')}
        ${field('action', 'Action (e.g. key, key.revoke)')}
      </div>
      <div class="grid">
        ${field('from', 'From (date, UTC)', 'date')}
        ${field('until', 'Until (date, UTC, included)', 'date')}
      </div>
      <button type="submit">Filter</button>
    </form>
    <${Alert} error=${error} />
    ${answer === undefined && !error ? html`<${Loading} />` : entries.length === 0 ? !error && html`<p>No change matches.</p>` : html`
      <div class="overflow-auto">
        <table>
          <caption>Changes, newest first${cursor === '' ? '' : ' (a later page)'}</caption>
          <thead><tr><th scope="col">What happened</th><th scope="col">Who</th><th scope="col">When</th><th scope="col">Action</th></tr></thead>
          <tbody>
            ${entries.map((entry) => html`<tr key=${entry.id}>
              <td>${entry.summary}</td>
              <td class="actor"><${Actor} entry=${entry} /></td>
              <td class="when">${formatTime(entry.at)}</td>
              <td><code>${entry.action}</code></td>
            </tr>`)}
          </tbody>
        </table>
      </div>
      ${answer?.next && html`<button type="button" class="secondary" onClick=${next}>Next</button>`}`}
  `;
}
