//! The note file format: a `---` fenced block of `key: scalar` lines, a blank line, then the
//! body verbatim. Parsing keeps every key (unknown and legacy snake_case ones included) in file
//! order; serialisation writes the known keys in their fixed order, then every other key in
//! insertion order. No interpretation of values happens here (see `note.rs`).

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Keys written first, in this order, when present.
pub const KNOWN_KEY_ORDER: [&str; 10] = [
    "origin",
    "crumpledAt",
    "createdAt",
    "updatedAt",
    "lastAccessed",
    "accessCount",
    "sourceWindow",
    "supersedes",
    "recurrenceCount",
    "recurrenceWindows",
];

/// A parsed note file.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<'a> {
    /// Whether a closed frontmatter block was found.
    pub has_frontmatter: bool,
    /// Every key of the block, in first-seen order (a duplicate's last value wins).
    pub fields: Map<String, Value>,
    /// The body (after the fence and one blank line). Without a block: the raw text unchanged.
    pub body: Cow<'a, str>,
}

/// Byte range of the frontmatter block: `(start_of_first_key_line, start_of_closing_fence,
/// start_of_body)`, or `None` when the text has no closed block.
fn locate(raw: &str) -> Option<(usize, usize, usize)> {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let bom = raw.len() - text.len();
    let first_end = memchr::memchr(b'\n', text.as_bytes()).unwrap_or(text.len());
    if text[..first_end].trim() != "---" || first_end == text.len() {
        return None;
    }
    let keys_start = bom + first_end + 1;
    let mut pos = keys_start;
    loop {
        let rest = &raw[pos..];
        let line_len = memchr::memchr(b'\n', rest.as_bytes());
        let line = &rest[..line_len.unwrap_or(rest.len())];
        if line.trim() == "---" {
            let after_fence = match line_len {
                Some(n) => pos + n + 1,
                None => raw.len(),
            };
            // Drop exactly one following empty line (a lone `\r` counts as empty).
            let rest = &raw[after_fence..];
            let body_start = if rest.starts_with('\n') {
                after_fence + 1
            } else if rest.starts_with("\r\n") || rest == "\r" {
                after_fence + rest.len().min(2)
            } else {
                after_fence
            };
            return Some((keys_start, pos, body_start));
        }
        match line_len {
            Some(n) => pos += n + 1,
            None => return None,
        }
    }
}

/// Parse a note file.
///
/// ```
/// use pi_context::notes::frontmatter;
/// let raw = "---\norigin: self\ncreated_at: 2020-01-01\nx-custom: \"a b\"\n---\n\nhello";
/// let parsed = frontmatter::parse(raw);
/// assert_eq!(parsed.body, "hello");
/// let keys: Vec<&str> = parsed.fields.keys().map(String::as_str).collect();
/// assert_eq!(keys, ["origin", "created_at", "x-custom"]);
/// assert_eq!(frontmatter::serialize(&parsed.fields, &parsed.body), raw);
/// ```
pub fn parse(raw: &str) -> Parsed<'_> {
    let (block, body) = split(raw);
    Parsed {
        has_frontmatter: block.is_some(),
        fields: block.map(parse_fields).unwrap_or_default(),
        body,
    }
}

