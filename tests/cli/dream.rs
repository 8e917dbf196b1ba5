//! CLI tests for the dream family (filled in with the feature).
