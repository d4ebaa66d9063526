import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, formatTime, Loading, Notice, PageHeading, useAction } from '../components.js';
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
  const action = useAction();
  const create = (event) => {
    event.preventDefault();
    void action.run(async () => {
      const siteIds = sites.split(/[\s,]+/).filter((part) => part !== '');
      const created = await api('POST', '/brownouts', {
        from: new Date(`${from}Z`).toISOString(),
        until: new Date(`${until}Z`).toISOString(),
        ...(siteIds.length > 0 ? { sites: siteIds } : {}),
        ...(note.trim() === '' ? {} : { note: note.trim() }),
        dryRun,
      });
      await onCreated(created?.brownoutId ?? '');
    });
  };
  return html`
    <form onSubmit=${create}>
      <h2>Schedule a brownout</h2>
      <div class="grid">
        <label>From (UTC)<input type="datetime-local" required value=${from} onInput=${(event) => setFrom(event.currentTarget.value)} /></label>
        <label>Until (UTC)<input type="datetime-local" required value=${until} onInput=${(event) => setUntil(event.currentTarget.value)} /></label>
      </div>
      <label>Sites (ids, empty for every site)<input value=${sites} placeholder="1001, 1002" onInput=${(event) => setSites(event.currentTarget.value)} /></label>
      <label>Note<input value=${note} onInput=${(event) => setNote(event.currentTarget.value)} /></label>
      <label><input type="checkbox" role="switch" checked=${dryRun} onChange=${(event) => setDryRun(event.currentTarget.checked)} /> Dry run: record what would be refused, refuse nothing</label>
      <${Alert} error=${action.error} />
      <button type="submit" disabled=${action.busy}>Schedule brownout</button>
    </form>
  `;
}
