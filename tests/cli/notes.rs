//! CLI tests for the notes family (filled in with the feature).
