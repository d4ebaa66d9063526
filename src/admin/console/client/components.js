import { html, useEffect, useRef, useState } from './preact-htm.js';
import { api } from './api.js';

/** An error announced to screen readers (role=alert) with the API's message. */
export function Alert({ error }) {
  if (!error) return null;
  return html`<p role="alert" class="alert">${error.message ?? String(error)}</p>`;
}

/** Whether the API refused the value of this field (one of `fields`, when the form sends it under several names). */
function refusesField(error, fields) {
  return typeof error?.field === 'string' && [fields].flat().includes(error.field);
}

/** The attributes of an input whose value was refused: invalid, and described by the message beside it. */
export function invalidIf(error, fields, messageId) {
  return refusesField(error, fields) ? { 'aria-invalid': 'true', 'aria-describedby': messageId } : {};
}

/** The API's refusal of a field, beside its input (whose aria-describedby names `id`). */
export function FieldError({ error, field, id }) {
  if (!refusesField(error, field)) return null;
  return html`<small id=${id} class="field-error" role="alert">${error.message}</small>`;
}

/** The form's own error: anything the inputs of `fields` do not already show beside them. */
export function formError(error, fields) {
  return refusesField(error, fields) ? undefined : error;
}

/** A success message, announced politely. */
export function Notice({ text }) {
  return html`<p role="status" class="notice">${text ?? ''}</p>`;
}

/** Data loaded from the API for a page: [value, error, reload]. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ value: undefined, error: undefined });
  const generation = useRef(0);
  const reload = async () => {
    const mine = ++generation.current;
    try {
      const value = await load();
      if (mine === generation.current) setState({ value, error: undefined });
    } catch (error) {
      if (mine === generation.current) setState({ value: undefined, error });
    }
  };
  useEffect(() => {
    void reload();
  }, deps);
  return [state.value, state.error, reload];
}

/** A form action with its pending state and error: run(work) disables the button and announces a failure. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(undefined);
  const run = async (work) => {
    setBusy(true);
    setError(undefined);
    try {
      return await work();
    } catch (caught) {
      setError(caught);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run, setError };
}

export function formatTime(value) {
  if (value === null || value === undefined || value === '') return '—';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
}

export function percent(share) {
  return typeof share === 'number' ? `${Math.round(share * 100)} %` : '—';
}

export function Loading() {
  return html`<p aria-busy="true">Loading…</p>`;
}

/** Moves focus to the page's heading when the page changes, so a screen reader hears where it is. */
export function PageHeading({ children }) {
  const ref = useRef(null);
  useEffect(() => ref.current?.focus(), []);
  return html`<h1 tabindex="-1" ref=${ref}>${children}</h1>`;
}

export const siteIdOf = (site) => String(site?.id ?? site?.siteId ?? '');

/** The warnings an API answer carries (what the CLI would print on stderr), as text. */
export function warningsOf(answer) {
  return Array.isArray(answer?.warnings) ? answer.warnings.filter((warning) => typeof warning === 'string') : [];
}

/** A change's confirmation, with the API's warnings after it (e.g. "site 1001 has no allowlist entry yet…"). */
export function withWarnings(text, answer) {
  return [text, ...warningsOf(answer).map((warning) => `Warning: ${warning}.`)].join(' ');
}

/**
 * Copying a secret shown once: [copy(text), what happened]. A browser that refuses the clipboard gets
 * the field selected instead, for Ctrl+C.
 */
export function useCopy(field, what) {
  const [copied, setCopied] = useState('');
  const copy = async (text) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('Copied to the clipboard.');
    } catch {
      field.current?.select();
      setCopied(`Copying was refused by the browser: the ${what} is selected, press Ctrl+C.`);
    }
  };
  return [copy, copied];
}

/** A count as people read it: 1,414. */
export function formatCount(value) {
  return typeof value === 'number' ? value.toLocaleString('en-US') : '—';
}

/** "1 site", "212 sites": the count, formatted, with its noun. */
export function counted(value, one, many = `${one}s`) {
  return `${formatCount(value)} ${value === 1 ? one : many}`;
}

/**
 * The question before a change that refuses someone, as a modal <dialog> (Pico styles it): what will
 * happen in the service's own numbers (children), Cancel, and the confirming button. With `typed`, the
 * button stays disabled until the person has typed that text, for the widest changes. `also` is a
 * second way to confirm (e.g. "Remove here only"). Closing with Escape is Cancel.
 */
