//! CLI tests for the history family (filled in with the feature).
