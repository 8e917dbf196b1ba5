//! JSON serialisation with JavaScript `JSON.stringify` parity, for the places where upstream's
//! bytes are observable: tool arguments inside event documents (searched, previewed, read),
//! their byte sizes in read metadata, and `execution.arguments` of a read. This is the one
//! renderer of arguments: [`Js`] serialises a value the way JavaScript would (integer-like keys
//! ascending first, then insertion order; numbers as doubles), and [`JsFormatter`] prints
//! doubles as `Number.prototype.toString` does (`1` not `1.0`, `1e+21` not `1e21`, `0.000001`
//! not `1e-6`). The wire writer uses [`JsFormatter`] too, so a value serialised through [`Js`]
//! prints the same bytes inside a document and inside an envelope. serde_json's string escaping
//! is already JavaScript's.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// `JSON.stringify(value)` as JavaScript would print it.
pub fn to_string(value: &Value) -> String {
    // Writing a `Value` into memory cannot fail (its keys are strings).
    to_wire_string(&Js(value)).unwrap_or_default()
}

/// Compact JSON of any serialisable value with doubles printed the JavaScript way: the wire
/// form of every envelope.
pub fn to_wire_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, JsFormatter);
    value.serialize(&mut ser)?;
    // serde_json writes UTF-8, so nothing is replaced.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A value that serialises as JavaScript would hold it: object keys in JavaScript's property
/// order and every number as a double (so `9007199254740993` is `9007199254740992`). Paired
/// with [`JsFormatter`], the bytes are `JSON.stringify`'s.
#[derive(Debug, Clone, Copy)]
pub struct Js<'a>(pub &'a Value);

impl Serialize for Js<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Number(n) => match exact_integer(n) {
                Some(i) => serializer.serialize_i64(i),
                None => serializer.serialize_f64(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => serializer.serialize_str(s),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Js(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                // JS property order: integer-like keys ascending first, then insertion order.
                keys.sort_by_key(|k| array_index(k).map_or((1, 0), |i| (0, i)));
                let mut out = serializer.serialize_map(Some(keys.len()))?;
                for key in keys {
                    out.serialize_entry(key, &Js(&map[key]))?;
                }
                out.end()
            }
        }
    }
}

/// An integer JavaScript holds exactly (|n| ≤ 2^53), printed as such.
fn exact_integer(n: &serde_json::Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return (i.unsigned_abs() <= (1u64 << 53)).then_some(i);
    }
    if let Some(u) = n.as_u64() {
        return (u <= (1u64 << 53)).then_some(u as i64);
    }
    None
}

/// serde_json's compact writer with doubles printed as JavaScript prints them.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsFormatter;

impl serde_json::ser::Formatter for JsFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        writer.write_all(js_double(value).as_bytes())
    }

    fn write_f32<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f32,
    ) -> std::io::Result<()> {
        writer.write_all(js_double(f64::from(value)).as_bytes())
    }
}

/// `Some(n)` when `key` is a canonical array index ("0", "7", "42"; no leading zeros;
/// at most 2^32 − 2), the keys JavaScript orders first.
pub fn array_index(key: &str) -> Option<u64> {
    if key.is_empty() || key.len() > 10 || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if key.len() > 1 && key.starts_with('0') {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n <= 4_294_967_294).then_some(n)
}

/// A JSON number printed as JavaScript's `Number.prototype.toString` prints the double.
pub fn number(n: &serde_json::Number) -> String {
    match exact_integer(n) {
        Some(i) => i.to_string(),
        None => js_double(n.as_f64().unwrap_or(0.0)),
    }
}

/// JavaScript's shortest round-trip rendering of a double.
#[allow(
    clippy::expect_used,
    reason = "{:e} always has an exponent; {:e} exponents are integers"
)]
pub fn js_double(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if x.is_nan() {
        return "null".into();
    }
    if x.is_infinite() {
        return "null".into();
    }
    // `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} always has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponents are integers");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1; // decimal point position relative to the digits
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_like_javascript() {
        let v: Value = serde_json::from_str(
            "[1.0, -0, 1e21, 1.5e-7, 0.000001, 123.456, 1e20, 9007199254740993, 2.5e-300]",
        )
        .unwrap();
        assert_eq!(
            to_string(&v),
            "[1,0,1e+21,1.5e-7,0.000001,123.456,100000000000000000000,9007199254740992,2.5e-300]"
        );
    }

    #[test]
    fn the_wire_writer_prints_js_values_like_the_document_renderer() {
        let v: Value =
            serde_json::from_str(r#"{"a":1.0,"c":1e-6,"7":"x","b":[1e21,-0,1.5E3]}"#).unwrap();
        let expected = r#"{"7":"x","a":1,"c":0.000001,"b":[1e+21,0,1500]}"#;
        assert_eq!(to_string(&v), expected);
        let through_value = serde_json::to_value(Js(&v)).unwrap();
        assert_eq!(to_wire_string(&through_value).unwrap(), expected);
    }

    #[test]
    fn index_keys_come_first() {
        let v: Value = serde_json::from_str(r#"{"b":1,"10":2,"a":3,"2":4,"01":5}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"2":4,"10":2,"b":1,"a":3,"01":5}"#);
    }

    #[test]
    fn strings_escape_like_javascript() {
        let v = json!({"s": "q\"\\\n\t\u{1}/\u{7f}\u{2028}é"});
        assert_eq!(
            to_string(&v),
            "{\"s\":\"q\\\"\\\\\\n\\t\\u0001/\u{7f}\u{2028}é\"}"
        );
    }
}