/// [`parse`] without parsing the fields: the key lines of the block (`None` without a block)
/// and the body. [`parse_fields`] of the key lines, or [`field`] for one key, gives the rest.
pub fn split(raw: &str) -> (Option<&str>, Cow<'_, str>) {
    let Some((keys_start, fence, body_start)) = locate(raw) else {
        return (None, Cow::Borrowed(raw));
    };
    let body = &raw[body_start..];
    let body = if memchr::memchr(b'\r', body.as_bytes()).is_some() {
        // Lines lose one trailing `\r` each when a block exists.
        let mut out = crlf_to_lf(body);
        if out.ends_with('\r') {
            out.pop();
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(body)
    };
    (Some(&raw[keys_start..fence]), body)
}

/// Only the key lines of the block (cheap: the body is not touched). `None` without a block.
pub fn parse_fields_only(raw: &str) -> Option<Map<String, Value>> {
    let (keys_start, fence, _) = locate(raw)?;
    Some(parse_fields(&raw[keys_start..fence]))
}

/// The bytes of a file up to and including its closing fence line, found by a byte scan
/// (no UTF-8 validation of the body): `None` when no block is found this way.
pub fn block_prefix(raw: &[u8]) -> Option<&[u8]> {
    let start = if raw.starts_with("\u{feff}".as_bytes()) {
        3
    } else {
        0
    };
    let first_end = start + memchr::memchr(b'\n', &raw[start..])?;
    if raw[start..first_end].trim_ascii() != b"---" {
        return None;
    }
    let mut line_start = first_end + 1;
    while line_start < raw.len() {
        let end =
            memchr::memchr(b'\n', &raw[line_start..]).map_or(raw.len(), |n| line_start + n + 1);
        if is_fence(&raw[line_start..end]) {
            return Some(&raw[..end]);
        }
        line_start = end;
    }
    None
}

/// Whether a line of the block closes it as [`parse`] has it (`str::trim`, which also trims
/// Unicode spaces, of the decoded line equals `---`).
fn is_fence(line: &[u8]) -> bool {
    line.trim_ascii() == b"---"
        || (!line.is_ascii() && String::from_utf8_lossy(line).trim() == "---")
}

/// The fields of a file's block, parsed from its prefix only (cheap for large bodies).
pub fn fields_of_bytes(raw: &[u8]) -> Map<String, Value> {
    let prefix = block_prefix(raw).unwrap_or(raw);
    let text = String::from_utf8_lossy(prefix);
    parse_fields_only(&text).unwrap_or_default()
}

/// Whether the block of `raw` has a line starting with `key:` (a byte scan, no parsing).
pub fn block_has_key(raw: &[u8], key: &str) -> bool {
    let Some(prefix) = block_prefix(raw) else {
        // No ASCII-trimmed fence. A block needs a first line that trims to `---`, so one
        // without `---` has none (a note without frontmatter is not decoded whole); else
        // let the exact parse decide (rare).
        let first = &raw[..memchr::memchr(b'\n', raw).unwrap_or(raw.len())];
        if memchr::memmem::find(first, b"---").is_none() {
            return false;
        }
        return parse_fields_only(&String::from_utf8_lossy(raw))
            .is_some_and(|f| f.contains_key(key));
    };
    // Skip the opening fence line; the closing one cannot start with `key:`.
    memchr::memchr_iter(b'\n', prefix).any(|newline| {
        prefix[newline + 1..]
            .strip_prefix(key.as_bytes())
            .is_some_and(|rest| rest.starts_with(b":"))
    })
}

/// `text.replace("\r\n", "\n")`, found with `memchr` (the generic `str::replace` runs a
/// two-way searcher, ≈ 3× slower on a CRLF note).
fn crlf_to_lf(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut start = 0;
    for cr in memchr::memchr_iter(b'\r', bytes) {
        if bytes.get(cr + 1) == Some(&b'\n') {
            // `\r` is ASCII: `cr` is a character boundary.
            out.push_str(&text[start..cr]);
            start = cr + 1;
        }
    }
    out.push_str(&text[start..]);
    out
}

/// Every field of the key lines of a block ([`split`]), in first-seen order (a duplicate's
/// last value wins).
pub fn parse_fields(block: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    each_field(
        block,
        |_| true,
        |key, value| {
            fields.insert(key.to_owned(), value);
        },
    );
    fields
}

/// The value of one key of the key lines of a block: `parse_fields(block).get(key)`, without
/// building the other values (a search needs `updatedAt` alone from most notes).
pub fn field(block: &str, key: &str) -> Option<Value> {
    let mut last = None;
    each_field(block, |k| k == key, |_, value| last = Some(value));
    last
}

/// Hand every field of `block` whose key `wanted` accepts to `found`, in file order. A key
/// line with nothing after its colon takes the list-item lines after it as its array value;
/// those lines are skipped whatever the key (no list-item line can be a key line).
fn each_field<'b>(
    block: &'b str,
    wanted: impl Fn(&str) -> bool,
    mut found: impl FnMut(&'b str, Value),
) {
    let mut lines = block
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .peekable();
    while let Some(line) = lines.next() {
        let Some((key, rest)) = split_key(line) else {
            continue;
        };
        let want = wanted(key);
        let value = if rest.trim().is_empty() {
            let mut items = Vec::new();
            while let Some(item) = lines.peek().and_then(|l| list_item(l)) {
                if want {
                    items.push(scalar(item));
                }
                lines.next();
            }
            Value::Array(items)
        } else if want {
            scalar(rest)
        } else {
            continue;
        };
        if want {
            found(key, value);
        }
    }
}

/// `^([A-Za-z_][A-Za-z0-9_-]*):(.*)$`
fn split_key(line: &str) -> Option<(&str, &str)> {
    let colon = memchr::memchr(b':', line.as_bytes())?;
    let key = &line[..colon];
    let mut bytes = key.bytes();
    let first = bytes.next()?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    if !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return None;
    }
    Some((key, &line[colon + 1..]))
}

