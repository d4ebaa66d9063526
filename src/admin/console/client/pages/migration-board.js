import { html, useState } from '../preact-htm.js';
import { encode, itemsOf } from '../api.js';
import { Alert, formatTime, Loading, PageHeading, percent, warningsOf } from '../components.js';
import { Pager, usePages } from '../paging.js';

const BAR_HEIGHT = 22;
const LABEL_WIDTH = 150;
const CHART_WIDTH = 520;

/** The migration report's per-site rows, whatever list the API wraps them in. */
function siteRows(answer) {
  if (answer && Array.isArray(answer.sites)) return answer.sites;
  return itemsOf(answer);
}

/** Per site: how much traffic is on tokens already, when a key was last used, and the days left. */
export function MigrationBoard() {
  const [days, setDays] = useState('30');
  const [answer, error, , pager] = usePages(`/reports/migration?sites=true&since=${encode(days)}`);
  const rows = answer === undefined ? undefined : siteRows(answer);
  return html`
    <${PageHeading}>Migration board</${PageHeading}>
    <label for="migration-since">Traffic of the last</label>
    <select id="migration-since" class="narrow" value=${days} onChange=${(event) => setDays(event.currentTarget.value)}>
      <option value="7">7 days</option>
      <option value="30">30 days</option>
      <option value="90">90 days</option>
    </select>
    <${Alert} error=${error} />
    ${warningsOf(answer).map((warning) => html`<p role="status" class="notice">Warning: ${warning}.</p>`)}
    ${rows === undefined && !error
      ? html`<${Loading} />`
      : rows && rows.length === 0
        ? html`<p>No site has traffic in this period.</p>`
        : rows && html`<div class="board">
            <${ShareChart} rows=${rows} />
            <${BoardTable} rows=${rows} />
          </div>`}
    <${Pager} pager=${pager} what="sites" />
  `;
}

/** Drawn by the page as SVG; hidden from screen readers, which read the table beside it. */
function ShareChart({ rows }) {
  const height = rows.length * (BAR_HEIGHT + 8) + 24;
  const barWidth = CHART_WIDTH - LABEL_WIDTH - 50;
  return html`
    <figure class="chart">
      <svg viewBox=${`0 0 ${CHART_WIDTH} ${height}`} width="100%" aria-hidden="true" focusable="false">
        ${rows.map((row, index) => {
          const y = index * (BAR_HEIGHT + 8) + 4;
          const share = typeof row.tokenShare === 'number' ? row.tokenShare : 0;
          const label = `${row.siteId}${row.siteName ? ` ${row.siteName}` : ''}`;
          return html`<g key=${row.siteId}>
            <text x=${LABEL_WIDTH - 8} y=${y + BAR_HEIGHT * 0.7} text-anchor="end" class="chart-label">${label.length > 20 ? `${label.slice(0, 19)}…` : label}</text>
            <rect x=${LABEL_WIDTH} y=${y} width=${barWidth} height=${BAR_HEIGHT} class="chart-track" />
            <rect x=${LABEL_WIDTH} y=${y} width=${Math.max(0, Math.min(1, share)) * barWidth} height=${BAR_HEIGHT} class="chart-bar" />
            <text x=${LABEL_WIDTH + barWidth + 6} y=${y + BAR_HEIGHT * 0.7} class="chart-label">${percent(row.tokenShare)}</text>
          </g>`;
        })}
        <text x=${LABEL_WIDTH} y=${height - 4} class="chart-axis">share of requests on access tokens</text>
      </svg>
      <figcaption>Share of each site's requests on access tokens (the table has the same figures).</figcaption>
    </figure>
  `;
}

function BoardTable({ rows }) {
  return html`
    <div class="overflow-auto">
      <table>
        <caption>Migration from API keys to access tokens, per site</caption>
        <thead><tr><th scope="col">Site</th><th scope="col">Method</th><th scope="col">On tokens</th><th scope="col">Token requests</th><th scope="col">Key requests</th><th scope="col">Last key use</th><th scope="col">Days left</th><th scope="col">Tokens only would refuse</th></tr></thead>
        <tbody>
          ${rows.map((row) => html`<tr key=${row.siteId}>
            <th scope="row"><a href=${`/sites/${encode(row.siteId)}`}>${row.siteId}</a>${row.siteName ? ` ${row.siteName}` : ''}</th>
            <td>${row.authMethod ?? '—'}</td>
            <td>${percent(row.tokenShare)}</td>
            <td>${row.tokenRequests ?? '—'}</td>
            <td>${row.keyRequests ?? '—'}</td>
            <td>${formatTime(row.lastKeyUseAt)}</td>
            <td>${row.daysLeft ?? '—'}</td>
            <td>${row.wouldRefuseOnTokens ? html`<mark>yes: keys in use</mark>` : 'no'}</td>
          </tr>`)}
        </tbody>
      </table>
    </div>
  `;
}
