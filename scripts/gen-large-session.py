#!/usr/bin/env python3
"""Build a large Pi session by replaying real fixture entries with fresh ids.

Usage: gen-large-session.py SOURCE.jsonl OUT.jsonl [--size-mb N] [--sentinel WORD]

The source's entry lines are appended again and again as one linear chain: every entry id,
parent id, compaction `firstKeptEntryId`, label `targetId` and tool-call id gets a fresh
unique value per copy, and the first entry of each copy continues from the last entry of the
previous copy. Lines are rewritten textually (ids only), so every byte Pi wrote is otherwise
kept. One user message in the middle copy carries SENTINEL, the rare literal the benchmark
searches for.
"""
import argparse
import json
import re
import sys

ID_FIELDS = re.compile(r'"(id|parentId|firstKeptEntryId|targetId|fromId)":"([0-9a-f]{8})"')
TOOL_IDS = re.compile(r'toolu_[A-Za-z0-9]+')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=100.0)
    ap.add_argument("--sentinel", default="quetzalcoatl")
    args = ap.parse_args()

    with open(args.source, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    header, entries = lines[0], lines[1:]
    target = int(args.size_mb * 1024 * 1024)
    per_copy = sum(len(l.encode("utf-8")) + 1 for l in entries)
    copies = max(1, target // per_copy)
    middle = copies // 2
    counter = 0
    last_id = None
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(header + "\n")
        for copy in range(copies):
            mapping = {}

            def fresh(old):
                nonlocal counter
                if old not in mapping:
                    counter += 1
                    mapping[old] = "%08x" % counter
                return mapping[old]

            sentinel_done = copy != middle
            for index, line in enumerate(entries):
                line = ID_FIELDS.sub(lambda m: '"%s":"%s"' % (m.group(1), fresh(m.group(2))), line)
                if index == 0 and last_id is not None:
                    # Chain this copy onto the previous one.
                    line = line.replace('"parentId":null', '"parentId":"%s"' % last_id, 1)
                line = TOOL_IDS.sub(lambda m: "%s_%d" % (m.group(0), copy), line)
                if not sentinel_done and '"role":"user"' in line:
                    entry = json.loads(line)
                    entry["message"]["content"] = [
                        {"type": "text", "text": "Remember the %s checkpoint." % args.sentinel}
                    ]
                    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
                    sentinel_done = True
                out.write(line + "\n")
                m = re.search(r'"id":"([0-9a-f]{8})"', line)
                if m:
                    last_id = m.group(1)
    print(f"{args.out}: {copies} copies of {len(entries)} entries", file=sys.stderr)


if __name__ == "__main__":
    main()
