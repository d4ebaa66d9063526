import { html, useEffect, useRef, useState } from './preact-htm.js';

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
