import { html, useEffect, useRef, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, ConfirmDialog, counted, FieldError, formError, formatTime, inTheLast, invalidIf, Loading, Notice, useAction, useCopy, useSiteImpact } from '../components.js';
import { Pager } from '../paging.js';

const HOW = { client_secret_basic: 'a secret', private_key_jwt: "the partner's own keys" };

/**
 * The OAuth clients whose access tokens stand for this site: created at the issuer from here (the
 * hand-over shown once), their secrets rotated, removed; or an existing client registered by its id.
 */
export function TokenClients({ siteId, clients, can, reload, pager }) {
  const [handover, setHandover] = useState(undefined);
  const [done, setDone] = useState('');
  const handedOver = async (value, text) => {
    setHandover(value);
    setDone(text);
    await reload();
  };
  return html`
    <section aria-labelledby="clients-heading">
      <h2 id="clients-heading">Token clients</h2>
      ${handover && html`<${Handover} handover=${handover} onDismiss=${() => setHandover(undefined)} />`}
      <${ClientTable} siteId=${siteId} clients=${clients} can=${can} reload=${reload} setDone=${setDone} onRotated=${(value) => handedOver(value, `Client ${value.client_id} has a new secret; the old one no longer works.`)} />
      <${Pager} pager=${pager} what="token clients" />
      ${can.manage && html`<${CreateClient} siteId=${siteId} onCreated=${(value) => handedOver(value, `Client ${value.client_id} created at the issuer.`)} />`}
      ${can.manage && html`<${RegisterClient} siteId=${siteId} hasClients=${clients.length > 0} reload=${reload} setDone=${setDone} />`}
      <${Notice} text=${done} />
    </section>
  `;
}

function ClientTable({ siteId, clients, can, reload, setDone, onRotated }) {
  const [confirming, setConfirming] = useState(undefined);
  const action = useAction();
  const remove = (client, hereOnly = false) => action.run(async () => {
    const removed = await api('DELETE', `/token-clients/${encode(client.clientId)}${hereOnly ? '?localOnly=true' : ''}`);
    setConfirming(undefined);
    const where = removed.deletedAtIssuer ? ' here and at the issuer' : client.authMethod === null ? '' : ' here only (delete it at the issuer by hand if it is still there)';
    setDone(`Token client ${client.clientId} removed${where}: its tokens are refused from now on.`);
    await reload();
  });
  const rotate = (client) => action.run(async () => {
    const rotated = await api('POST', `/token-clients/${encode(client.clientId)}/rotate-secret`);
    setConfirming(undefined);
    await onRotated(rotated);
  });
  if (clients.length === 0) return html`<p>No token client: this partner has no access tokens yet.</p>`;
  return html`
    <div class="overflow-auto"><table>
      <thead><tr><th scope="col">Client id</th><th scope="col">Authenticates with</th><th scope="col">Note</th><th scope="col">Last used</th>${can.manage && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
      <tbody>
        ${clients.map((client) => html`<tr key=${client.clientId}>
          <td><code>${client.clientId}</code></td>
          <td>${HOW[client.authMethod] ?? 'managed at the issuer'}</td>
          <td>${client.note || '—'}</td>
          <td>${formatTime(client.lastUsedAt)}</td>
          ${can.manage && html`<td>${confirming?.clientId === client.clientId && confirming.what === 'rotate'
            ? html`<button type="button" class="contrast" onClick=${() => rotate(client)} disabled=${action.busy} aria-busy=${action.busy}>Confirm new secret for ${client.clientId}</button>
                   <button type="button" class="secondary outline" onClick=${() => setConfirming(undefined)}>Cancel</button>`
            : html`${client.authMethod === 'client_secret_basic' && html`<button type="button" class="secondary" onClick=${() => setConfirming({ clientId: client.clientId, what: 'rotate' })} aria-label=${`New secret for ${client.clientId}`}>New secret</button> `}
                   <button type="button" class="secondary outline" onClick=${() => setConfirming({ clientId: client.clientId, what: 'remove', client })} aria-label=${`Remove token client ${client.clientId}`}>Remove</button>`}</td>`}
        </tr>`)}
      </tbody>
    </table></div>
    ${confirming?.what === 'remove' && html`<${RemoveClientDialog} siteId=${siteId} client=${confirming.client} others=${clients.length - 1} action=${action}
        onConfirm=${() => remove(confirming.client)} onHereOnly=${() => remove(confirming.client, true)} onCancel=${() => { setConfirming(undefined); action.setError(undefined); }} />`}
    ${confirming?.what !== 'remove' && html`<${Alert} error=${action.error} />`}
  `;
}

