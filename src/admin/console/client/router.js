/** Pages change without a reload: the address bar changes and the app renders the page it names. */
export const NAVIGATED = 'console:navigate';

export function navigate(href) {
  window.history.pushState(null, '', href);
  window.dispatchEvent(new Event(NAVIGATED));
}
