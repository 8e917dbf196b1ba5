//! CLI tests for the boot family (filled in with the feature).
