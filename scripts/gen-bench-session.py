#!/usr/bin/env python3
"""Build a large, tool-heavy Pi session from several real sessions, for scripts/bench-history.

Usage: gen-bench-session.py OUT.jsonl SOURCE.jsonl... [--size-mb N] [--sentinels A,B,...]

The entry lines of every SOURCE (v1 files included: they get ids) are replayed in turn, one
source after the other, again and again, as one linear chain: each line gets a fresh id and the
previous line's id as its parent; compaction `firstKeptEntryId`, label `targetId` and tool-call
ids are renamed per copy so calls still pair with their results. Lines are rewritten textually
(ids only), so every other byte is kept. Each sentinel is written once, into a user message in
the middle of the file: the rare literals the benchmark searches for.
"""
import argparse
import json
import re

ID_FIELDS = re.compile(r'"(firstKeptEntryId|targetId|fromId)":"([^"]*)"')
HEAD_IDS = re.compile(r'^\{"type":"([^"]*)"(,"id":"[^"]*")?(,"parentId":(null|"[^"]*"))?')
TOOL_IDS = re.compile(r'"(toolCallId|id)":"((?:toolu|call|tool)_[^"]*)"')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--size-mb", type=float, default=100.0)
    ap.add_argument("--sentinels", default="quetzalcoatl")
    args = ap.parse_args()

    sources = []
    for path in args.sources:
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
        sources.append(lines[1:])
    target = int(args.size_mb * 1024 * 1024)
    counter = 0
    written = 0
    last_id = None
    sentinels = [s for s in args.sentinels.split(",") if s]
    with open(args.out, "w", encoding="utf-8") as out:
        header = json.dumps({"type": "session", "version": 3, "id": "0197bench-0000-7000-8000-000000000000",
                             "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/home/user/project"},
                            separators=(",", ":"))
        out.write(header + "\n")
        written += len(header) + 1
        copy = 0
        while written < target:
            for entries in sources:
                mapping = {}
                for line in entries:
                    if not line.startswith('{"type":"') or line.startswith('{"type":"session"'):
                        continue
                    counter += 1
                    new_id = "%08x" % counter
                    head = HEAD_IDS.match(line)
                    if head and head.group(2) and head.group(3) and '"id":' not in line[head.end():].split('"message":', 1)[0]:
                        # The usual layout: swap the ids in place, keep every other byte.
                        mapping[head.group(2)[7:-1]] = new_id
                        parent = "null" if last_id is None else '"%s"' % last_id
                        line = '{"type":"%s","id":"%s","parentId":%s' % (head.group(1), new_id, parent) + line[head.end():]
                    else:
                        # Ids elsewhere (or none, v1): re-serialise this one line.
                        entry = json.loads(line)
                        if isinstance(entry.get("id"), str):
                            mapping[entry["id"]] = new_id
                        entry["id"] = new_id
                        entry["parentId"] = last_id
                        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
                    line = ID_FIELDS.sub(lambda m: '"%s":"%s"' % (m.group(1), mapping.get(m.group(2), m.group(2))), line)
                    line = TOOL_IDS.sub(lambda m: '"%s":"%s_%d"' % (m.group(1), m.group(2), copy), line)
                    if sentinels and written > target // 2 and '"role":"user"' in line:
                        entry = json.loads(line)
                        entry["message"]["content"] = [{"type": "text", "text": "note: %s here" % sentinels.pop(0)}]
                        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
                    last_id = new_id
                    out.write(line + "\n")
                    written += len(line.encode("utf-8")) + 1
                    if written >= target:
                        break
                if written >= target:
                    break
            copy += 1


if __name__ == "__main__":
    main()