function RemoveClientDialog({ siteId, client, others, action, onConfirm, onHereOnly, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  const atIssuer = client.authMethod !== null;
  return html`<${ConfirmDialog} title=${`Remove token client ${client.clientId}?`} confirmLabel=${atIssuer ? 'Remove here and at the issuer' : 'Remove token client'}
      also=${atIssuer ? { label: 'Remove here only', onConfirm: onHereOnly } : undefined} ready=${impact !== undefined}
      busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined ? html`<${Loading} />` : html`<p>The access tokens of client ${client.clientId} are refused from now on (107)${client.lastUsedAt ? `; it was last used ${formatTime(client.lastUsedAt)}` : '; it has never been used'}.
      Site ${siteId} sent ${counted(impact.tokenRequests, 'access-token request')} ${inTheLast(impact)}; ${others <= 0 ? html`<strong>this is its last token client: every access token of site ${siteId} will be refused.</strong>` : `it keeps ${counted(others, 'other token client')}.`}</p>
      ${atIssuer && html`<p>Remove here only leaves the client at the issuer, e.g. when it is already gone there.</p>`}`}
  </${ConfirmDialog}>`;
}

/** The partner's public keys as pasted: a JWKS, or the URL where they publish one. */
function keysOf(keys) {
  const given = keys.trim();
  if (given === '') return {};
  if (/^https?:\/\//.test(given)) return { jwksUri: given };
  try {
    return { jwks: JSON.parse(given) };
  } catch {
    throw new Error("The partner's public keys are neither a JWKS (JSON) nor its https:// URL: paste what the partner sent.");
  }
}

function CreateClient({ siteId, onCreated }) {
  const [note, setNote] = useState('');
  const [keys, setKeys] = useState('');
  const action = useAction();
  const create = (event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = { ...keysOf(keys), ...(note.trim() === '' ? {} : { note: note.trim() }) };
      const handover = await api('POST', `/sites/${encode(siteId)}/token-clients/create`, body);
      setNote('');
      setKeys('');
      await onCreated(handover);
    });
  };
  return html`
    <form onSubmit=${create} aria-labelledby="create-client-heading">
      <h3 id="create-client-heading">Create a client at the issuer</h3>
      <div class="grid">
        <div>
          <label>Note<input name="createNote" value=${note} placeholder="who it is for" onInput=${(event) => setNote(event.currentTarget.value)} ...${invalidIf(action.error, 'note', 'create-note-error')} /></label>
          <${FieldError} error=${action.error} field="note" id="create-note-error" />
        </div>
        <div>
          <label>Partner's public keys (optional: a JWKS or its https:// URL; empty: a secret)
            <textarea name="partnerKeys" rows="2" value=${keys} onInput=${(event) => setKeys(event.currentTarget.value)} ...${invalidIf(action.error, ['jwks', 'jwksUri'], 'create-keys-error')}></textarea></label>
          <${FieldError} error=${action.error} field=${['jwks', 'jwksUri']} id="create-keys-error" />
        </div>
      </div>
      <${Alert} error=${formError(action.error, ['note', 'jwks', 'jwksUri'])} />
      <button type="submit" disabled=${action.busy} aria-busy=${action.busy}>Create client</button>
    </form>
  `;
}

