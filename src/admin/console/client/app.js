import { html, render, useEffect, useState } from './preact-htm.js';
import { api, signOut } from './api.js';
import { navigate, NAVIGATED } from './router.js';
import { Alert, Loading } from './components.js';
import { AuditTrail } from './pages/audit-trail.js';
import { Brownouts } from './pages/brownouts.js';
import { DenialReport } from './pages/denial-report.js';
import { FindPartner } from './pages/find-partner.js';
import { MigrationBoard } from './pages/migration-board.js';
import { SitePage } from './pages/site.js';
import { Sunset } from './pages/sunset.js';

const ROLE_ORDER = ['viewer', 'account-manager', 'admin'];

/** What the person may do: a role includes the ones before it (admin ⊇ account-manager ⊇ viewer). */
function abilities(me) {
  const held = new Set(me.roles ?? []);
  const has = (needed) => ROLE_ORDER.slice(ROLE_ORDER.indexOf(needed)).some((role) => held.has(role));
  return { manage: has('account-manager'), administer: has('admin'), seeKeys: has('account-manager') };
}

const NAVIGATION = [
  ['/', 'Find a partner'],
  ['/migration', 'Migration board'],
  ['/denials', 'Blocked partner'],
  ['/brownouts', 'Brownouts'],
  ['/sunset', 'Sunset'],
  ['/audit', 'Audit trail'],
];

function route(location) {
  const path = location.pathname;
  const query = new URLSearchParams(location.search);
  const site = /^\/sites\/([^/]+)$/.exec(path);
  if (site) return { page: 'site', siteId: decodeURIComponent(site[1]) };
  const pages = { '/': 'find', '/migration': 'migration', '/denials': 'denials', '/brownouts': 'brownouts', '/sunset': 'sunset', '/audit': 'audit' };
  return { page: pages[path] ?? 'missing', query };
}

function Page({ where, can }) {
  switch (where.page) {
    case 'find':
      return html`<${FindPartner} query=${where.query} can=${can} />`;
    case 'site':
      return html`<${SitePage} siteId=${where.siteId} can=${can} />`;
    case 'migration':
      return html`<${MigrationBoard} />`;
    case 'denials':
      return html`<${DenialReport} query=${where.query} />`;
    case 'brownouts':
      return html`<${Brownouts} can=${can} />`;
    case 'sunset':
      return html`<${Sunset} can=${can} />`;
    case 'audit':
      return html`<${AuditTrail} query=${where.query} />`;
    default:
      return html`<h1>Not found</h1><p>There is no such page. <a href="/">Find a partner</a>.</p>`;
  }
}

function App() {
  const [me, setMe] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [where, setWhere] = useState(route(window.location));

  useEffect(() => {
    api('GET', '/me').then(setMe, setError);
    const update = () => setWhere(route(window.location));
    window.addEventListener('popstate', update);
    window.addEventListener(NAVIGATED, update);
    // Links inside the app change the page without a reload; /auth/ and other origins load normally.
    const follow = (event) => {
      const link = event.target.closest?.('a[href]');
      if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      const url = new URL(link.href);
      if (url.origin !== window.location.origin || url.pathname.startsWith('/auth/') || url.pathname.startsWith('/console/')) return;
      event.preventDefault();
      navigate(url.pathname + url.search);
    };
    document.addEventListener('click', follow);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(NAVIGATED, update);
      document.removeEventListener('click', follow);
    };
  }, []);

  const [signOutError, setSignOutError] = useState(undefined);
  const leave = () => signOut().catch(setSignOutError);

  const header = html`<header class="container">
    <nav aria-label="Console">
      <ul><li><strong>sitekey-authz console</strong></li></ul>
      <ul>
        ${me && html`<li><span class="who">${me.email ?? me.subject} (${(me.roles ?? []).join(', ')})</span></li>`}
        <li><button type="button" class="secondary outline" onClick=${leave}>Sign out</button></li>
      </ul>
    </nav>
    <nav aria-label="Pages" class="pages">
      <ul>
        ${NAVIGATION.map(([href, label]) => {
          const current = (href === '/' ? where.page === 'find' : window.location.pathname === href) ? 'page' : undefined;
          return html`<li><a href=${href} aria-current=${current}>${label}</a></li>`;
        })}
      </ul>
    </nav>
    <${Alert} error=${signOutError} />
  </header>`;

  if (error) {
    return html`${header}<main class="container"><h1>No access</h1><${Alert} error=${error} /><p>Ask your administrator for the viewer, account-manager or admin role.</p></main>`;
  }
  if (!me) return html`${header}<main class="container"><${Loading} /></main>`;
  return html`${header}<main class="container" id="main"><${Page} where=${where} can=${abilities(me)} /></main>`;
}

render(html`<${App} />`, document.getElementById('app'));
