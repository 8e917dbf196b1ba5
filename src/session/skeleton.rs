//! The light per-line decode of a session file: only what the tree, seq allocation, reset
//! windows and call/result pairing need (type, ids, timestamp, role, tool-call ids and names,
//! marker window ids, whether a message has text). Everything else — message text, tool
//! output, arguments, usage — is skipped by serde's `IgnoredAny` without being allocated, so
//! the whole-file pass stays close to memory bandwidth. It must not interpret fields beyond
//! that: full decoding of one entry is `super::parse_value`.
//!
//! Fields of an unexpected JSON type are ignored rather than failing the line, the way Pi's
//! JavaScript reader keeps such lines: only a line that is not one JSON object is malformed.
//! Duplicate keys keep the last value, as `JSON.parse` does.

use std::borrow::Cow;
use std::fmt;

use compact_str::CompactString;
use thin_vec::ThinVec;

use super::ToolCallMeta;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What the light decode extracts from one line. Names that are only compared (`type`,
/// `role`) borrow from the line when they hold no escape, so the common line allocates only
/// its ids and timestamp.
#[derive(Debug, Default)]
pub(crate) struct RawEntry<'de> {
    pub kind: Option<Cow<'de, str>>,
    /// Borrowed from the line where it holds no escape, like the other names: an entry keeps
    /// its own id, and its parent's only when that is not the entry before it.
    pub id: Option<Cow<'de, str>>,
    pub parent_id: Option<Cow<'de, str>>,
    /// Borrowed from the line (only a `custom` entry's and the header's are kept).
    pub timestamp: Option<Cow<'de, str>>,
    pub custom_type: Option<CompactString>,
    /// `data.windowId` when `data` is an object and `windowId` a string.
    pub data_window_id: Option<CompactString>,
    pub message: Option<RawMessage<'de>>,
    /// Header only: `version` when it is a non-negative integer.
    pub version: Option<u64>,
    pub version_present: bool,
}

#[derive(Debug, Default)]
pub(crate) struct RawMessage<'de> {
    pub role: Option<Cow<'de, str>>,
    pub content: ContentMeta,
    pub tool_call_id: Option<CompactString>,
    /// Where `tool_call_id`'s characters start in the line (past the opening quote), when
    /// the light decode read it: the string then holds no escape, so the line's bytes there
    /// are the id itself, followed by its closing quote. `None` from the full decode.
    pub tool_call_id_at: Option<u32>,
    pub tool_name: Option<CompactString>,
    /// The message has a `nestedCalls` key (whatever its value): the only place a tool
    /// result's document takes nested calls from.
    pub has_nested_calls: bool,
}

/// What the content of a message looks like, without its text.
#[derive(Debug, Default)]
pub(crate) struct ContentMeta {
    pub is_array: bool,
    /// Whether `contentText(content)` is non-empty: a non-empty string, or text blocks
    /// whose joined text is non-empty (two empty text blocks join to `"\n"`).
    pub has_text: bool,
    /// The `toolCall` blocks in content order: (`id` when a string, `name` when a string).
    pub tool_calls: ThinVec<ToolCallMeta>,
}

#[cfg(test)]
impl ContentMeta {
    /// The tool calls as (`id`, `name`) pairs, for tests to compare.
    pub(crate) fn call_pairs(&self) -> Vec<(Option<&str>, Option<&str>)> {
        self.tool_calls
            .iter()
            .map(|call| (call.id.as_deref(), call.name.as_deref()))
            .collect()
    }
}

/// Decode one line. `Err` means the line is not one JSON object (malformed), including a line
/// nested deeper than a full decode accepts (see [`too_deep`]), so that every reader of the
/// file applies one rule to it.
pub(crate) fn decode(line: &[u8]) -> Result<RawEntry<'_>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let entry = de.deserialize_map(EntryVisitor)?;
    de.end()?;
    if too_deep(line) {
        return Err(de::Error::custom("recursion limit exceeded"));
    }
    Ok(entry)
}

/// Arrays and objects nested this deep make serde_json's full decode fail (its recursion
/// limit): the skeleton skips nested values without that limit, so it checks the depth itself.
pub(crate) const MAX_NESTING: usize = 127;

/// Whether the JSON text `line` nests arrays/objects more than [`MAX_NESTING`] deep. Cheap for
/// the common line: only a line with more than that many `[`/`{` bytes is scanned for
/// structure (skipping strings).
pub(crate) fn too_deep(line: &[u8]) -> bool {
    let openers = line.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if openers <= MAX_NESTING {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    false
}

/// A string field that tolerates other JSON types (they read as absent).
struct LooseString;

impl<'de> DeserializeSeed<'de> for LooseString {
    type Value = Option<CompactString>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(LooseStringVisitor)
    }
}

