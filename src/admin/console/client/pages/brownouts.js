import { html, useState } from '../preact-htm.js';
import { api, encode, itemsOf } from '../api.js';
import { Alert, ConfirmDialog, counted, FieldError, formError, formatTime, inTheLast, invalidIf, Loading, Notice, PageHeading, useAction, useLoad } from '../components.js';
import { Pager, usePages } from '../paging.js';

/** Planned refusals of API keys before the sunset; an admin schedules and cancels them. */
export function Brownouts({ can }) {
  const [page, error, reload, pager] = usePages('/brownouts');
  const brownouts = page?.items;
  const [done, setDone] = useState('');
  const action = useAction();
  const cancel = (id) => action.run(async () => {
    await api('POST', `/brownouts/${encode(id)}/cancel`);
    setDone(`Brownout ${id} cancelled.`);
    await reload();
  });
  return html`
    <${PageHeading}>Brownouts</${PageHeading}>
    <${Alert} error=${error} />
    ${brownouts === undefined && !error ? html`<${Loading} />` : brownouts && brownouts.length === 0 ? html`<p>No brownout is planned.</p>` : brownouts && html`
      <div class="overflow-auto">
        <table>
          <thead><tr><th scope="col">Id</th><th scope="col">From</th><th scope="col">Until</th><th scope="col">Sites</th><th scope="col">State</th><th scope="col">Note</th>${can.administer && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
          <tbody>
            ${brownouts.map((brownout) => html`<tr key=${brownout.brownoutId}>
              <td>${brownout.brownoutId}</td>
              <td>${formatTime(brownout.from)}</td>
              <td>${formatTime(brownout.until)}</td>
              <td>${brownout.siteIds ? brownout.siteIds.join(', ') : 'every site'}</td>
              <td>${brownout.state}${brownout.dryRun ? ' (dry run)' : ''}</td>
              <td>${brownout.note || '—'}</td>
              ${can.administer && html`<td>${brownout.state === 'scheduled' || brownout.state === 'running'
                ? html`<button type="button" class="secondary" onClick=${() => cancel(brownout.brownoutId)} disabled=${action.busy}>Cancel brownout ${brownout.brownoutId}</button>`
                : ''}</td>`}
            </tr>`)}
          </tbody>
        </table>
      </div>`}
    <${Pager} pager=${pager} what="brownouts" />
    <${Alert} error=${action.error} />
    <${Notice} text=${done} />
    ${can.administer ? html`<${NewBrownout} onCreated=${async (id) => { setDone(`Brownout ${id} scheduled.`); await reload(); }} />` : html`<p>Only an admin schedules brownouts.</p>`}
  `;
}

function NewBrownout({ onCreated }) {
  const [from, setFrom] = useState('');
  const [until, setUntil] = useState('');
  const [sites, setSites] = useState('');
  const [note, setNote] = useState('');
  const [dryRun, setDryRun] = useState(false);
  const [pending, setPending] = useState(undefined);
  const action = useAction();
  const review = (event) => {
    event.preventDefault();
    const siteIds = sites.split(/[\s,]+/).filter((part) => part !== '');
    setPending({
      from: new Date(`${from}Z`).toISOString(),
      until: new Date(`${until}Z`).toISOString(),
      ...(siteIds.length > 0 ? { sites: siteIds } : {}),
      ...(note.trim() === '' ? {} : { note: note.trim() }),
      dryRun,
    });
  };
  const create = () => action.run(async () => {
    let created;
    try {
      created = await api('POST', '/brownouts', pending);
    } catch (error) {
      // A refused field is shown beside its input, which the dialog would cover.
      if (error?.field !== undefined) setPending(undefined);
      throw error;
    }
    setPending(undefined);
    await onCreated(created?.brownoutId ?? '');
  });
  const cancel = () => {
    setPending(undefined);
    action.setError(undefined);
  };
  return html`
    <form onSubmit=${review}>
      <h2>Schedule a brownout</h2>
      <div class="grid">
        <div>
          <label>From (UTC)<input type="datetime-local" required value=${from} onInput=${(event) => setFrom(event.currentTarget.value)} ...${invalidIf(action.error, 'from', 'brownout-from-error')} /></label>
          <${FieldError} error=${action.error} field="from" id="brownout-from-error" />
        </div>
        <div>
          <label>Until (UTC)<input type="datetime-local" required value=${until} onInput=${(event) => setUntil(event.currentTarget.value)} ...${invalidIf(action.error, 'until', 'brownout-until-error')} /></label>
          <${FieldError} error=${action.error} field="until" id="brownout-until-error" />
        </div>
      </div>
      <label>Sites (ids, empty for every site)<input value=${sites} placeholder="1001, 1002" onInput=${(event) => setSites(event.currentTarget.value)} ...${invalidIf(action.error, 'sites', 'brownout-sites-error')} /></label>
      <${FieldError} error=${action.error} field="sites" id="brownout-sites-error" />
      <label>Note<input value=${note} onInput=${(event) => setNote(event.currentTarget.value)} ...${invalidIf(action.error, 'note', 'brownout-note-error')} /></label>
      <${FieldError} error=${action.error} field="note" id="brownout-note-error" />
      <label><input type="checkbox" role="switch" checked=${dryRun} onChange=${(event) => setDryRun(event.currentTarget.checked)} /> Dry run: record what would be refused, refuse nothing</label>
      ${pending === undefined && html`<${Alert} error=${formError(action.error, ['from', 'until', 'sites', 'note'])} />`}
      <button type="submit" disabled=${action.busy}>Schedule brownout</button>
    </form>
    ${pending && html`<${BrownoutDialog} brownout=${pending} action=${action} onConfirm=${create} onCancel=${cancel} />`}
  `;
}

/** Whom the brownout refuses, counted by the service (GET /brownouts/impact); every site asks for the words typed. */
function BrownoutDialog({ brownout, action, onConfirm, onCancel }) {
  const query = new URLSearchParams({ from: brownout.from, ...(brownout.sites ? { sites: brownout.sites.join(',') } : {}) });
  const [impact, error] = useLoad(() => api('GET', `/brownouts/impact?${query}`), [query.toString()]);
  const everySite = brownout.sites === undefined;
  const whom = everySite ? 'every site' : `sites ${brownout.sites.join(', ')}`;
  const when = `from ${formatTime(brownout.from)} until ${formatTime(brownout.until)}`;
  return html`<${ConfirmDialog} title=${brownout.dryRun ? `Rehearse a brownout for ${whom}?` : `Refuse API keys for ${whom}?`}
      confirmLabel=${brownout.dryRun ? 'Schedule dry run' : 'Schedule brownout'} typed=${everySite && !brownout.dryRun ? 'every site' : undefined}
      ready=${impact !== undefined} busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined
      ? html`<${Loading} />`
      : brownout.dryRun
        ? html`<p>A dry run refuses nobody: ${when} it records the requests it would refuse of <strong>${counted(impact.sites, 'site')}</strong> that accept API keys (${counted(impact.sitesUsingKeys, 'site')} sent ${counted(impact.keyRequests, 'API-key request')} ${inTheLast(impact)}).</p>`
        : html`<p><strong>This brownout refuses API keys for ${counted(impact.sites, 'site')}</strong> ${when} (error 105): ${counted(impact.sitesUsingKeys, 'site')} of them sent ${counted(impact.keyRequests, 'API-key request')} ${inTheLast(impact)}.
            Sites on tokens only and sites in grace are not affected; their access tokens keep working.</p>`}
  </${ConfirmDialog}>`;
}
