//! Hostile-input property tests for the session line decoders: arbitrary bytes and JSON-like
//! lines never panic (a malformed line is skipped and counted by the reader, never a crash).
//! 2 properties × 256 cases.

use proptest::prelude::*;

fn jsonish_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::string::string_regex(
            "\\{(\"(type|id|parentId|timestamp|message|role|content|toolCallId|toolName|customType|data|version|text|arguments)\":(null|true|-?[0-9]{1,25}|\"[a-z\\\\u0-9]{0,10}\"|\\[(\\{\"type\":\"(text|toolCall)\",\"text\":\"x\"\\},?){0,3}\\]|\\{\"role\":\"(user|assistant|toolResult)\"\\}),?){0,8}\\}?"
        )
        .expect("a valid regex")
        .prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_skeleton_decoder_never_panics(line in jsonish_line()) {
        let _ = super::skeleton::decode(&line);
    }

    #[test]
    fn the_value_decoder_never_panics(line in jsonish_line()) {
        let _ = super::parse_value(&line);
    }
}
