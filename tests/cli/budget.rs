//! CLI tests for the budget family (filled in with the feature).
