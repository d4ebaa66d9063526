import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, formatTime, Loading, Notice, PageHeading, useAction, useLoad, withWarnings } from '../components.js';
import { Allowlist } from './site-allowlist.js';
import { Keys } from './site-keys.js';
import { TokenClients } from './site-token-clients.js';
import { usePages } from '../paging.js';

/** Everything about one partner's site: state, addresses, keys, token clients, grace and method. */
export function SitePage({ siteId, can }) {
  const [site, error, reloadSite] = useLoad(() => api('GET', `/sites/${encode(siteId)}`), [siteId]);
  // The site's answer holds its whole allowlist and clients; these lists are read a page at a time.
  const [allowlist, , reloadAllowlist, allowlistPager] = usePages(`/sites/${encode(siteId)}/allowlist`);
  const [clients, , reloadClients, clientsPager] = usePages(`/token-clients?siteId=${encode(siteId)}`);
  const reload = () => Promise.all([reloadSite(), reloadAllowlist(), reloadClients()]);
  if (error) return html`<${PageHeading}>Site ${siteId}</${PageHeading}><${Alert} error=${error} /><p><a href="/">Find a partner</a></p>`;
  if (!site) return html`<${Loading} />`;
  return html`
    <${PageHeading}>${site.name ? `${site.name} · ` : ''}site ${siteId}</${PageHeading}>
    <p class="links">
      <a href=${`/denials?site=${encode(siteId)}`}>Partner says they are blocked</a>
      <a href=${`/audit?site=${encode(siteId)}`}>Audit trail of this site</a>
    </p>
    <${SiteState} siteId=${siteId} site=${site} can=${can} reload=${reload} />
    <${Allowlist} siteId=${siteId} entries=${allowlist?.items ?? site.allowlist ?? []} can=${can} reload=${reload} pager=${allowlistPager} />
    ${can.seeKeys ? html`<${Keys} siteId=${siteId} can=${can} />` : html`<section aria-labelledby="keys-heading"><h2 id="keys-heading">Keys</h2><p>Keys are shown to account managers only.</p></section>`}
    <${TokenClients} siteId=${siteId} clients=${clients?.items ?? site.tokenClients ?? []} can=${can} reload=${reload} pager=${clientsPager} />
    <${Grace} siteId=${siteId} site=${site} can=${can} reload=${reload} />
    <${Method} siteId=${siteId} site=${site} can=${can} reload=${reload} />
  `;
}

function SiteState({ siteId, site, can, reload }) {
  const action = useAction();
  const [done, setDone] = useState('');
  const enabled = site.enabled !== false;
  const toggle = () => action.run(async () => {
    const answer = await api('POST', `/sites/${encode(siteId)}/${enabled ? 'disable' : 'enable'}`);
    setDone(withWarnings(enabled ? 'Site disabled: its requests are refused (101).' : 'Site enabled.', answer));
    await reload();
  });
  return html`
    <section aria-labelledby="state-heading">
      <h2 id="state-heading">State</h2>
      <p>This site is <strong>${enabled ? 'enabled' : 'disabled'}</strong>${site.createdAt ? `, created ${formatTime(site.createdAt)}` : ''}.</p>
      ${can.manage && html`<button type="button" class=${enabled ? 'secondary' : ''} onClick=${toggle} aria-busy=${action.busy} disabled=${action.busy}>${enabled ? 'Disable site' : 'Enable site'}</button>`}
      <${Alert} error=${action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}

function Grace({ siteId, site, can, reload }) {
  const [until, setUntil] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const current = site.graceUntil ?? site.grace?.until ?? null;
  const save = (event) => {
    event.preventDefault();
    void action.run(async () => {
      await api('PUT', `/sites/${encode(siteId)}/grace`, { until: new Date(`${until}T00:00:00Z`).toISOString() });
      setDone('Grace saved.');
      await reload();
    });
  };
  const clear = () => action.run(async () => {
    await api('DELETE', `/sites/${encode(siteId)}/grace`);
    setDone('Grace removed.');
    await reload();
  });
  return html`
    <section aria-labelledby="grace-heading">
      <h2 id="grace-heading">Grace</h2>
      <p>${current ? html`This site's keys keep working after the sunset until <strong>${formatTime(current)}</strong>.` : 'No grace: the sunset applies to this site as to every other.'}</p>
      ${can.manage && html`
        <form onSubmit=${save}>
          <label for="grace-until">Keys keep working until (UTC date)</label>
          <fieldset role="group">
            <input id="grace-until" type="date" required value=${until} onInput=${(event) => setUntil(event.currentTarget.value)} />
            <button type="submit" disabled=${action.busy}>Save grace</button>
          </fieldset>
          ${current && html`<button type="button" class="secondary" onClick=${clear} disabled=${action.busy}>Remove grace</button>`}
        </form>`}
      <${Alert} error=${action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}

function Method({ siteId, site, can, reload }) {
  const current = site.authMethod ?? 'both';
  const [method, setMethod] = useState(current);
  const [done, setDone] = useState('');
  const action = useAction();
  const save = (event) => {
    event.preventDefault();
    void action.run(async () => {
      await api('PUT', `/sites/${encode(siteId)}/auth-method`, { method });
      setDone(`The site now accepts ${method === 'tokens' ? 'access tokens only' : 'API keys and access tokens'}.`);
      await reload();
    });
  };
  const choices = [
    ['both', 'API keys and access tokens'],
    ['tokens', 'Access tokens only (keys refused)'],
  ];
  return html`
    <section aria-labelledby="method-heading">
      <h2 id="method-heading">Method</h2>
      ${can.manage
        ? html`<form onSubmit=${save}>
            <fieldset>
              <legend>What this site accepts</legend>
              ${choices.map(([value, label]) => html`<label><input type="radio" name="method" value=${value} checked=${method === value} onChange=${() => setMethod(value)} /> ${label}</label>`)}
            </fieldset>
            <button type="submit" disabled=${action.busy || method === current}>Save method</button>
          </form>`
        : html`<p>This site accepts <strong>${current === 'tokens' ? 'access tokens only' : 'API keys and access tokens'}</strong>.</p>`}
      <${Alert} error=${action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}
