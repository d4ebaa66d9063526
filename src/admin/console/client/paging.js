import { html, useState } from './preact-htm.js';
import { api, itemsOf } from './api.js';
import { useLoad } from './components.js';

/** Rows a page of a list shows: the API's own default page. */
export const PAGE_SIZE = 100;

/** `path` asking for one page of `size` rows from `cursor` (undefined: the first page). */
export function pagePath(path, cursor, size = PAGE_SIZE) {
  const separator = path.includes('?') ? '&' : '?';
  return `${path}${separator}limit=${size}${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
}

/**
 * A list the API answers a page at a time ({items, next}): [page, error, reload, pager]. `page` is the
 * answer with its items (undefined while loading); `pager` is the "Next" and "First page" of it. A new
 * `path` starts again at the first page; a reload (after a change) stays on the page shown.
 */
export function usePages(path, size = PAGE_SIZE) {
  // The cursors that led to the page shown, one per page turned: empty on the first page.
  const [trail, setTrail] = useState({ path, cursors: [] });
  const cursors = trail.path === path ? trail.cursors : [];
  const cursor = cursors[cursors.length - 1];
  const [answer, error, reload] = useLoad(() => api('GET', pagePath(path, cursor, size)), [path, cursor]);
  const page = answer === undefined ? undefined : { ...answer, items: itemsOf(answer), next: answer?.next ?? null };
  const turn = (next) => setTrail({ path, cursors: next });
  const pager = page && {
    first: cursors.length * size,
    shown: page.items.length,
    next: page.next,
    /** How many pages were turned to reach this one. */
    turned: cursors.length,
    onNext: () => turn([...cursors, page.next]),
    onPrevious: () => turn(cursors.slice(0, -1)),
    onFirst: () => turn([]),
  };
  return [page, error, reload, pager];
}

/** Which rows are shown, and the buttons to the next, previous and first page; nothing for a list that fits one page. */
export function Pager({ pager, what }) {
  if (!pager || (!pager.next && pager.turned === 0)) return null;
  const { first, shown } = pager;
  return html`
    <nav class="pager" aria-label=${`Pages of ${what}`}>
      <p aria-live="polite">${shown === 0 ? `No more ${what}.` : `Showing ${what} ${first + 1}–${first + shown}${pager.next ? ', more on the next page' : ', the last of them'}.`}</p>
      ${pager.turned > 0 && html`<button type="button" class="secondary outline" onClick=${pager.onFirst}>First page</button> `}
      ${pager.turned > 1 && html`<button type="button" class="secondary outline" onClick=${pager.onPrevious}>Previous</button> `}
      ${pager.next && html`<button type="button" class="secondary" onClick=${pager.onNext}>Next</button>`}
    </nav>
  `;
}