struct LooseStringVisitor;

macro_rules! ignore_scalars {
    ($ret:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
    };
}

macro_rules! ignore_compounds {
    ($ret:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($ret)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($ret)
        }
    };
}

impl<'de> Visitor<'de> for LooseStringVisitor {
    type Value = Option<CompactString>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.into()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v.into()))
    }
    ignore_scalars!(None);
    ignore_compounds!(None);
}

/// A name that is only compared: borrowed from the line unless it holds an escape. Other JSON
/// types read as absent, like [`LooseString`].
struct LooseName;

impl<'de> DeserializeSeed<'de> for LooseName {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(LooseNameVisitor)
    }
}

struct LooseNameVisitor;

impl<'de> Visitor<'de> for LooseNameVisitor {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }
    ignore_scalars!(None);
    ignore_compounds!(None);
}

/// The top-level and nested keys we care about, decoded without allocating (also by the
/// light decoder).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Key {
    Type,
    Id,
    ParentId,
    Timestamp,
    CustomType,
    Data,
    Message,
    Version,
    Role,
    Content,
    ToolCallId,
    ToolName,
    Name,
    Text,
    WindowId,
    NestedCalls,
    Other,
}

impl Key {
    /// The key `raw` names. Compared as one or two machine words per key length instead of
    /// byte strings: a line of a session holds some forty keys, and the byte-string match
    /// called `memcmp` for each (≈ 4 % of a cold read of a session of short lines).
    pub(super) fn of(raw: &[u8]) -> Key {
        /// The key's length and its bytes as two words: the first 8 (or 4) and the last 4,
        /// which together cover every byte of a key of 4 to 12 bytes, so keys of one length
        /// with equal words are equal.
        const fn words(k: &[u8]) -> (usize, u64, u32) {
            let n = k.len();
            let tail = u32::from_le_bytes([k[n - 4], k[n - 3], k[n - 2], k[n - 1]]);
            let head = if n >= 8 {
                u64::from_le_bytes([k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]])
            } else {
                u32::from_le_bytes([k[0], k[1], k[2], k[3]]) as u64
            };
            (n, head, tail)
        }
        const TYPE: (usize, u64, u32) = words(b"type");
        const DATA: (usize, u64, u32) = words(b"data");
        const ROLE: (usize, u64, u32) = words(b"role");
        const NAME: (usize, u64, u32) = words(b"name");
        const TEXT: (usize, u64, u32) = words(b"text");
        const MESSAGE: (usize, u64, u32) = words(b"message");
        const VERSION: (usize, u64, u32) = words(b"version");
        const CONTENT: (usize, u64, u32) = words(b"content");
        const PARENT_ID: (usize, u64, u32) = words(b"parentId");
        const TOOL_NAME: (usize, u64, u32) = words(b"toolName");
        const WINDOW_ID: (usize, u64, u32) = words(b"windowId");
        const TIMESTAMP: (usize, u64, u32) = words(b"timestamp");
        const CUSTOM_TYPE: (usize, u64, u32) = words(b"customType");
        const TOOL_CALL_ID: (usize, u64, u32) = words(b"toolCallId");
        const NESTED_CALLS: (usize, u64, u32) = words(b"nestedCalls");
        match raw.len() {
            2 if raw == b"id" => Key::Id,
            4..=12 => match words(raw) {
                TYPE => Key::Type,
                DATA => Key::Data,
                ROLE => Key::Role,
                NAME => Key::Name,
                TEXT => Key::Text,
                MESSAGE => Key::Message,
                VERSION => Key::Version,
                CONTENT => Key::Content,
                PARENT_ID => Key::ParentId,
                TOOL_NAME => Key::ToolName,
                WINDOW_ID => Key::WindowId,
                TIMESTAMP => Key::Timestamp,
                CUSTOM_TYPE => Key::CustomType,
                TOOL_CALL_ID => Key::ToolCallId,
                NESTED_CALLS => Key::NestedCalls,
                _ => Key::Other,
            },
            _ => Key::Other,
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::of(v.as_bytes()))
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = RawEntry<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEntry<'de>, A::Error> {
        let mut entry = RawEntry::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Type => entry.kind = map.next_value_seed(LooseName)?,
                Key::Id => entry.id = map.next_value_seed(LooseName)?,
                Key::ParentId => entry.parent_id = map.next_value_seed(LooseName)?,
                Key::Timestamp => entry.timestamp = map.next_value_seed(LooseName)?,
                Key::CustomType => entry.custom_type = map.next_value_seed(LooseString)?,
                Key::Data => entry.data_window_id = map.next_value_seed(DataSeed)?,
                Key::Message => entry.message = map.next_value_seed(MessageSeed)?,
                Key::Version => {
                    entry.version_present = true;
                    entry.version = map.next_value_seed(LooseU64)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(entry)
    }
}

