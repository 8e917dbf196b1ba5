//! Hostile-input property tests: arbitrary bytes and strings into the request decoder, the
//! address grammar, the frontmatter parser and the glob compiler. The property is "never a
//! panic" (plus what an accepted value must satisfy); each runs [`CASES`] cases.

use proptest::prelude::*;
use serde::Deserialize;

use crate::cli::Io;
use crate::cli::common::{MAX_REQUEST_BYTES, decode_request, read_request_text};
use crate::envelope::{DomainError, Refusal};
use crate::notes::query::{MAX_PATTERN_BYTES, compile_glob};
use crate::notes::{Address, Identity, MAX_SEGMENT_BYTES, Query, frontmatter};

/// Cases per property (proptest's default): 6 properties × 256 = 1,536 inputs per run.
const CASES: u32 = 256;

/// A request with every field shape the real requests use.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Shapes {
    address: Option<String>,
    limit: Option<u64>,
    offset_chars: Option<i64>,
    wastebasket: Option<bool>,
    edits: Option<Vec<EditShape>>,
    query: Option<serde_json::Value>,
    origin: Option<OriginShape>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EditShape {
    #[serde(rename = "oldText")]
    old_text: String,
    #[serde(rename = "newText")]
    new_text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OriginShape {
    User,
    #[serde(rename = "self")]
    Myself,
    External,
}

/// Text that looks like JSON often enough to reach deep into the decoder.
fn jsonish() -> impl Strategy<Value = String> {
    prop_oneof![
        "[\\[\\]{}\":,0-9a-z_\\-.eE\\\\ \u{feff}é]{0,80}",
        proptest::string::string_regex(
            "\\{(\"(address|limit|offset_chars|wastebasket|edits|query|origin|oldText|newText|x)\":(null|true|-?[0-9]{1,30}(\\.[0-9]+)?(e[0-9]{1,4})?|\"[a-z@/.é]{0,12}\"|\\[\\]|\\{\\}|\\[\\{\"oldText\":\"a\",\"newText\":1\\}\\]),?){0,5}\\}?"
        )
        .expect("a valid regex"),
    ]
}

fn read_through_io(bytes: &[u8]) -> Result<String, Refusal> {
    let mut stdin = bytes;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut io = Io {
        stdin: &mut stdin,
        stdout: &mut out,
        stderr: &mut err,
        stderr_is_terminal: false,
        stdin_is_terminal: false,
    };
    read_request_text(&mut io).map_err(|e| e.to_refusal())
}

fn identity() -> Identity {
    Identity::new("/notes", Some("s1"), "demo-1a2b3c4d", "ann", "gpt").expect("a valid identity")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Arbitrary bytes through the whole reader and decoder: a request or a refusal with a
    /// documented code and a message free of Rust type names.
    #[test]
    fn request_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        match read_through_io(&bytes) {
            Ok(text) => {
                if let Err(r) = decode_request::<Shapes>(&text).map_err(|e| e.to_refusal()) {
                    prop_assert_eq!(r.code.as_str(), "invalid_request");
                }
            }
            Err(r) => prop_assert!(["invalid_request", "too_large"].contains(&r.code.as_str())),
        }
    }

    #[test]
    fn jsonish_requests_never_panic_nor_leak_rust_types(text in jsonish()) {
        if let Err(r) = decode_request::<Shapes>(&text).map_err(|e| e.to_refusal()) {
            prop_assert_eq!(r.code.as_str(), "invalid_request");
            for rust in ["u64", "i64", "struct ", "enum ", "Shapes", "EditShape", "a sequence"] {
                prop_assert!(!r.message.contains(rust), "{}", r.message);
            }
        }
        let _ = decode_request::<serde_json::Value>(&text);
    }

    #[test]
    fn address_grammar_never_panics(input in "(@(self|model|human|project|agents|models|x)?/?)?[a-zé./@\\\\\u{0}-]{0,300}") {
        let id = identity();
        if let Ok(address) = Address::decode(&input, &id) {
            let display = address.display();
            prop_assert!(display.ends_with(".md"));
            prop_assert!(address.file_path(&id).is_ok() || address.home.components(&id).is_none());
            if address.vpath.len() <= crate::notes::MAX_NOTE_PATH_BYTES {
                for segment in address.file_vpath().split('/') {
                    prop_assert!(segment.len() <= MAX_SEGMENT_BYTES);
                    prop_assert!(!segment.is_empty() && segment != "." && segment != "..");
                }
            }
        }
    }

    #[test]
    fn arbitrary_addresses_never_panic(input in any::<String>()) {
        let _ = Address::decode(&input, &identity());
    }

    #[test]
    fn frontmatter_parser_never_panics(raw in "(---\r?\n)?([a-zA-Z]{0,6}: ?[^\n]{0,20}\r?\n|  - [^\n]{0,8}\n|---\n?){0,8}[^\u{0}]{0,40}", bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
        let parsed = frontmatter::parse(&raw);
        let _ = parsed.body.len();
        let _ = frontmatter::parse_fields_only(&raw);
        let _ = frontmatter::strip_leading_frontmatter(&raw);
        let _ = frontmatter::fields_of_bytes(&bytes);
        let _ = frontmatter::block_prefix(&bytes);
        let _ = frontmatter::block_has_key(&bytes, "crumpledAt");
        let _ = frontmatter::fields_of_bytes(raw.as_bytes());
    }

    #[test]
    fn glob_compiler_never_panics(pattern in "[*/?a-zé@\\[\\]{}.]{0,400}", stars in 0usize..3000) {
        // Arbitrary globs compile or are refused; a long run of stars is refused past the cap.
        let _ = compile_glob(&pattern);
        let many = "*".repeat(stars);
        match compile_glob(&many) {
            Ok(re) => { let _ = re.is_match("@human/a/b.md"); }
            Err(e) => prop_assert_eq!(e.code(), "invalid_pattern"),
        }
        let query = Query { pattern: Some(format!("@human/{pattern}{many}")), ..Query::default() };
        match query.plan(&identity()) {
            Ok(_) => prop_assert!(pattern.len() + stars + 7 <= MAX_PATTERN_BYTES),
            Err(e) => prop_assert!(["invalid_pattern", "invalid_scope"].contains(&e.code())),
        }
    }
}

#[test]
fn the_reader_refuses_one_byte_past_the_cap_and_accepts_the_cap() {
    let at_cap = vec![b' '; MAX_REQUEST_BYTES as usize];
    assert_eq!(read_through_io(&at_cap).unwrap(), "{}");
    let over = vec![b' '; MAX_REQUEST_BYTES as usize + 1];
    assert_eq!(read_through_io(&over).unwrap_err().code, "too_large");
    let deep = "[".repeat(100_000);
    assert_eq!(
        decode_request::<serde_json::Value>(&format!("{{\"a\":{deep}"))
            .unwrap_err()
            .code(),
        "invalid_request"
    );
}
