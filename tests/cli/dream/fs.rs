//! Filled in with the dream-fs jail tests.
