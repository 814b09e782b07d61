"""Who may call what on the web: route guards (one dependency per role), who is asking
(session, token, auth proxy, anonymous), anti-forgery tokens, Host and Origin checks and
security headers. Every route declares its guard; ``assert_guarded`` refuses an app with
a route that does not (see docs/web.md, "Access control")."""
