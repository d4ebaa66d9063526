/** Pages change without a reload: the address bar changes and the app renders the page it names. */
export const NAVIGATED = 'console:navigate';

/** replace: the page it leaves only led here (a search with one match), so Back skips it. */
export function navigate(href, { replace = false } = {}) {
  if (replace) window.history.replaceState(null, '', href);
  else window.history.pushState(null, '', href);
  window.dispatchEvent(new Event(NAVIGATED));
}
