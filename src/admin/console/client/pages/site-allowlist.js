import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, formatTime, Notice, useAction, withWarnings } from '../components.js';
import { Pager } from '../paging.js';

const cidrOf = (entry) => (typeof entry === 'string' ? entry : String(entry?.cidr ?? entry?.entry ?? ''));

/** The addresses a partner's requests may come from; with none, every request is refused (103). */
export function Allowlist({ siteId, entries, can, reload, pager }) {
  const [text, setText] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const add = (event) => {
    event.preventDefault();
    const added = text.split(/[\s,]+/).filter((part) => part !== '');
    void action.run(async () => {
      const answer = await api('POST', `/sites/${encode(siteId)}/allowlist`, { entries: added });
      setText('');
      setDone(withWarnings(`Added ${added.join(', ')}.`, answer));
      await reload();
    });
  };
  const remove = (cidr) => action.run(async () => {
    const answer = await api('DELETE', `/sites/${encode(siteId)}/allowlist/${encode(cidr)}`);
    setDone(withWarnings(`Removed ${cidr}.`, answer));
    await reload();
  });
  return html`
    <section aria-labelledby="allowlist-heading">
      <h2 id="allowlist-heading">Allowlist</h2>
      ${entries.length === 0
        ? html`<p><strong>No address yet:</strong> every request of this site is refused (103) until an address is allowed.</p>`
        : html`<div class="overflow-auto"><table>
            <thead><tr><th scope="col">Address or network</th><th scope="col">Added</th>${can.manage && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
            <tbody>
              ${entries.map((entry) => {
                const cidr = cidrOf(entry);
                return html`<tr key=${cidr}>
                  <td><code>${cidr}</code></td>
                  <td>${formatTime(entry?.createdAt)}</td>
                  ${can.manage && html`<td><button type="button" class="secondary outline" onClick=${() => remove(cidr)} disabled=${action.busy} aria-label=${`Remove ${cidr}`}>Remove</button></td>`}
                </tr>`;
              })}
            </tbody>
          </table></div>`}
      <${Pager} pager=${pager} what="addresses" />
      ${can.manage && html`
        <form onSubmit=${add}>
          <label for="allowlist-add">Add an address or network (CIDR)</label>
          <fieldset role="group">
            <input id="allowlist-add" name="entry" required value=${text} placeholder="203.0.113.0/24" onInput=${(event) => setText(event.currentTarget.value)} />
            <button type="submit" disabled=${action.busy}>Add address</button>
          </fieldset>
        </form>`}
      <${Alert} error=${action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}
