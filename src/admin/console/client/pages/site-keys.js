import { html, useEffect, useRef, useState } from '../preact-htm.js';
import { api, encode, itemsOf } from '../api.js';
import { Alert, ConfirmDialog, counted, FieldError, formError, formatTime, inTheLast, invalidIf, Loading, Notice, useAction, useCopy, useLoad, useSiteImpact, warningsOf } from '../components.js';
import { Pager, usePages } from '../paging.js';

/** The site's keys, masked; issuing or rolling shows the new key once, here, and nowhere else ever again. */
export function Keys({ siteId, can }) {
  const [page, error, reload, pager] = usePages(`/sites/${encode(siteId)}/keys`);
  const keys = page?.items;
  const [issued, setIssued] = useState(undefined);
  const [done, setDone] = useState('');
  const onIssued = async (key) => {
    setIssued(key);
    setDone('');
    await reload();
  };
  return html`
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">Keys</h2>
      <${Alert} error=${error} />
      ${issued && html`<${IssuedKey} issued=${issued} onDismiss=${() => setIssued(undefined)} />`}
      ${keys === undefined && !error ? html`<${Loading} />` : html`<${KeyTable} siteId=${siteId} keys=${keys ?? []} can=${can} reload=${reload} setDone=${setDone} onRolled=${onIssued} />`}
      <${Pager} pager=${pager} what="keys" />
      ${can.manage && html`<${IssueKey} siteId=${siteId} onIssued=${onIssued} />`}
      <${Notice} text=${done} />
    </section>
  `;
}

function KeyTable({ siteId, keys, can, reload, setDone, onRolled }) {
  const [confirming, setConfirming] = useState(undefined);
  const [rolling, setRolling] = useState(undefined);
  const action = useAction();
  const revoke = (key) => action.run(async () => {
    await api('POST', `/sites/${encode(siteId)}/keys/${encode(key.keyId)}/revoke`);
    setConfirming(undefined);
    setDone(`Key ${key.maskedKey} revoked: it is refused from now on (102).`);
    await reload();
  });
  if (keys.length === 0) return html`<p>No keys.</p>`;
  return html`
    <div class="overflow-auto">
      <table>
        <thead><tr><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Issued</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Note</th>${can.manage && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
        <tbody>
          ${keys.map((key) => html`<tr key=${key.keyId}>
            <td><code>${key.maskedKey}</code></td>
            <td>${key.status ?? '—'}</td>
            <td>${formatTime(key.createdAt)}</td>
            <td>${formatTime(key.expiresAt)}</td>
            <td>${formatTime(key.lastUsedAt)}</td>
            <td>${key.note || '—'}</td>
            ${can.manage && html`<td>${key.status === 'active' || key.status === undefined
              ? html`<button type="button" class="secondary" onClick=${() => setRolling(key)} disabled=${action.busy} aria-label=${`Roll key ${key.maskedKey}`}>Roll</button>
                     <button type="button" class="secondary" onClick=${() => setConfirming(key)} disabled=${action.busy} aria-label=${`Revoke key ${key.maskedKey}`}>Revoke</button>`
              : ''}</td>`}
          </tr>`)}
        </tbody>
      </table>
    </div>
    ${confirming && html`<${RevokeDialog} siteId=${siteId} keyRow=${confirming} action=${action} onConfirm=${() => revoke(confirming)}
        onCancel=${() => { setConfirming(undefined); action.setError(undefined); }} />`}
    ${!confirming && html`<${Alert} error=${action.error} />`}
    ${rolling && html`<${RollKey} key=${rolling.keyId} siteId=${siteId} old=${rolling} onCancel=${() => setRolling(undefined)} onRolled=${async (rolled) => {
      setRolling(undefined);
      await onRolled(rolled);
    }} />`}
  `;
}

const DAY_MS = 86_400_000;
/** How long the old key keeps working unless the person says otherwise: the API's default too. */
const ROLL_OVERLAP_DAYS = 7;
const dateIn = (days) => new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 10);

