//! CLI tests for the doctor family (filled in with the feature).
