import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { navigate } from '../router.js';
import { Alert, formatTime, Loading, PageHeading, useLoad } from '../components.js';

/** Error id → its stable code (IP_NOT_WHITELISTED…), from the service's own error catalogue. */
const errorCodes = fetch('/console/error-codes.json').then((response) => (response.ok ? response.json() : {}), () => ({}));

/** The report's rows, the most refusals first. */
function reportRows(answer) {
  const rows = Array.isArray(answer) ? answer : answer?.rows ?? answer?.items ?? [];
  return [...rows].sort((a, b) => (b.count ?? 0) - (a.count ?? 0));
}

/** "Partner X says they are blocked": a site's refusals, by error and client address. */
export function DenialReport({ query }) {
  const site = query?.get('site') ?? '';
  const hours = query?.get('since') ?? '24';
  const [siteText, setSiteText] = useState(site);
  const [hoursText, setHoursText] = useState(hours);
  const [answer, error] = useLoad(
    () => (site === '' ? Promise.resolve(undefined) : api('GET', `/reports/denials?site=${encode(site)}&since=${encode(hours)}&limit=200`)),
    [site, hours],
  );
  const [codes] = useLoad(() => errorCodes, []);
  const named = (id) => `${id}${codes?.[id] ? ` ${codes[id]}` : ''}`;
  const show = (event) => {
    event.preventDefault();
    navigate(`/denials?site=${encode(siteText.trim())}&since=${encode(hoursText)}`);
  };
  const rows = reportRows(answer);
  return html`
    <${PageHeading}>A partner says they are blocked</${PageHeading}>
    <form onSubmit=${show}>
      <div class="grid">
        <label>Site id<input name="site" required value=${siteText} onInput=${(event) => setSiteText(event.currentTarget.value)} /></label>
        <label>Refusals of the last
          <select name="since" value=${hoursText} onChange=${(event) => setHoursText(event.currentTarget.value)}>
            <option value="1">hour</option>
            <option value="24">24 hours</option>
            <option value="168">7 days</option>
          </select>
        </label>
      </div>
      <button type="submit">Show refusals</button>
    </form>
    <${Alert} error=${error} />
    ${site !== '' && answer === undefined && !error && html`<${Loading} />`}
    ${answer !== undefined && (rows.length === 0
      ? html`<p>No refusal for site ${site} in this period: the partner's requests do not reach us, or carry another site id.</p>`
      : html`<${ByError} rows=${rows} named=${named} />
        <div class="overflow-auto">
          <table>
            <caption>Refusals for site ${site}, most first</caption>
            <thead><tr><th scope="col">Error</th><th scope="col">Client address</th><th scope="col">Refusals</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Kind</th></tr></thead>
            <tbody>
              ${rows.map((row, index) => html`<tr key=${index}>
                <td>${named(row.errorId)}</td>
                <td><code>${row.clientIp}</code>${row.moreAddresses > 0 ? ` and ${row.moreAddresses} more addresses` : ''}</td>
                <td>${row.count}</td>
                <td>${formatTime(row.firstSeen)}</td>
                <td>${formatTime(row.lastSeen)}</td>
                <td>${row.shadow ? 'shadow (allowed)' : row.rehearsal ? 'brownout rehearsal' : 'refused'}</td>
              </tr>`)}
            </tbody>
          </table>
        </div>
        ${answer?.omittedRows > 0 && html`<p>${answer.omittedRows} smaller rows were left out.</p>`}`)}
  `;
}

function ByError({ rows, named }) {
  const totals = new Map();
  for (const row of rows) totals.set(row.errorId, (totals.get(row.errorId) ?? 0) + (row.count ?? 0));
  const sorted = [...totals].sort((a, b) => b[1] - a[1]);
  return html`<p>By error: ${sorted.map(([id, count], index) => html`${index > 0 ? ', ' : ''}<strong>${named(id)}</strong> ${count} refusals`)}.</p>`;
}
