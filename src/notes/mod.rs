//! The notes store: five homes of markdown notes under one notes root (identity, addresses,
//! paths, frontmatter, store operations, search). Pure library: no printing, no env reads;
//! the caller passes the identity, the root and the current time.
