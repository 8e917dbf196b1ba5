//! Reader for Pi session JSONL files (v1–v3): streaming decode, the id/parentId tree and the
//! active branch. Never rewrites a session file; malformed lines are skipped and counted.
