import { html, useState } from '../preact-htm.js';
import { api } from '../api.js';
import { Alert, FieldError, formError, formatSecond, formatTime, InstantInput, instantFields, instantOf, invalidIf, Loading, Notice, NOTHING_CHANGED, PageHeading, useAction, useLoad } from '../components.js';

/** The date API keys stop working, whether it is enforced, and the guide partners are sent to. */
export function Sunset({ can }) {
  const [policy, error, reload] = useLoad(() => api('GET', '/sunset'), []);
  return html`
    <${PageHeading}>Sunset of API keys</${PageHeading}>
    <${Alert} error=${error} />
    ${policy === undefined && !error ? html`<${Loading} />` : policy && html`
      <dl>
        <dt>Keys stop working at</dt><dd>${formatSecond(policy.sunsetAt)}</dd>
        <dt>Enforced</dt><dd>${policy.enforce ? 'yes: keys are refused after that date' : 'no: keys are announced as deprecated only'}</dd>
        <dt>Migration guide</dt><dd>${policy.guideUrl ?? '—'}</dd>
        <dt>Set by</dt><dd>${policy.source === 'environment' ? 'the service settings (APIKEY_SUNSET_*)' : `the database${policy.updatedAt ? `, ${formatTime(policy.updatedAt)}` : ''}`}</dd>
      </dl>
      ${can.administer ? html`<${SunsetForm} policy=${policy} reload=${reload} />` : html`<p>Only an admin changes the sunset.</p>`}`}
  `;
}

/** Sends only what the person changed: a policy saved with only a guide added keeps its instant to the second. */
function SunsetForm({ policy, reload }) {
  const loaded = { at: instantFields(policy.sunsetAt), enforce: policy.enforce === true, guide: policy.guideUrl ?? '' };
  const [at, setAt] = useState(loaded.at);
  const [enforce, setEnforce] = useState(loaded.enforce);
  const [guide, setGuide] = useState(loaded.guide);
  const [done, setDone] = useState('');
  const action = useAction();
  const save = (event) => {
    event.preventDefault();
    const change = {};
    const instant = instantOf(at);
    if (instant !== Date.parse(policy.sunsetAt)) change.at = Number.isNaN(instant) ? `${at.date}T${at.time}Z` : new Date(instant).toISOString();
    if (enforce !== loaded.enforce) change.enforce = enforce;
    if (guide.trim() !== loaded.guide) change.guide = guide.trim() === '' ? null : guide.trim();
    if (Object.keys(change).length === 0) {
      setDone(NOTHING_CHANGED);
      return;
    }
    void action.run(async () => {
      await api('PUT', '/sunset', change);
      setDone('Sunset saved.');
      await reload();
    });
  };
  return html`
    <form onSubmit=${save}>
      <h2>Change the sunset</h2>
      <${InstantInput} id="sunset-at" label="Keys stop working at (UTC)" value=${at} onChange=${setAt} required=${true} invalid=${invalidIf(action.error, 'at', 'sunset-at-error')} />
      <${FieldError} error=${action.error} field="at" id="sunset-at-error" />
      <label><input type="checkbox" role="switch" checked=${enforce} onChange=${(event) => setEnforce(event.currentTarget.checked)} /> Enforce: refuse keys after that date</label>
      <label>Migration guide (https URL)<input type="url" value=${guide} onInput=${(event) => setGuide(event.currentTarget.value)} ...${invalidIf(action.error, 'guide', 'sunset-guide-error')} /></label>
      <${FieldError} error=${action.error} field="guide" id="sunset-guide-error" />
      <${Alert} error=${formError(action.error, ['at', 'guide'])} />
      <${Notice} text=${done} />
      <button type="submit" disabled=${action.busy}>Save sunset</button>
    </form>
  `;
}