export function ConfirmDialog({ title, children, confirmLabel, onConfirm, onCancel, typed, also, busy = false, error, ready = true }) {
  const dialog = useRef(null);
  const [text, setText] = useState('');
  useEffect(() => {
    dialog.current?.showModal();
    return () => dialog.current?.close();
  }, []);
  const matches = typed === undefined || text.trim() === typed;
  const cancel = (event) => {
    event.preventDefault();
    if (!busy) onCancel();
  };
  const confirmOnEnter = (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    if (matches && ready && !busy) onConfirm();
  };
  return html`
    <dialog ref=${dialog} onCancel=${cancel} aria-labelledby="confirm-title">
      <article>
        <header><h2 id="confirm-title">${title}</h2></header>
        ${children}
        ${typed !== undefined && html`<label>Type <strong>${typed}</strong> to confirm
          <input name="confirmation" autocomplete="off" value=${text} onInput=${(event) => setText(event.currentTarget.value)} onKeyDown=${confirmOnEnter} /></label>`}
        <${Alert} error=${error} />
        <footer>
          <button type="button" class="secondary" onClick=${cancel} disabled=${busy}>Cancel</button>
          ${also && html`<button type="button" class="secondary outline" onClick=${also.onConfirm} disabled=${busy || !ready || !matches}>${also.label}</button>`}
          <button type="button" class="contrast" onClick=${onConfirm} disabled=${busy || !ready || !matches} aria-busy=${busy}>${confirmLabel}</button>
        </footer>
      </article>
    </dialog>
  `;
}

/** The site's numbers for a confirmation (GET …/impact): [impact, error]; undefined while it loads. */
export function useSiteImpact(siteId) {
  const [impact, error] = useLoad(() => api('GET', `/sites/${encodeURIComponent(siteId)}/impact`), [siteId]);
  return [impact, error];
}

/** The window the counts cover, said truly when the service holds counts for less of it. */
export function inTheLast(impact) {
  const begins = impact?.countsBegin ? Date.parse(impact.countsBegin) : Number.NaN;
  const windowStart = Date.now() - (impact?.days ?? 30) * 86_400_000;
  if (Number.isFinite(begins) && begins > windowStart + 3_600_000) return `since ${formatTime(impact.countsBegin)} (the counts held begin then)`;
  return `in the last ${counted(impact?.days ?? 30, 'day')}`;
}

/** An instant as a date input and a time-with-seconds input read it, in UTC: { date, time }. */
export function instantFields(value) {
  const at = typeof value === 'string' || typeof value === 'number' ? new Date(value) : undefined;
  if (at === undefined || Number.isNaN(at.getTime())) return { date: '', time: '00:00:00' };
  const text = at.toISOString();
  return { date: text.slice(0, 10), time: text.slice(11, 19) };
}

/** The instant a date and a time input (UTC) name, as epoch ms; NaN when they name none. */
export function instantOf({ date, time }) {
  if (date === '') return Number.NaN;
  const seconds = /^\d\d:\d\d$/.test(time) ? `${time}:00` : time || '00:00:00';
  return Date.parse(`${date}T${seconds}Z`);
}

/** A date and a time to the second, both UTC, under one label; `invalid`: what invalidIf gives, for both inputs. */
export function InstantInput({ id, label, value, onChange, required = false, invalid = {} }) {
  return html`
    <label for=${`${id}-date`}>${label}</label>
    <fieldset role="group">
      <input id=${`${id}-date`} type="date" aria-label=${`${label}, date`} required=${required} value=${value.date} onInput=${(event) => onChange({ ...value, date: event.currentTarget.value })} ...${invalid} />
      <input id=${`${id}-time`} type="time" step="1" aria-label=${`${label}, time to the second`} required=${required} value=${value.time} onInput=${(event) => onChange({ ...value, time: event.currentTarget.value })} ...${invalid} />
    </fieldset>
  `;
}

export const NOTHING_CHANGED = 'Nothing changed: nothing was sent.';

/** An instant to the second, in UTC: 2026-12-31 23:59:59 UTC. */
export function formatSecond(value) {
  const { date, time } = instantFields(value);
  return date === '' ? formatTime(value) : `${date} ${time} UTC`;
}