/// `version`: a non-negative integer (a float with an integral value counts, as in JS).
struct LooseU64;

impl<'de> DeserializeSeed<'de> for LooseU64 {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(LooseU64Visitor)
    }
}

struct LooseU64Visitor;

impl<'de> Visitor<'de> for LooseU64Visitor {
    type Value = Option<u64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).ok())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((v.fract() == 0.0 && (0.0..1e18).contains(&v)).then_some(v as u64))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    ignore_compounds!(None);
}

/// `data` of a custom entry: only `windowId` (reset markers) matters.
struct DataSeed;

impl<'de> DeserializeSeed<'de> for DataSeed {
    type Value = Option<CompactString>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(DataVisitor)
    }
}

struct DataVisitor;

impl<'de> Visitor<'de> for DataVisitor {
    type Value = Option<CompactString>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    ignore_scalars!(None);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut window_id = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::WindowId => window_id = map.next_value_seed(LooseString)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(window_id)
    }
}

struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Option<RawMessage<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Option<RawMessage<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    ignore_scalars!(None);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut message = RawMessage::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Role => message.role = map.next_value_seed(LooseName)?,
                Key::Content => message.content = map.next_value_seed(ContentSeed)?,
                Key::ToolCallId => message.tool_call_id = map.next_value_seed(LooseString)?,
                Key::ToolName => message.tool_name = map.next_value_seed(LooseString)?,
                Key::NestedCalls => {
                    message.has_nested_calls = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(message))
    }
}

struct ContentSeed;

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = ContentMeta;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = ContentMeta;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(ContentMeta {
            has_text: !v.is_empty(),
            ..ContentMeta::default()
        })
    }
    ignore_scalars!(ContentMeta::default());
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(ContentMeta::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut meta = ContentMeta {
            is_array: true,
            ..ContentMeta::default()
        };
        let mut text_blocks = 0usize;
        while let Some(block) = seq.next_element_seed(BlockSeed)? {
            match block {
                Block::Text { non_empty } => {
                    text_blocks += 1;
                    meta.has_text |= non_empty;
                }
                Block::ToolCall { id, name } => meta.tool_calls.push(ToolCallMeta { id, name }),
                Block::Other => {}
            }
        }
        // Joined with "\n": two or more text blocks are never an empty text.
        meta.has_text |= text_blocks >= 2;
        Ok(meta)
    }
}

enum Block {
    Text {
        non_empty: bool,
    },
    ToolCall {
        id: Option<CompactString>,
        name: Option<CompactString>,
    },
    Other,
}

struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = Block;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = Block;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Block::Other)
    }
    ignore_scalars!(Block::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Block::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind: Option<Cow<'de, str>> = None;
        let mut id = None;
        let mut name = None;
        // None: no string `text`; Some(non_empty).
        let mut text: Option<bool> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Key::Type => kind = map.next_value_seed(LooseName)?,
                Key::Id => id = map.next_value_seed(LooseString)?,
                Key::Name => name = map.next_value_seed(LooseString)?,
                Key::Text => text = map.next_value_seed(TextProbe)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match kind.as_deref() {
            Some("text") => match text {
                Some(non_empty) => Block::Text { non_empty },
                None => Block::Other,
            },
            Some("toolCall") => Block::ToolCall { id, name },
            _ => Block::Other,
        })
    }
}

/// Whether a `text` value is a string, and whether it is non-empty — without decoding it: the
/// raw JSON slice is enough (`""` is the only empty string), so long texts are only skipped.
struct TextProbe;

