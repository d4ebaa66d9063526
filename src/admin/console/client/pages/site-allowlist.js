import { html, useState } from '../preact-htm.js';
import { api, encode } from '../api.js';
import { Alert, ConfirmDialog, counted, FieldError, formError, formatTime, inTheLast, invalidIf, Loading, Notice, useAction, useSiteImpact, withWarnings } from '../components.js';
import { Pager } from '../paging.js';

const cidrOf = (entry) => (typeof entry === 'string' ? entry : String(entry?.cidr ?? entry?.entry ?? ''));
/** A network of prefix length 0 (0.0.0.0/0, ::/0): every address of its family. */
const admitsEveryone = (entry) => /\/0+$/.test(entry.trim());

/** The addresses a partner's requests may come from; with none, every request is refused (103). */
export function Allowlist({ siteId, entries, can, reload, pager }) {
  const [text, setText] = useState('');
  const [done, setDone] = useState('');
  const action = useAction();
  const [pending, setPending] = useState(undefined);
  const send = (added, allowAnyAddress) => action.run(async () => {
    let answer;
    try {
      answer = await api('POST', `/sites/${encode(siteId)}/allowlist`, { entries: added, ...(allowAnyAddress ? { allowAnyAddress: true } : {}) });
    } catch (error) {
      // Another spelling of every address, caught by the API: the same second step.
      if (error?.code !== 'ANY_ADDRESS_UNCONFIRMED' || allowAnyAddress) throw error;
      setPending({ what: 'everyone', added });
      return;
    }
    setPending(undefined);
    setText('');
    setDone(withWarnings(`Added ${added.join(', ')}.`, answer));
    await reload();
  });
  const add = (event) => {
    event.preventDefault();
    const added = text.split(/[\s,]+/).filter((part) => part !== '');
    // Every address at once is a second, explicit step; the API refuses it without allowAnyAddress.
    if (added.some(admitsEveryone)) setPending({ what: 'everyone', added });
    else void send(added, false);
  };
  const remove = (cidr) => action.run(async () => {
    const answer = await api('DELETE', `/sites/${encode(siteId)}/allowlist/${encode(cidr)}`);
    setPending(undefined);
    setDone(withWarnings(`Removed ${cidr}.`, answer));
    await reload();
  });
  const cancel = () => {
    setPending(undefined);
    action.setError(undefined);
  };
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
                  ${can.manage && html`<td><button type="button" class="secondary outline" onClick=${() => setPending({ what: 'remove', cidr })} disabled=${action.busy} aria-label=${`Remove ${cidr}`}>Remove</button></td>`}
                </tr>`;
              })}
            </tbody>
          </table></div>`}
      <${Pager} pager=${pager} what="addresses" />
      ${can.manage && html`
        <form onSubmit=${add}>
          <label for="allowlist-add">Add an address or network (CIDR)</label>
          <fieldset role="group">
            <input id="allowlist-add" name="entry" required value=${text} placeholder="203.0.113.0/24" onInput=${(event) => setText(event.currentTarget.value)} ...${invalidIf(action.error, 'entries', 'allowlist-add-error')} />
            <button type="submit" disabled=${action.busy}>Add address</button>
          </fieldset>
          <${FieldError} error=${action.error} field="entries" id="allowlist-add-error" />
        </form>`}
      ${pending?.what === 'remove' && html`<${RemoveDialog} siteId=${siteId} cidr=${pending.cidr} remaining=${entries.length - 1} action=${action} onConfirm=${() => remove(pending.cidr)} onCancel=${cancel} />`}
      ${pending?.what === 'everyone' && html`<${EveryoneDialog} siteId=${siteId} added=${pending.added} action=${action} onConfirm=${() => send(pending.added, true)} onCancel=${cancel} />`}
      ${pending === undefined && html`<${Alert} error=${can.manage ? formError(action.error, 'entries') : action.error} />`}
      <${Notice} text=${done} />
    </section>
  `;
}

function RemoveDialog({ siteId, cidr, remaining, action, onConfirm, onCancel }) {
  const [impact, error] = useSiteImpact(siteId);
  const requests = impact === undefined ? undefined : impact.keyRequests + impact.tokenRequests;
  return html`<${ConfirmDialog} title=${`Remove ${cidr}?`} confirmLabel="Remove address" ready=${impact !== undefined}
      busy=${action.busy} error=${action.error ?? error} onConfirm=${onConfirm} onCancel=${onCancel}>
    ${impact === undefined
      ? html`<${Loading} />`
      : remaining <= 0
        ? html`<p><strong>Removing ${cidr} leaves no address: every request of site ${siteId} will be refused (103).</strong> It sent ${counted(requests, 'request')} ${inTheLast(impact)}.</p>`
        : html`<p>Requests of site ${siteId} from ${cidr} will be refused (103); ${counted(remaining, 'other address', 'other addresses')} stay allowed. The site sent ${counted(requests, 'request')} ${inTheLast(impact)}.</p>`}
  </${ConfirmDialog}>`;
}

function EveryoneDialog({ siteId, added, action, onConfirm, onCancel }) {
  const everyone = added.filter(admitsEveryone);
  return html`<${ConfirmDialog} title="Allow every address?" confirmLabel="Allow every address" busy=${action.busy} error=${action.error} onConfirm=${onConfirm} onCancel=${onCancel}>
    <p role="alert"><strong>Warning: ${everyone.join(' and ')} ${everyone.length === 1 ? 'admits' : 'admit'} every address on the internet.</strong> Anyone who holds a key or a token of site ${siteId} can use it from anywhere: the allowlist no longer protects this site.</p>
    <p>Allow it only for a partner who cannot name its addresses, and remove it once they can.</p>
  </${ConfirmDialog}>`;
}