/** A new key for the partner, and an end for the old one: both work until then, so the partner can swap. */
function RollKey({ siteId, old, onCancel, onRolled }) {
  const suggested = dateIn(ROLL_OVERLAP_DAYS);
  const [oldEnds, setOldEnds] = useState(suggested);
  const [note, setNote] = useState('');
  const action = useAction();
  const roll = (event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = {};
      // Sent only when changed: the API then gives the old key exactly a week from now.
      if (oldEnds !== suggested) body.oldExpires = `${oldEnds}T00:00:00Z`;
      if (note.trim() !== '') body.note = note.trim();
      await onRolled(await api('POST', `/sites/${encode(siteId)}/keys/${encode(old.keyId)}/roll`, body));
    });
  };
  return html`
    <form onSubmit=${roll} aria-labelledby="roll-heading">
      <h3 id="roll-heading">Roll key ${old.maskedKey}</h3>
      <p>A new key is issued and shown once; the old key keeps working until the date below, so the partner can switch, and is refused after it.</p>
      <div class="grid">
        <div>
          <label>Old key works until (UTC date)<input name="oldExpires" type="date" required min=${dateIn(1)} value=${oldEnds} onInput=${(event) => setOldEnds(event.currentTarget.value)} ...${invalidIf(action.error, 'oldExpires', 'roll-old-expires-error')} /></label>
          <${FieldError} error=${action.error} field="oldExpires" id="roll-old-expires-error" />
        </div>
        <div>
          <label>Note of the new key<input name="note" value=${note} placeholder=${old.note || 'who it is for'} onInput=${(event) => setNote(event.currentTarget.value)} ...${invalidIf(action.error, 'note', 'roll-note-error')} /></label>
          <${FieldError} error=${action.error} field="note" id="roll-note-error" />
        </div>
      </div>
      <${Alert} error=${formError(action.error, ['oldExpires', 'note'])} />
      <button type="submit" disabled=${action.busy} aria-busy=${action.busy}>Roll key</button>
      <button type="button" class="secondary outline" onClick=${onCancel}>Cancel</button>
    </form>
  `;
}

function RevokeDialog({ siteId, keyRow, action, onConfirm, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  const others = impact === undefined ? 0 : Math.max(0, impact.activeKeys - 1);
  return html`<${ConfirmDialog} title=${`Revoke key ${keyRow.maskedKey}?`} confirmLabel="Revoke key" ready=${impact !== undefined}
      busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined ? html`<${Loading} />` : html`<p>Key ${keyRow.maskedKey} is refused from now on (102) by every replica within a second${keyRow.lastUsedAt ? `; it was last used ${formatTime(keyRow.lastUsedAt)}` : '; it has never been used'}.
      Site ${siteId} sent ${counted(impact.keyRequests, 'API-key request')} ${inTheLast(impact)}; ${others === 0 ? html`<strong>this is its last active key: every API-key request of site ${siteId} will be refused.</strong>` : `it keeps ${counted(others, 'other active key')}.`}</p>`}
  </${ConfirmDialog}>`;
}

function IssueKey({ siteId, onIssued }) {
  const [note, setNote] = useState('');
  const [expires, setExpires] = useState('');
  const action = useAction();
  const issue = (event) => {
    event.preventDefault();
    void action.run(async () => {
      const body = {};
      if (note.trim() !== '') body.note = note.trim();
      if (expires !== '') body.expires = new Date(`${expires}T00:00:00Z`).toISOString();
      const key = await api('POST', `/sites/${encode(siteId)}/keys`, body);
      setNote('');
      setExpires('');
      await onIssued(key);
    });
  };
  return html`
    <form onSubmit=${issue} aria-labelledby="issue-heading">
      <h3 id="issue-heading">Issue a key</h3>
      <div class="grid">
        <div>
          <label>Note<input name="note" value=${note} placeholder="who it is for" onInput=${(event) => setNote(event.currentTarget.value)} ...${invalidIf(action.error, 'note', 'issue-note-error')} /></label>
          <${FieldError} error=${action.error} field="note" id="issue-note-error" />
        </div>
        <div>
          <label>Expires (UTC date, optional)<input name="expires" type="date" value=${expires} onInput=${(event) => setExpires(event.currentTarget.value)} ...${invalidIf(action.error, 'expires', 'issue-expires-error')} /></label>
          <${FieldError} error=${action.error} field="expires" id="issue-expires-error" />
        </div>
      </div>
      <${Alert} error=${formError(action.error, ['note', 'expires'])} />
      <button type="submit" disabled=${action.busy} aria-busy=${action.busy}>Issue key</button>
    </form>
  `;
}

/** The key as issued: its only appearance. Copy it to the partner's secure channel now. */
function IssuedKey({ issued, onDismiss }) {
  const field = useRef(null);
  const [copy, copied] = useCopy(field, 'key');
  useEffect(() => field.current?.focus(), []);
  return html`
    <article class="issued-key" aria-labelledby="issued-heading">
      <h3 id="issued-heading">New key ${issued.maskedKey ?? ''}</h3>
      <p role="alert"><strong>This key will not be shown again.</strong> Copy it now and give it to the partner over a secure channel.</p>
      <label for="issued-key">The new key</label>
      <fieldset role="group">
        <input id="issued-key" ref=${field} readonly value=${issued.key} class="secret" />
        <button type="button" onClick=${() => copy(issued.key)}>Copy key</button>
      </fieldset>
      <${Notice} text=${copied} />
      ${issued.expiresAt && html`<p>Expires ${formatTime(issued.expiresAt)}.</p>`}
      ${issued.replaced && html`<p>It replaces key ${issued.replaced.keyId}, which keeps working until ${formatTime(issued.replaced.expiresAt)} and is refused after.</p>`}
      ${warningsOf(issued).map((warning) => html`<p class="warning"><strong>Warning:</strong> ${warning}.</p>`)}
      <button type="button" class="secondary" onClick=${onDismiss}>I have copied it: hide the key</button>
    </article>
  `;
}