impl<'de> DeserializeSeed<'de> for TextProbe {
    type Value = Option<bool>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let raw = <&'de serde_json::value::RawValue as serde::Deserialize>::deserialize(d)?;
        let json = raw.get();
        Ok(json.starts_with('"').then_some(json != "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Key::of` compares machine words: it must name exactly the keys a byte-string match
    /// names, for the keys themselves, their prefixes, extensions and overlaps (`textext`
    /// begins and ends with `text`), and keys that differ in one byte anywhere.
    #[test]
    fn keys_are_named_as_a_byte_string_match_names_them() {
        fn reference(raw: &[u8]) -> Key {
            match raw {
                b"type" => Key::Type,
                b"id" => Key::Id,
                b"parentId" => Key::ParentId,
                b"timestamp" => Key::Timestamp,
                b"customType" => Key::CustomType,
                b"data" => Key::Data,
                b"message" => Key::Message,
                b"version" => Key::Version,
                b"role" => Key::Role,
                b"content" => Key::Content,
                b"toolCallId" => Key::ToolCallId,
                b"toolName" => Key::ToolName,
                b"name" => Key::Name,
                b"text" => Key::Text,
                b"windowId" => Key::WindowId,
                b"nestedCalls" => Key::NestedCalls,
                _ => Key::Other,
            }
        }
        let names: [&[u8]; 16] = [
            b"type",
            b"id",
            b"parentId",
            b"timestamp",
            b"customType",
            b"data",
            b"message",
            b"version",
            b"role",
            b"content",
            b"toolCallId",
            b"toolName",
            b"name",
            b"text",
            b"windowId",
            b"nestedCalls",
        ];
        let mut keys: Vec<Vec<u8>> = vec![b"".to_vec(), b"textext".to_vec(), b"typetype".to_vec()];
        for a in names {
            for b in names {
                keys.push([a, b].concat());
                keys.push([a, &b[b.len().min(a.len()) / 2..]].concat());
            }
            for n in 0..=a.len() {
                keys.push(a[..n].to_vec());
                keys.push(a[n..].to_vec());
            }
            for at in 0..a.len() {
                let mut k = a.to_vec();
                k[at] ^= 0x20;
                keys.push(k.clone());
                k[at] ^= 0x21;
                keys.push(k);
            }
        }
        for k in &keys {
            assert_eq!(Key::of(k), reference(k), "{}", String::from_utf8_lossy(k));
        }
        assert!(names.iter().all(|n| Key::of(n) != Key::Other));
    }

    #[test]
    fn decodes_assistant_tool_calls_and_text_presence() {
        let line = br#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":""},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}},{"type":"toolCall","name":"bash"}]}}"#;
        let entry = decode(line).unwrap();
        assert_eq!(entry.kind.as_deref(), Some("message"));
        assert_eq!(entry.parent_id, None);
        let message = entry.message.unwrap();
        assert!(message.content.is_array);
        assert!(!message.content.has_text);
        assert_eq!(
            message.content.call_pairs(),
            vec![(Some("c1"), Some("read")), (None, Some("bash"))]
        );
    }

    #[test]
    fn two_empty_text_blocks_are_text() {
        let line = br#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":""}]}}"#;
        assert!(decode(line).unwrap().message.unwrap().content.has_text);
    }

    #[test]
    fn wrong_types_are_ignored_not_fatal() {
        let line = br#"{"type":"custom","id":5,"parentId":{"x":1},"customType":"pi-context/reset-marker","data":{"windowId":7}}"#;
        let entry = decode(line).unwrap();
        assert_eq!(entry.id, None);
        assert_eq!(entry.parent_id, None);
        assert_eq!(entry.data_window_id, None);
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        let entry = decode(br#"{"type":"a","type":"b"}"#).unwrap();
        assert_eq!(entry.kind.as_deref(), Some("b"));
    }

    #[test]
    fn nesting_past_the_full_decoders_limit_is_malformed_exactly_where_it_fails() {
        for inner in ["{\"a\":", "["] {
            for depth in 100..140 {
                let close = if inner == "[" { "]" } else { "}" };
                let line = format!(
                    r#"{{"type":"message","message":{{"role":"user","content":[{{"type":"text","text":"{{[\"","x":{}1{}}}]}}}}"#,
                    inner.repeat(depth),
                    close.repeat(depth)
                );
                let full = serde_json::from_str::<serde_json::Value>(&line).is_ok();
                assert_eq!(decode(line.as_bytes()).is_ok(), full, "{inner} x {depth}");
                assert_eq!(too_deep(line.as_bytes()), !full, "{inner} x {depth}");
            }
        }
    }

    #[test]
    fn non_objects_and_torn_lines_are_malformed() {
        assert!(decode(b"[1,2]").is_err());
        assert!(decode(br#"{"type":"message","id":"a""#).is_err());
        assert!(decode(b"{} {}").is_err());
    }
}
