//! The history projection of a Pi session: seq-addressed events, reset windows, and the four
//! history operations (windows, list, read, search) with their bounded results and texts.
