import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import {
  Alert,
  ConfirmDialog,
  FieldError,
  formError,
  counted,
  formatSecond,
  formatTime,
  inTheLast,
  InstantInput,
  instantFields,
  instantOf,
  invalidIf,
  Loading,
  Notice,
  NOTHING_CHANGED,
  PageHeading,
  useAction,
  useLoad,
  useSiteImpact,
  withWarnings,
} from '../components.js';
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
  const [confirming, setConfirming] = useState(false);
  const enabled = site.enabled !== false;
  const toggle = () => action.run(async () => {
    const answer = await api('POST', `/sites/${encode(siteId)}/${enabled ? 'disable' : 'enable'}`);
    setConfirming(false);
    setDone(withWarnings(enabled ? 'Site disabled: its requests are refused (101).' : 'Site enabled.', answer));
    await reload();
  });
  return html`
    <section aria-labelledby="state-heading">
      <h2 id="state-heading">State</h2>
      <p>This site is <strong>${enabled ? 'enabled' : 'disabled'}</strong>${site.createdAt ? `, created ${formatTime(site.createdAt)}` : ''}.</p>
      ${can.manage && html`<button type="button" class=${enabled ? 'secondary' : ''} onClick=${() => (enabled ? setConfirming(true) : toggle())} aria-busy=${action.busy} disabled=${action.busy}>${enabled ? 'Disable site' : 'Enable site'}</button>`}
      ${confirming && html`<${DisableDialog} siteId=${siteId} action=${action} onConfirm=${toggle} onCancel=${() => setConfirming(false)} />`}
      ${!confirming && html`<${Alert} error=${action.error} />`}
      <${Notice} text=${done} />
    </section>
  `;
}

function DisableDialog({ siteId, action, onConfirm, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  return html`<${ConfirmDialog} title=${`Disable site ${siteId}?`} confirmLabel="Disable site" typed=${siteId} ready=${impact !== undefined}
      busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined ? html`<${Loading} />` : html`<p>Site ${siteId} sent <strong>${counted(impact.keyRequests, 'API-key request')}</strong> and <strong>${counted(impact.tokenRequests, 'access-token request')}</strong> ${inTheLast(impact)}.
      Disabling it refuses every one of its requests (101) until it is enabled again; its ${counted(impact.activeKeys, 'active key')}, ${counted(impact.allowlistSize, 'address', 'addresses')} and ${counted(impact.tokenClients, 'token client')} are kept.</p>`}
  </${ConfirmDialog}>`;
}

/** The grace to the second, prefilled: saving it unchanged sends nothing. */
function Grace({ siteId, site, can, reload }) {
  const current = site.graceUntil ?? site.grace?.until ?? null;
  const [until, setUntil] = useState(instantFields(current));
  const [done, setDone] = useState('');
  const action = useAction();
  const save = (event) => {
    event.preventDefault();
    const instant = instantOf(until);
    if (current !== null && instant === Date.parse(current)) {
      setDone(NOTHING_CHANGED);
      return;
    }
    void action.run(async () => {
      await api('PUT', `/sites/${encode(siteId)}/grace`, { until: Number.isNaN(instant) ? `${until.date}T${until.time}Z` : new Date(instant).toISOString() });
      setDone('Grace saved.');
      await reload();
    });
  };
  const clear = () => action.run(async () => {
    await api('DELETE', `/sites/${encode(siteId)}/grace`);
    setDone('Grace removed.');
    setUntil(instantFields(null));
    await reload();
  });
  return html`
    <section aria-labelledby="grace-heading">
      <h2 id="grace-heading">Grace</h2>
      <p>${current ? html`This site's keys keep working after the sunset until <strong>${formatSecond(current)}</strong>.` : 'No grace: the sunset applies to this site as to every other.'}</p>
      ${can.manage && html`
        <form onSubmit=${save}>
          <${InstantInput} id="grace-until" label="Keys keep working until (UTC)" value=${until} onChange=${setUntil} required=${true} invalid=${invalidIf(action.error, 'until', 'grace-until-error')} />
          <${FieldError} error=${action.error} field="until" id="grace-until-error" />
          <button type="submit" disabled=${action.busy}>Save grace</button>
          ${current && html` <button type="button" class="secondary" onClick=${clear} disabled=${action.busy}>Remove grace</button>`}
        </form>`}
      <${Alert} error=${can.manage ? formError(action.error, 'until') : action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}

function Method({ siteId, site, can, reload }) {
  const current = site.authMethod ?? 'both';
  const [method, setMethod] = useState(current);
  const [confirming, setConfirming] = useState(false);
  const [done, setDone] = useState('');
  const action = useAction();
  const change = () => action.run(async () => {
    await api('PUT', `/sites/${encode(siteId)}/auth-method`, { method });
    setConfirming(false);
    setDone(`The site now accepts ${method === 'tokens' ? 'access tokens only' : 'API keys and access tokens'}.`);
    await reload();
  });
  const save = (event) => {
    event.preventDefault();
    if (method === current) setDone(NOTHING_CHANGED);
    else if (method === 'tokens') setConfirming(true);
    else void change();
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
      ${confirming && html`<${TokensOnlyDialog} siteId=${siteId} action=${action} onConfirm=${change} onCancel=${() => setConfirming(false)} />`}
      ${!confirming && html`<${Alert} error=${action.error} />`}
      <${Notice} text=${done} />
    </section>
  `;
}

function TokensOnlyDialog({ siteId, action, onConfirm, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  return html`<${ConfirmDialog} title=${`Switch site ${siteId} to access tokens only?`} confirmLabel="Switch to tokens only" ready=${impact !== undefined}
      busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined ? html`<${Loading} />` : html`<p>Site ${siteId} sent <strong>${counted(impact.keyRequests, 'API-key request')}</strong> ${inTheLast(impact)}; switching it to tokens only refuses them (error 105).
      Its ${counted(impact.activeKeys, 'active key')} stop working; its ${counted(impact.tokenRequests, 'access-token request')} from ${counted(impact.tokenClients, 'token client')} go on as before.</p>`}
  </${ConfirmDialog}>`;
}
