//! JSON serialisation with JavaScript `JSON.stringify` parity, for the places where upstream's
//! bytes are observable: tool arguments inside event documents (searched, previewed, read)
//! and their byte sizes in read metadata. serde_json's compact writer already escapes strings
//! the same way; what differs is numbers (`1` not `1.0`, `1e+21` not `1e21`) and key order
//! (array-index-like keys first, ascending). This module must not be used for the wire
//! envelope, which is plain serde_json.

use serde_json::Value;

/// `JSON.stringify(value)` as JavaScript would print it.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut keys: Vec<&String> = map.keys().collect();
            // JS property order: integer-like keys ascending first, then insertion order.
            keys.sort_by_key(|k| array_index(k).map_or((1, 0), |i| (0, i)));
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &map[key]);
            }
            out.push('}');
        }
    }
}

#[allow(clippy::expect_used, reason = "a string always serialises")]
fn write_string(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a string always serialises"));
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
    if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= (1u64 << 53)
    {
        return i.to_string();
    }
    if let Some(u) = n.as_u64()
        && u <= (1u64 << 53)
    {
        return u.to_string();
    }
    js_double(n.as_f64().unwrap_or(0.0))
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
