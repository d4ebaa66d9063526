// The console's one way to the JSON API: the session cookie goes by itself, the CSRF token in a header.
const csrfToken = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

/** An API refusal: its message in words, its stable code, and the field it concerns (undefined when none), for the page to put beside that input. */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  if (response.status === 401) {
    // The session ended (expired, or signed out elsewhere): the page itself starts a new sign-in.
    window.location.reload();
    throw new ApiError(401, 'SIGNED_OUT', 'Your session has ended: signing in again…');
  }
  const text = await response.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    const error = json?.error;
    // The API words a next step as a request to send; the console's words name its buttons.
    const worded = typeof error?.consoleMessage === 'string' ? error.consoleMessage : error?.message;
    const message = typeof worded === 'string' ? worded : `The API answered ${response.status}.`;
    throw new ApiError(response.status, typeof error?.code === 'string' ? error.code : 'HTTP_' + response.status, message, typeof error?.field === 'string' ? error.field : undefined);
  }
  return json;
}

/** A list answer's items, whether the API sends an array or {items}. */
export function itemsOf(answer) {
  if (Array.isArray(answer)) return answer;
  if (answer && Array.isArray(answer.items)) return answer.items;
  return [];
}

export const encode = encodeURIComponent;

export async function signOut() {
  const response = await fetch('/auth/sign-out', { method: 'POST', headers: { 'x-csrf-token': csrfToken }, credentials: 'same-origin' });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, answer?.error?.code ?? 'SIGN_OUT', answer?.error?.message ?? 'Sign-out failed: reload the page and try again.');
  window.location.assign(typeof answer.next === 'string' ? answer.next : '/auth/signed-out');
}