/// `^\s*-\s+` → the rest of the line.
fn list_item(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('-')?;
    let trimmed = rest.trim_start();
    if trimmed.len() == rest.len() {
        return None;
    }
    Some(trimmed)
}

/// Scalar rule: trim; empty → `""`; strict JSON if it parses; else strip one pair of matching
/// quotes; else the trimmed text.
pub fn scalar(text: &str) -> Value {
    let text = text.trim();
    if text.is_empty() {
        return Value::String(String::new());
    }
    if may_be_json(text)
        && let Ok(value) = serde_json::from_str::<Value>(text)
    {
        return value;
    }
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            return Value::String(text[1..text.len() - 1].to_owned());
        }
    }
    Value::String(text.to_owned())
}

/// False only for (trimmed) text that is certainly not one JSON value: a value starts with `"`,
/// `{`, `[`, a digit, `-`, or is `true`, `false` or `null`; text starting with a digit or `-`
/// can only be a number, which has no characters but digits, signs, `.` and exponents.
/// Skipping the parser there keeps the commonest values (dates, words) from building a JSON
/// error each, with its line and column (which also costs the process its CPU probe).
fn may_be_json(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(b'"' | b'{' | b'[') => true,
        Some(b'0'..=b'9' | b'-') => text
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)),
        _ => matches!(text, "true" | "false" | "null"),
    }
}

/// How one value is written: bare when it is a plain token (`^[A-Za-z0-9_.+\-:/]+$` and not a
/// YAML reserved word), compact JSON otherwise.
#[allow(clippy::expect_used, reason = "JSON values always serialise")]
pub fn write_scalar(value: &Value, out: &mut String) {
    if let Value::String(s) = value
        && !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.+-:/".contains(&b))
        && !["true", "false", "null", "yes", "no", "on", "off", "~"]
            .contains(&s.to_ascii_lowercase().as_str())
    {
        out.push_str(s);
        return;
    }
    out.push_str(&serde_json::to_string(value).expect("JSON values always serialise"));
}

/// The frontmatter block alone: `---\n<lines>\n---`.
pub fn serialize_block(fields: &Map<String, Value>) -> String {
    let mut out = String::from("---\n");
    let mut first = true;
    let mut line = |key: &str, value: &Value, out: &mut String| {
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(key);
        out.push_str(": ");
        write_scalar(value, out);
    };
    for key in KNOWN_KEY_ORDER {
        if let Some(value) = fields.get(key) {
            line(key, value, &mut out);
        }
    }
    for (key, value) in fields {
        if key == "scope" || KNOWN_KEY_ORDER.contains(&key.as_str()) {
            continue;
        }
        line(key, value, &mut out);
    }
    out.push_str("\n---");
    out
}

/// A whole note file: block, blank line, body. `scope` is never written.
pub fn serialize(fields: &Map<String, Value>, body: &str) -> String {
    let mut out = serialize_block(fields);
    out.reserve(body.len() + 3);
    out.push_str("\n\n");
    out.push_str(body);
    out
}

