//! Filled in with the real-Pi end-to-end test.
