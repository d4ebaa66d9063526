import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, formatTime, Notice, useAction } from '../components.js';

/** The OAuth clients whose access tokens stand for this site. */
export function TokenClients({ siteId, clients, can, reload }) {
  const [clientId, setClientId] = useState('');
  const [note, setNote] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const add = (event) => {
    event.preventDefault();
    void action.run(async () => {
      await api('POST', `/sites/${encode(siteId)}/token-clients`, { clientId: clientId.trim(), ...(note.trim() === '' ? {} : { note: note.trim() }) });
      setDone(`Token client ${clientId.trim()} added.`);
      setClientId('');
      setNote('');
      await reload();
    });
  };
  const remove = (id) => action.run(async () => {
    await api('DELETE', `/token-clients/${encode(id)}`);
    setDone(`Token client ${id} removed.`);
    await reload();
  });
  const revokeTokens = () => action.run(async () => {
    await api('POST', `/sites/${encode(siteId)}/revoke-tokens`);
    setDone('Every access token issued so far for this site is refused from now on.');
    await reload();
  });
  return html`
    <section aria-labelledby="clients-heading">
      <h2 id="clients-heading">Token clients</h2>
      ${clients.length === 0
        ? html`<p>No token client: this partner has no access tokens yet.</p>`
        : html`<div class="overflow-auto"><table>
            <thead><tr><th scope="col">Client id</th><th scope="col">Note</th><th scope="col">Last used</th>${can.manage && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
            <tbody>
              ${clients.map((client) => html`<tr key=${client.clientId}>
                <td><code>${client.clientId}</code></td>
                <td>${client.note || '—'}</td>
                <td>${formatTime(client.lastUsedAt)}</td>
                ${can.manage && html`<td><button type="button" class="secondary outline" onClick=${() => remove(client.clientId)} disabled=${action.busy} aria-label=${`Remove token client ${client.clientId}`}>Remove</button></td>`}
              </tr>`)}
            </tbody>
          </table></div>`}
      ${can.manage && html`
        <form onSubmit=${add}>
          <div class="grid">
            <label>Client id<input name="clientId" required value=${clientId} onInput=${(event) => setClientId(event.currentTarget.value)} /></label>
            <label>Note<input name="note" value=${note} onInput=${(event) => setNote(event.currentTarget.value)} /></label>
          </div>
          <button type="submit" disabled=${action.busy}>Add token client</button>
          ${clients.length > 0 && html` <button type="button" class="secondary" onClick=${revokeTokens} disabled=${action.busy}>Refuse tokens issued so far</button>`}
        </form>`}
      <${Alert} error=${action.error} />
      <${Notice} text=${done} />
    </section>
  `;
}
