//! wire placeholder
