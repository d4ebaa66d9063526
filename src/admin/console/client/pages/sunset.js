import { html, useState } from '../preact-htm.js';
import { api } from '../api.js';
import { Alert, FieldError, formError, invalidIf, formatTime, Loading, Notice, PageHeading, useAction, useLoad } from '../components.js';

/** The date API keys stop working, whether it is enforced, and the guide partners are sent to. */
export function Sunset({ can }) {
  const [policy, error, reload] = useLoad(() => api('GET', '/sunset'), []);
  return html`
    <${PageHeading}>Sunset of API keys</${PageHeading}>
    <${Alert} error=${error} />
    ${policy === undefined && !error ? html`<${Loading} />` : policy && html`
      <dl>
        <dt>Keys stop working at</dt><dd>${formatTime(policy.sunsetAt)}</dd>
        <dt>Enforced</dt><dd>${policy.enforce ? 'yes: keys are refused after that date' : 'no: keys are announced as deprecated only'}</dd>
        <dt>Migration guide</dt><dd>${policy.guideUrl ?? '—'}</dd>
        <dt>Set by</dt><dd>${policy.source === 'environment' ? 'the service settings (APIKEY_SUNSET_*)' : `the database${policy.updatedAt ? `, ${formatTime(policy.updatedAt)}` : ''}`}</dd>
      </dl>
      ${can.administer ? html`<${SunsetForm} policy=${policy} reload=${reload} />` : html`<p>Only an admin changes the sunset.</p>`}`}
  `;
}

function SunsetForm({ policy, reload }) {
  const [at, setAt] = useState(typeof policy.sunsetAt === 'string' ? policy.sunsetAt.slice(0, 10) : '');
  const [enforce, setEnforce] = useState(policy.enforce === true);
  const [guide, setGuide] = useState(policy.guideUrl ?? '');
  const [done, setDone] = useState('');
  const action = useAction();
  const save = (event) => {
    event.preventDefault();
    void action.run(async () => {
      await api('PUT', '/sunset', { at: new Date(`${at}T00:00:00Z`).toISOString(), enforce, guide: guide.trim() === '' ? null : guide.trim() });
      setDone('Sunset saved.');
      await reload();
    });
  };
  return html`
    <form onSubmit=${save}>
      <h2>Change the sunset</h2>
      <label>Keys stop working at (UTC date)<input type="date" required value=${at} onInput=${(event) => setAt(event.currentTarget.value)} ...${invalidIf(action.error, 'at', 'sunset-at-error')} /></label>
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
