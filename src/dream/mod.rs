//! `dream`: locked, gated, jailed consolidation of the notes store by a dreamer model, audited
//! in Git. The domain owns the lock, gates, jail and audit; the CLI owns processes and signals.