/// Content supplied by a caller loses a leading frontmatter block (so callers cannot inject
/// metadata); content without a closed block is kept verbatim.
pub fn strip_leading_frontmatter(content: &str) -> Cow<'_, str> {
    parse(content).body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_and_snake_case_keys_survive_a_round_trip_in_order() {
        let raw = "---\norigin: user\ncreatedAt: 2026-01-01T00:00:00.000+00:00\ncreated_at: 2020-01-01\naccess_count: 3\nzeta: \"two words\"\n__proto__: x\nalpha: [1,2]\n---\n\nbody\nline";
        let parsed = parse(raw);
        let keys: Vec<&str> = parsed.fields.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "origin",
                "createdAt",
                "created_at",
                "access_count",
                "zeta",
                "__proto__",
                "alpha"
            ]
        );
        assert_eq!(parsed.fields["access_count"], json!(3));
        assert_eq!(serialize(&parsed.fields, &parsed.body), raw);
    }

    #[test]
    fn known_keys_are_written_first_and_scope_never() {
        let raw = "---\nzeta: 1\nscope: human\naccessCount: 2\norigin: self\n---\n\nb";
        let parsed = parse(raw);
        assert_eq!(
            serialize(&parsed.fields, &parsed.body),
            "---\norigin: self\naccessCount: 2\nzeta: 1\n---\n\nb"
        );
    }

    #[test]
    fn block_lists_duplicates_and_ignored_lines() {
        let parsed = parse(
            "---\nlist:\n  - a\n  - \"b c\"\n# comment\n  indented: x\nk: 1\nk: 2\nempty:\n---\nbody",
        );
        assert_eq!(parsed.fields["list"], json!(["a", "b c"]));
        assert_eq!(parsed.fields["k"], json!(2));
        assert_eq!(parsed.fields["empty"], json!([]));
        assert_eq!(parsed.fields.len(), 3);
        assert_eq!(parsed.body, "body");
        assert_eq!(
            serialize(&parsed.fields, &parsed.body),
            "---\nlist: [\"a\",\"b c\"]\nk: 2\nempty: []\n---\n\nbody"
        );
    }

    #[test]
    fn scalars() {
        // Whatever `may_be_json` skips, strict JSON refuses too.
        for text in [
            "2026-01-01T00:00:00.000+00:00",
            "-",
            "12:30",
            "1 2",
            "1e5x",
            "0123",
            "-0x10",
            "3.5.1",
            "1_000",
            "-Infinity",
            "2026-01-01",
            "self",
            "trueish",
            "nul",
            "False",
            "NaN",
        ] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            assert_eq!(scalar(text), json!(text), "{text}");
        }
        for (text, value) in [
            ("-1.5e3", json!(-1500.0)),
            ("0", json!(0)),
            ("-7", json!(-7)),
        ] {
            assert!(may_be_json(text));
            assert_eq!(scalar(text), value, "{text}");
        }
        assert_eq!(scalar(" 17 "), json!(17));
        assert_eq!(scalar("true"), json!(true));
        assert_eq!(scalar("'quoted'"), json!("quoted"));
        assert_eq!(scalar("0123"), json!("0123"));
        assert_eq!(
            scalar("2026-01-01T00:00:00.000+00:00"),
            json!("2026-01-01T00:00:00.000+00:00")
        );
        let mut out = String::new();
        write_scalar(&json!("yes"), &mut out);
        write_scalar(&json!(" "), &mut out);
        write_scalar(&json!("a/b:c"), &mut out);
        assert_eq!(out, "\"yes\"\" \"a/b:c");
    }

    #[test]
    fn no_block_means_raw_body_and_crlf_is_normalised_inside_one() {
        let raw = "\u{feff}no fence\r\n---\n";
        let parsed = parse(raw);
        assert!(!parsed.has_frontmatter);
        assert_eq!(parsed.body, raw);
        let parsed = parse("\u{feff}---\r\norigin: self\r\n---\r\n\r\na\r\nb\r");
        assert_eq!(parsed.fields["origin"], json!("self"));
        assert_eq!(parsed.body, "a\nb");
        assert_eq!(parse("---\nx: 1\nno close").body, "---\nx: 1\nno close");
    }

    #[test]
    fn injected_frontmatter_is_stripped_from_written_content() {
        assert_eq!(
            strip_leading_frontmatter("---\nscope: human\nnonsense: true\n---\nreal body"),
            "real body"
        );
        assert_eq!(strip_leading_frontmatter("plain"), "plain");
    }

    #[test]
    fn key_scan_agrees_with_the_parse() {
        assert!(block_has_key(b"---\ncrumpledAt: x\n---\n\nb", "crumpledAt"));
        assert!(!block_has_key(
            b"---\nx: 1\n---\n\ncrumpledAt: x",
            "crumpledAt"
        ));
        assert!(!block_has_key(b"---\n crumpledAt: x\n---\n", "crumpledAt"));
        assert!(!block_has_key(b"crumpledAt: x", "crumpledAt"));
        // A closing fence padded with a Unicode space ends the block as the parse has it.
        let raw = "---\n---\u{3000}\ncrumpledAt: x\n---\n".as_bytes();
        assert!(
            !parse_fields_only(std::str::from_utf8(raw).unwrap())
                .unwrap()
                .contains_key("crumpledAt")
        );
        assert!(!block_has_key(raw, "crumpledAt"));
    }

    /// Pieces of files for the key scan: fences, ASCII and Unicode spaces (NBSP, ideographic
    /// space), a BOM, key lines, an invalid byte.
    const KEY_SCAN_PIECES: &[&[u8]] = &[
        b"---",
        b"\n",
        b"\r\n",
        b" ",
        b"\xc2\xa0",
        b"\xe3\x80\x80",
        b"\xef\xbb\xbf",
        b"crumpledAt: x",
        b"crumpledAt:",
        b"k: 1",
        b"# t",
        b"\xff",
        b"-",
        b"--",
    ];

    proptest::proptest! {
        /// One key's value, read alone, is the value the whole parse gives it, and the split
        /// gives the parse's body.
        #[test]
        fn one_field_agrees_with_the_whole_parse(
            lines in proptest::collection::vec(
                proptest::sample::select(&[
                    "updatedAt: 2026-01-01T00:00:00.000+00:00", "updatedAt:", "updatedAt: [1, 2]",
                    "updatedAt: \"x\"", "updatedAt :x", " updatedAt: y", "  - a", "- 2026-01-02",
                    "-b", "origin: self", "k:", "k: 1", "# c", "updatedAt: 1\r", "", "---x",
                ][..]),
                0..10,
            ),
            key in proptest::sample::select(&["updatedAt", "k", "origin", "absent"][..]),
            body in "(a|\r|\n|---){0,6}",
        ) {
            let block = lines.join("\n");
            proptest::prop_assert_eq!(field(&block, key), parse_fields(&block).get(key).cloned());
            let raw = format!("---\n{block}\n---\n{body}");
            let parsed = parse(&raw);
            let (keys, split_body) = split(&raw);
            proptest::prop_assert_eq!(keys.map(parse_fields), parsed.has_frontmatter.then(|| parsed.fields.clone()));
            proptest::prop_assert_eq!(split_body, parsed.body);
        }

        /// The `memchr` line-end rewrite is `str::replace`'s.
        #[test]
        fn crlf_rewrite_is_replace(text in "(a|é|\r|\n|\r\n|😀){0,24}") {
            proptest::prop_assert_eq!(crlf_to_lf(&text), text.replace("\r\n", "\n"));
        }

        /// The byte scan for a key agrees with the exact parse of the decoded file, whatever
        /// the first line looks like (fences with Unicode spaces, a BOM, no fence).
        #[test]
        fn key_scan_agrees_with_the_parse_everywhere(
            pieces in proptest::collection::vec(
                proptest::sample::select(KEY_SCAN_PIECES),
                0..12,
            ),
        ) {
            let raw = pieces.concat();
            let exact = parse_fields_only(&String::from_utf8_lossy(&raw))
                .is_some_and(|f| f.contains_key("crumpledAt"));
            proptest::prop_assert_eq!(block_has_key(&raw, "crumpledAt"), exact);
        }

        /// Nothing `may_be_json` turns away would have parsed as JSON.
        #[test]
        fn skipped_text_is_never_json(text in "(true|false|null|[-+0-9.eE:Tt xZ\"\\[\\]{}a-z']){0,8}") {
            let text = text.trim();
            if !text.is_empty() && !may_be_json(text) {
                proptest::prop_assert!(serde_json::from_str::<Value>(text).is_err(), "{}", text);
            }
        }
    }
}
