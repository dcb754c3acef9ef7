//! Go `text/template` subset used by `golang.template`.
