import { html, useEffect, useState } from '../preact-htm.js';
import { api, encode, itemsOf } from '../api.js';
import { navigate } from '../router.js';
import { Alert, formatTime, Loading, PageHeading, useLoad } from '../components.js';

// Digits alone are taken for a site id that does not exist, not for a token client id: partners quote their site id.
const SITE_ID = /^[1-9][0-9]*$/;

/** The page's address for a partner and a period. */
const pageFor = (params) => `/denials?${new URLSearchParams(params)}`;

/** The audit trail filtered to the changes behind a refusal. */
function auditHref(audit) {
  const params = new URLSearchParams();
  if (audit.siteId) params.set('site', audit.siteId);
  params.set('action', audit.action);
  return `/audit?${params}`;
}

/** "Partner X says they are blocked": found by name, site id or token client id; each refusal with why and what next. */
export function DenialReport({ query }) {
  const find = query?.get('find') ?? '';
  const site = query?.get('site') ?? '';
  const client = query?.get('client') ?? '';
  const hours = query?.get('since') ?? '24';
  const [findText, setFindText] = useState(find || site || client);
  const [hoursText, setHoursText] = useState(hours);
  const show = (event) => {
    event.preventDefault();
    navigate(pageFor({ find: findText.trim(), since: hoursText }));
  };
  return html`
    <${PageHeading}>A partner says they are blocked</${PageHeading}>
    <form onSubmit=${show}>
      <div class="grid">
        <label>Partner: name, site id or token client id
          <input name="find" required value=${findText} onInput=${(event) => setFindText(event.currentTarget.value)} />
        </label>
        <label>Refusals of the last
          <select name="since" value=${hoursText} onChange=${(event) => setHoursText(event.currentTarget.value)}>
            <option value="1">hour</option>
            <option value="24">24 hours</option>
            <option value="168">7 days</option>
          </select>
        </label>
      </div>
      <button type="submit">Find the partner</button>
    </form>
    ${site !== '' || client !== ''
      ? html`<${Report} site=${site} client=${client} hours=${hours} />`
      : find !== '' && html`<${Matches} find=${find} hours=${hours} />`}
  `;
}

/** The sites whose id or name matches; one goes straight to its report, none means a token client id. */
function Matches({ find, hours }) {
  const [answer, error] = useLoad(() => api('GET', `/sites?query=${encode(find)}&limit=50`), [find]);
  const sites = itemsOf(answer);
  const exact = sites.find((candidate) => candidate.id === find);
  const only = exact ?? (sites.length === 1 ? sites[0] : undefined);
  useEffect(() => {
    if (answer === undefined) return;
    if (only !== undefined) navigate(pageFor({ site: only.id, since: hours }), { replace: true });
    else if (sites.length === 0 && !SITE_ID.test(find)) navigate(pageFor({ client: find, since: hours }), { replace: true });
  }, [answer]);
  if (error) return html`<${Alert} error=${error} />`;
  if (answer !== undefined && sites.length === 0 && SITE_ID.test(find)) return html`<p>No site has the id or a name with “${find}”.</p>`;
  if (answer === undefined || only !== undefined || sites.length === 0) return html`<${Loading} />`;
  return html`
    <p>${sites.length} partners match “${find}”: choose one.</p>
    <ul>
      ${sites.map((candidate) => html`<li key=${candidate.id}>
        <a href=${pageFor({ site: candidate.id, since: hours })}>${candidate.id} ${candidate.name}</a>
      </li>`)}
    </ul>
  `;
}

function Whom({ answer, site, client }) {
  if (answer.site && client === '') {
    const { siteId, name, enabled, authMethod } = answer.site;
    return html`<h2>Site ${siteId}${name ? ` (${name})` : ''}</h2>
      <p>${enabled ? 'Enabled' : 'Disabled'}, accepting ${authMethod === 'tokens' ? 'access tokens only' : 'API keys and access tokens'}. <a href=${`/sites/${encode(siteId)}`}>The site's page</a></p>`;
  }
  if (answer.client) {
    const registered = answer.client.siteId;
    return html`<h2>Token client ${answer.client.clientId}</h2>
      <p>${registered === null ? 'Registered for no site.' : html`Registered for <a href=${`/sites/${encode(registered)}`}>site ${registered}</a>.`}</p>`;
  }
  return html`<h2>${site !== '' ? `Site ${site}` : `Client ${client}`}</h2>`;
}

function Explained({ item }) {
  return html`
    <p class="reason">${item.reason}</p>
    <p class="next-step"><strong>Next step:</strong> ${item.nextStep}</p>
    ${item.audit && html`<p><a href=${auditHref(item.audit)}>The changes behind it in the audit trail</a></p>`}
  `;
}

/** Where a refusal came from: an address, or a token client (marked when only the token said so). */
function fromWhom(row) {
  if (row.clientId !== null && row.clientId !== undefined) return html`client <code>${row.clientId}</code>${row.signed === false ? ' (unverified)' : ''}`;
  return html`<code>${row.clientIp}</code>${row.moreAddresses > 0 ? ` (${row.moreAddresses} addresses)` : ''}`;
}

function kindOf(row) {
  if (row.shadow) return 'shadow (allowed)';
  if (row.rehearsal) return 'brownout rehearsal';
  return 'refused';
}

function Report({ site, client, hours }) {
  const params = new URLSearchParams({ since: hours, limit: '200' });
  if (site !== '') params.set('site', site);
  if (client !== '') params.set('client', client);
  const [answer, error] = useLoad(() => api('GET', `/reports/denials?${params}`), [site, client, hours]);
  if (error) return html`<${Alert} error=${error} />`;
  if (answer === undefined) return html`<${Loading} />`;
  const rows = itemsOf(answer);
  const notes = answer.notes ?? [];
  return html`
    <${Whom} answer=${answer} site=${site} client=${client} />
    ${notes.length > 0 && html`<section aria-label="What refuses this partner now">
      ${notes.map((note, index) => html`<article key=${index} class="note"><${Explained} item=${note} /></article>`)}
    </section>`}
    ${rows.length === 0
      ? html`<p>No refusal in this period: the partner's requests do not reach us, or carry another site id or client.</p>`
      : html`<div class="overflow-auto">
          <table>
            <caption>Refusals, most first, with why and what to do</caption>
            <thead><tr><th scope="col">Refusal</th><th scope="col">From</th><th scope="col">Refusals</th><th scope="col">Last seen</th><th scope="col">Why, and what next</th></tr></thead>
            <tbody>
              ${rows.map((row, index) => html`<tr key=${index}>
                <td>${row.errorId} ${row.code}${row.rule ? ` (${row.rule})` : ''}<br /><small>${kindOf(row)}</small></td>
                <td>${fromWhom(row)}</td>
                <td>${row.count}</td>
                <td>${formatTime(row.lastSeen)}</td>
                <td>${row.reason === null ? '—' : html`<${Explained} item=${row} />`}</td>
              </tr>`)}
            </tbody>
          </table>
        </div>`}
    ${answer.omittedRows > 0 && html`<p>${answer.omittedRows} smaller rows were left out.</p>`}
  `;
}
