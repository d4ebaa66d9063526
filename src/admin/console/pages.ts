/** None of the documents holds anything from a request; the CSRF token is base64url, made by us. */
function documentOf(head: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/pico.min.css">
<link rel="stylesheet" href="/console/console.css">
${head}
</head>
<body>
${body}
</body>
</html>
`;
}

export function shellPage(csrfToken: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(csrfToken)) throw new Error('a CSRF token is base64url');
  return documentOf(
    `<meta name="csrf-token" content="${csrfToken}">
<title>sitekey-authz console</title>
<script type="module" src="/console/app.js"></script>`,
    `<div id="app"><main class="container"><p aria-busy="true">Loading the console…</p></main></div>
<noscript><main class="container"><p>The console needs JavaScript.</p></main></noscript>`,
  );
}

export const SIGNED_OUT_PAGE = documentOf(
  '<title>Signed out · sitekey-authz console</title>',
  `<main class="container">
<h1>You are signed out</h1>
<p><a href="/">Sign in again</a></p>
</main>`,
);

/** For a sign-in that cannot go on. Its words are ours (the details go to the log): markup is refused. */
export function problemPage(title: string, message: string): string {
  if (/[&<>"']/.test(title + message)) throw new Error('a problem page says our own words, without markup');
  return documentOf(
    `<title>${title} · sitekey-authz console</title>`,
    `<main class="container">
<h1>${title}</h1>
<p role="alert">${message}</p>
<p><a href="/">Start again</a></p>
</main>`,
  );
}
