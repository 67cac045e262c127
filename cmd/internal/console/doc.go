// Package console is pgsaga's operator console (`pgsaga console`; its JSON API is docs/api/console.yaml): server-rendered
// pages for the people who look after stuck payments, each with a JSON twin for scripts, and
// River's own UI (riverui) under /river/. GET /charges/unmatched lists the provider's charges
// that the worker's reconciliation found no key accounting for (package reconcile), and the
// overview says how many there are.
//
// What it guarantees:
//   - Every read goes through the engine's read API (saga.Client.KeyGet, KeyList, KeyCount) or
//     reconcile.Reconciler's (List, Count); every action through saga.Client.Resume and Settle,
//     recorded in the key's history under the signed-in operator's name. It writes no SQL of its
//     own: operators are read through internal/operator.
//   - Nothing but GET /login, POST /login and the stylesheet answers without an operator's
//     token: as a Bearer header, or through the session cookie a login sets (HttpOnly,
//     SameSite=Strict, Secure and __Host- prefixed unless Config.InsecureHTTP). Config.Token is
//     compared in constant time; a stored operator is found by the token's digest. Without
//     either, a browser is sent to /login (303) and a script gets 401
//     {"error":"unauthenticated"}.
//   - A session ends after SessionTTL (12h), after SessionIdle (1h) without a request, on
//     logout, and when its operator is revoked: a stored operator is checked on every request.
//   - Sign-ins are throttled (limiter.go): after MaxFailedSignIns failures from one address
//     within SignInWindow, every attempt from it is 429 too_many_attempts with Retry-After,
//     a right token included; failures naming an operator in the login form lock that name
//     with a doubling delay. Every failure is logged with the address.
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
