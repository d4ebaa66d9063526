/**
 * The two documents the server writes itself: the page shell (the app renders into it) and the
 * signed-out page. Neither holds anything from a request; the CSRF token is base64url, made by us.
 */
const HEAD = `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/pico.min.css">
<link rel="stylesheet" href="/console/console.css">`;

export function shellPage(csrfToken: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(csrfToken)) throw new Error('a CSRF token is base64url');
  return `<!doctype html>
<html lang="en">
<head>
${HEAD}
<meta name="csrf-token" content="${csrfToken}">
<title>sitekey-authz console</title>
<script type="module" src="/console/app.js"></script>
</head>
<body>
<div id="app"><main class="container"><p aria-busy="true">Loading the console…</p></main></div>
<noscript><main class="container"><p>The console needs JavaScript.</p></main></noscript>
</body>
</html>
`;
}

export const SIGNED_OUT_PAGE = `<!doctype html>
<html lang="en">
<head>
${HEAD}
<title>Signed out · sitekey-authz console</title>
</head>
<body>
<main class="container">
<h1>You are signed out</h1>
<p><a href="/">Sign in again</a></p>
</main>
</body>
</html>
`;

/**
 * A short page for a sign-in that cannot go on: what happened and the way back. Its words are ours
 * (the details go to the log), so they hold no markup; anything else is refused.
 */
export function problemPage(title: string, message: string): string {
  const escape = (text: string) => {
    if (/[&<>"']/.test(text)) throw new Error('a problem page says our own words, without markup');
    return text;
  };
  return `<!doctype html>
<html lang="en">
<head>
${HEAD}
<title>${escape(title)} · sitekey-authz console</title>
</head>
<body>
<main class="container">
<h1>${escape(title)}</h1>
<p role="alert">${escape(message)}</p>
<p><a href="/">Start again</a></p>
</main>
</body>
</html>
`;
}
