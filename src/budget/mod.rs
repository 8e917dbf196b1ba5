//! The context-budget policy: resolved Pi settings, thresholds, the countdown and the
//! reminder/warning/hard-reset decision. Pure functions of explicit inputs.
