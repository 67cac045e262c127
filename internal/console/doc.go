// Package console is pgsaga's operator console (`pgsaga console`, CONTRACT.md): server-rendered
// pages for the people who look after stuck payments, each with a JSON twin for scripts, and
// River's own UI (riverui) under /river/. GET /charges/unmatched lists the provider's charges
// that the worker's reconciliation found no key accounting for (package reconcile), and the
// overview says how many there are.
//
// What it guarantees:
//   - Every read goes through the engine's read API (saga.Client.KeyGet, KeyList, KeyCount) or
//     reconcile.Reconciler's (List, Count);
//     every action through saga.Client.Resume and Settle, recorded in the key's history as done
//     by "console". It writes no SQL of its own.
//   - Nothing but GET /login, POST /login and the stylesheet answers without the token: as a
//     Bearer header, or through the session cookie a login sets (HttpOnly, SameSite=Strict,
//     Secure over TLS). Tokens are compared in constant time. Without either, a browser is sent
//     to /login (303) and a script gets 401 {"error":"unauthenticated"}.
//   - A state-changing request of a cookie session carries the session's CSRF token (form
//     field "csrf" or header X-CSRF-Token), or it is refused with 403 and changes nothing. A
//     Bearer request needs none. riverui's own API calls are guarded by cross-origin protection.
//   - The pages run no script and load nothing but the console's stylesheet (a CSP of
//     default-src 'self', script-src 'none', frame-ancestors 'none'); they work with JavaScript
//     off. riverui gets the policy its React app needs, under /river/ only.
//   - A bad query parameter is a 400, never a 500: values are checked (UTF-8, no NUL, length)
//     before they reach the database.
//
// Content negotiation: a request whose Accept header prefers text/html to application/json gets
// a page; any other (no Accept, */*, application/json) gets JSON.
package console
