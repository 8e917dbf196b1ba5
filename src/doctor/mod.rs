//! `doctor`: a read-only check of a notes home (layout, frontmatter, dangling addresses,
//! locks). It never creates, repairs or commits anything.
