#!/usr/bin/env python3
"""Build a large, tool-heavy Pi session from several real sessions, for scripts/bench-history.

Usage: gen-bench-session.py OUT.jsonl SOURCE.jsonl... [--size-mb N] [--sentinels A,B,...]
                             [--shape linear|branched|long-lines|chatty] [--seed N]

The entry lines of every SOURCE (v1 files included: they get ids) are replayed in turn, one
source after the other, again and again, as one linear chain: each line gets a fresh id and the
previous line's id as its parent; compaction `firstKeptEntryId`, label `targetId` and tool-call
ids are renamed per copy so calls still pair with their results. Lines are rewritten textually
(ids only), so every other byte is kept. Each sentinel is written once, into a user message in
the middle of the file: the rare literals the benchmark searches for (a sentinel may hold any character, a newline too).

Shapes, to try the history commands on sessions unlike the default mix (`scripts/bench-history`
takes the file with SESSION=):
  linear      the sources as one chain (the default, above);
  branched    the chain forks every ≈300 entries: a `branch_summary` hung off an entry picked
              mostly from early in the file starts the next segment, so the active branch is a
              small part of the file; a model change every 97 entries, a compaction every 211,
              a reset marker (a fresh window id) every 307;
  long-lines  every 7th tool result's text is repeated to 1–6 MB (one line each);
  chatty      the sources' texts cut into short sentences, replayed as tiny user / assistant
              messages and short tool calls with results (≈175 bytes a line: ≈1 M lines per
              170 MiB).
"""
import argparse
import json
import random
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
    ap.add_argument("--shape", default="linear", choices=["linear", "branched", "long-lines", "chatty"])
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    sources = []
    for path in args.sources:
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
        sources.append(lines[1:])
    target = int(args.size_mb * 1024 * 1024)
    counter = 0
    long_lines_seen = 0
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
        ids = []
        if args.shape == "chatty":
            sources = [chatty_lines(sources, rng)]

        def extra(kind, parent, body):
            nonlocal counter
            counter += 1
            new_id = "%08x" % counter
            entry = {"type": kind, "id": new_id, "parentId": parent,
                     "timestamp": "2026-01-01T00:%02d:%02d.000Z" % (counter // 60 % 60, counter % 60)}
            entry.update(body)
            return new_id, json.dumps(entry, ensure_ascii=False, separators=(",", ":"))

        while written < target:
            for entries in sources:
                mapping = {}
                for line in entries:
                    if not line.startswith('{"type":"') or line.startswith('{"type":"session"'):
                        continue
                    if args.shape == "branched" and ids:
                        pre = []
                        if counter % 300 == 299:
                            # Tree navigation: the next segment hangs off an early entry.
                            leaf = last_id
                            last_id = ids[int(len(ids) * rng.random() ** 3)]
                            last_id, summary = extra("branch_summary", last_id, {
                                "fromId": leaf, "summary": "Went back to try another way (%d)." % counter})
                            pre.append(summary)
                        if counter % 97 == 96:
                            last_id, l = extra("model_change", last_id, {
                                "provider": "anthropic", "modelId": rng.choice(["claude-sonnet-4-5", "gpt-5.1-codex", "faux-1"])})
                            pre.append(l)
                        if counter % 211 == 210:
                            kept = ids[max(0, len(ids) - 20)]
                            last_id, l = extra("compaction", last_id, {
                                "summary": "## Goal\nKeep going (%d).\n" % counter, "firstKeptEntryId": kept,
                                "tokensBefore": 1000 + counter % 5000})
                            pre.append(l)
                        if counter % 307 == 306:
                            last_id, l = extra("custom", last_id, {
                                "customType": "pi-context/reset-marker", "data": {"windowId": "pcw:0197benc:%08x" % counter}})
                            pre.append(l)
                        for l in pre:
                            ids.append(json.loads(l)["id"])
                            out.write(l + "\n")
                            written += len(l.encode("utf-8")) + 1
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
                    if args.shape == "long-lines" and '"role":"toolResult"' in line:
                        long_lines_seen += 1
                        if long_lines_seen % 7 == 0:
                            line = inflate(line, (1 + long_lines_seen // 7 % 6) * 1024 * 1024)
                    last_id = new_id
                    ids.append(new_id)
                    out.write(line + "\n")
                    written += len(line.encode("utf-8")) + 1
                    if written >= target:
                        break
                if written >= target:
                    break
            copy += 1


def inflate(line, size):
    """The tool result's text blocks repeated (numbered) until the line holds about `size` bytes."""
    entry = json.loads(line)
    blocks = [b for b in entry["message"].get("content", []) if isinstance(b, dict) and b.get("type") == "text"]
    if not blocks or not blocks[0].get("text"):
        return line
    text = blocks[0]["text"]
    parts, n, total = [], 0, 0
    while total < size:
        n += 1
        piece = "[%d] %s\n" % (n, text)
        parts.append(piece)
        total += len(piece.encode("utf-8"))
    blocks[0]["text"] = "".join(parts)
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def chatty_lines(sources, rng):
    """Tiny message lines made of the sources' sentences (ids and parents are set by the caller)."""
    sentences = []
    for entries in sources:
        for line in entries:
            entry = json.loads(line)
            msg = entry.get("message") if isinstance(entry.get("message"), dict) else None
            if not msg:
                continue
            content = msg.get("content")
            texts = [content] if isinstance(content, str) else [
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            for t in texts:
                for s in re.split(r"(?<=[.!?\n])\s+", t or ""):
                    s = s.strip()
                    if 4 <= len(s) <= 28:
                        sentences.append(s)
    if not sentences:
        sentences = ["ok", "done", "next"]
    ts = '"timestamp":"2026-01-01T00:00:00.000Z"'
    lines = []
    for i in range(20000):
        pick = rng.random()
        text = json.dumps(rng.choice(sentences), ensure_ascii=False)
        if pick < 0.4:
            body = '"message":{"role":"user","content":%s}' % text
        elif pick < 0.85:
            body = '"message":{"role":"assistant","content":[{"type":"text","text":%s}]}' % text
        elif pick < 0.93:
            body = '"message":{"role":"assistant","content":[{"type":"toolCall","id":"call_%d","name":"read","arguments":{"path":"a%d.md"}}]}' % (i, i % 50)
        else:
            body = '"message":{"role":"toolResult","toolCallId":"call_%d","toolName":"read","content":[{"type":"text","text":%s}]}' % (i - 1, text)
        lines.append('{"type":"message","id":"x","parentId":null,%s,%s}' % (ts, body))
    return lines


if __name__ == "__main__":
    main()