function RegisterClient({ siteId, hasClients, reload, setDone }) {
  const [clientId, setClientId] = useState('');
  const [note, setNote] = useState('');
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
  const [revoking, setRevoking] = useState(false);
  const revokeTokens = () => action.run(async () => {
    await api('POST', `/sites/${encode(siteId)}/revoke-tokens`);
    setRevoking(false);
    setDone('Every access token issued so far for this site is refused from now on.');
    await reload();
  });
  return html`
    <form onSubmit=${add} aria-labelledby="register-client-heading">
      <h3 id="register-client-heading">Register a client that exists at the issuer</h3>
      <div class="grid">
        <div>
          <label>Client id<input name="clientId" required value=${clientId} onInput=${(event) => setClientId(event.currentTarget.value)} ...${invalidIf(action.error, 'clientId', 'register-client-id-error')} /></label>
          <${FieldError} error=${action.error} field="clientId" id="register-client-id-error" />
        </div>
        <div>
          <label>Note<input name="note" value=${note} onInput=${(event) => setNote(event.currentTarget.value)} ...${invalidIf(action.error, 'note', 'register-note-error')} /></label>
          <${FieldError} error=${action.error} field="note" id="register-note-error" />
        </div>
      </div>
      <button type="submit" disabled=${action.busy}>Add token client</button>
      ${hasClients && html` <button type="button" class="secondary" onClick=${() => setRevoking(true)} disabled=${action.busy}>Refuse tokens issued so far</button>`}
      ${!revoking && html`<${Alert} error=${formError(action.error, ['clientId', 'note'])} />`}
    </form>
    ${revoking && html`<${RevokeTokensDialog} siteId=${siteId} action=${action} onConfirm=${revokeTokens} onCancel=${() => { setRevoking(false); action.setError(undefined); }} />`}
  `;
}

function RevokeTokensDialog({ siteId, action, onConfirm, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  return html`<${ConfirmDialog} title=${`Refuse every access token of site ${siteId} issued so far?`} confirmLabel="Refuse tokens issued so far" typed=${siteId}
      ready=${impact !== undefined} busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined ? html`<${Loading} />` : html`<p>Site ${siteId} sent <strong>${counted(impact.tokenRequests, 'access-token request')}</strong> ${inTheLast(impact)}.
      Every token issued to its ${counted(impact.tokenClients, 'token client')} until now is refused (106) by every replica within a second: each client must get a new token, which works at once.</p>`}
  </${ConfirmDialog}>`;
}

/** What the partner needs, as lines to paste into a message. */
function handoverText(handover) {
  const lines = [`client_id: ${handover.client_id}`];
  if (handover.client_secret !== undefined) lines.push(`client_secret: ${handover.client_secret}`);
  lines.push(`token_endpoint: ${handover.token_endpoint}`, `resource: ${handover.resource}`);
  if (handover.guide_url) lines.push(`guide_url: ${handover.guide_url}`);
  return lines.join('\n');
}

/** The hand-over as answered: its only appearance, with the secret when there is one. */
function Handover({ handover, onDismiss }) {
  const field = useRef(null);
  const [copy, copied] = useCopy(field, 'hand-over');
  useEffect(() => field.current?.focus(), []);
  const text = handoverText(handover);
  return html`
    <article class="issued-key" aria-labelledby="handover-heading">
      <h3 id="handover-heading">Hand-over for client ${handover.client_id}</h3>
      ${handover.client_secret === undefined
        ? html`<p>The client signs its token requests with the partner's own key: there is no secret. Send the partner these values.</p>`
        : html`<p role="alert"><strong>The secret will not be shown again.</strong> Copy the hand-over now and give it to the partner over a secure channel.</p>`}
      <label for="handover-text">The hand-over</label>
      <textarea id="handover-text" ref=${field} readonly rows="5" class="secret" value=${text}></textarea>
      <button type="button" onClick=${() => copy(text)}>Copy hand-over</button>
      <${Notice} text=${copied} />
      <button type="button" class="secondary" onClick=${onDismiss}>I have copied it: hide the hand-over</button>
    </article>
  `;
}
