import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { navigate } from '../router.js';
import { Alert, FieldError, formError, invalidIf, Loading, PageHeading, siteIdOf, useAction, useLoad } from '../components.js';
import { Pager, usePages } from '../paging.js';

/** Search sites by id or name; an account manager also creates one here (onboarding starts with a site). */
export function FindPartner({ query, can }) {
  const initial = query?.get('query') ?? '';
  const [text, setText] = useState(initial);
  const [page, error, , pager] = usePages(`/sites?query=${encode(initial)}`);
  const sites = page?.items;

  const search = (event) => {
    event.preventDefault();
    navigate(text.trim() === '' ? '/' : `/?query=${encode(text.trim())}`);
  };

  return html`
    <${PageHeading}>Find a partner</${PageHeading}>
    <search>
    <form onSubmit=${search}>
      <label for="site-query">Site id or partner name</label>
      <fieldset role="group">
        <input id="site-query" name="query" type="search" value=${text} onInput=${(event) => setText(event.currentTarget.value)} placeholder="1001 or Acme" />
        <button type="submit">Search</button>
      </fieldset>
    </form>
    </search>
    ${can.manage && html`<${NewSite} />`}
    <${Alert} error=${error} />
    ${sites === undefined && !error ? html`<${Loading} />` : html`<${SiteTable} sites=${sites ?? []} />`}
    <${Pager} pager=${pager} what="sites" />
  `;
}

function SiteTable({ sites }) {
  if (sites.length === 0) return html`<p>No site matches.</p>`;
  return html`
    <div class="overflow-auto">
      <table>
        <caption class="visually-hidden">Sites found</caption>
        <thead><tr><th scope="col">Site</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Method</th><th scope="col">Active keys</th><th scope="col">Allowlist</th></tr></thead>
        <tbody>
          ${sites.map((site) => {
            const id = siteIdOf(site);
            return html`<tr key=${id}>
              <td><a href=${`/sites/${encode(id)}`}>${id}</a></td>
              <td>${site.name || '—'}</td>
              <td>${site.enabled === false ? 'disabled' : 'enabled'}</td>
              <td>${site.authMethod ?? '—'}</td>
              <td>${site.activeKeys ?? '—'}</td>
              <td>${site.allowlistSize ?? site.allowlistEntries ?? '—'}</td>
            </tr>`;
          })}
        </tbody>
      </table>
    </div>
  `;
}

/** An account manager's first step for a new partner. */
function NewSite() {
  const [id, setId] = useState('');
  const [name, setName] = useState('');
  const action = useAction();
  const create = (event) => {
    event.preventDefault();
    void action.run(async () => {
      const site = await api('POST', '/sites', { id: id.trim(), ...(name.trim() === '' ? {} : { name: name.trim() }) });
      navigate(`/sites/${encode(siteIdOf(site) || id.trim())}`);
    });
  };
  return html`
    <details>
      <summary>New site</summary>
      <form onSubmit=${create}>
        <div class="grid">
          <div>
            <label>Site id<input name="siteId" required inputmode="numeric" value=${id} onInput=${(event) => setId(event.currentTarget.value)} ...${invalidIf(action.error, 'id', 'new-site-id-error')} /></label>
            <${FieldError} error=${action.error} field="id" id="new-site-id-error" />
          </div>
          <div>
            <label>Partner name<input name="name" value=${name} onInput=${(event) => setName(event.currentTarget.value)} ...${invalidIf(action.error, 'name', 'new-site-name-error')} /></label>
            <${FieldError} error=${action.error} field="name" id="new-site-name-error" />
          </div>
        </div>
        <${Alert} error=${formError(action.error, ['id', 'name'])} />
        <button type="submit" aria-busy=${action.busy} disabled=${action.busy}>Create site</button>
      </form>
    </details>
  `;
}
