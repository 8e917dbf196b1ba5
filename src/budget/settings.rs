//! Pi settings as pi-context reads them: the global `<agent-dir>/settings.json` and the trusted
//! project's `<cwd>/.pi/settings.json`, merged per key with the project winning, then the five
//! keys we use validated into [`Settings`] with one warning per invalid value.
//!
//! Owns: the merge rule (Pi's deep merge for `compaction`, a shallow `{...global, ...project}`
//! for the `pi-context` object), validation, defaults, and the warning texts. It must not decide
//! where the files are (the CLI resolves `--agent-dir`, `PI_CODING_AGENT_DIR`, `HOME` and trust)
//! and must not print: warnings are returned for the caller to show.
//!
//! ```
//! use pi_context::budget::settings::Settings;
//! use serde_json::json;
//!
//! let global = json!({"pi-context": {"dreamer": "openai/gpt-x", "reminderMarginTokens": 0}});
//! let project = json!({"compaction": {"reserveTokens": 20000}});
//! let (settings, warnings) = Settings::resolve(Some(&global), Some(&project));
//! assert_eq!(settings.dreamer.as_deref(), Some("openai/gpt-x"));
//! assert_eq!(settings.reserve_tokens, 20000);
//! assert_eq!(settings.reminder_margin_tokens, 24576); // invalid 0 → default, one warning
//! assert_eq!(warnings.len(), 1);
//! ```

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

/// Pi's default hard reserve (`compaction.reserveTokens`).
pub const DEFAULT_RESERVE_TOKENS: u64 = 16_384;
/// Default margin of the early reminder above the reserve (`pi-context.reminderMarginTokens`).
pub const DEFAULT_REMINDER_MARGIN_TOKENS: u64 = 24_576;
/// The largest integer a JSON number from Pi (a JS double) can hold exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The settings pi-context uses, after merging and validation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Settings {
    /// `compaction.enabled`: Pi's automatic flag. Gates the warning, the automatic close-out
    /// and the hard reserve.
    pub compaction_enabled: bool,
    /// `compaction.reserveTokens`: the ordinary hard reserve (a model override may replace it,
    /// see [`Settings::reserve_tokens_for`]).
    pub reserve_tokens: u64,
    /// `compaction.modelOverrides` as merged (validated lazily, only for the active model, as
    /// Pi does: a broken entry for a model not in use never warns).
    #[serde(skip)]
    pub model_overrides: Map<String, Value>,
    /// `pi-context.reminderMarginTokens`.
    pub reminder_margin_tokens: u64,
    /// `pi-context.dreamer`, trimmed; `None` when absent or invalid.
    pub dreamer: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            compaction_enabled: true,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            model_overrides: Map::new(),
            reminder_margin_tokens: DEFAULT_REMINDER_MARGIN_TOKENS,
            dreamer: None,
        }
    }
}

impl Settings {
    /// Merge the parsed global and project settings (either may be absent) and validate the keys
    /// pi-context uses. Every invalid value falls back to its default with exactly one warning
    /// (each starting `pi-context:`, naming the key, never containing token counts). A root, a
    /// `compaction` or a `pi-context` value that is not an object counts as `{}` (with a warning
    /// when it is present but not an object).
    pub fn resolve(global: Option<&Value>, project: Option<&Value>) -> (Settings, Vec<String>) {
        let mut warnings = Vec::new();
        let global = root_object(global, "global", &mut warnings);
        let project = root_object(project, "project", &mut warnings);

        let compaction = deep_merge(
            section(&global, "compaction", &mut warnings),
            section(&project, "compaction", &mut warnings),
        );
        let mut ours = section(&global, "pi-context", &mut warnings);
        for (key, value) in section(&project, "pi-context", &mut warnings) {
            ours.insert(key, value);
        }

        let mut settings = Settings::default();
        match compaction.get("enabled") {
            None => {}
            Some(Value::Bool(enabled)) => settings.compaction_enabled = *enabled,
            Some(_) => warnings.push(
                "pi-context: ignoring compaction.enabled (expected true or false); automatic \
                 compaction stays enabled."
                    .to_string(),
            ),
        }
        match compaction.get("reserveTokens") {
            None => {}
            Some(value) => match non_negative_safe_integer(value) {
                Some(n) => settings.reserve_tokens = n,
                None => warnings.push(
                    "pi-context: ignoring compaction.reserveTokens (expected a non-negative \
                     whole number); using Pi's default reserve."
                        .to_string(),
                ),
            },
        }
        match compaction.get("modelOverrides") {
            None => {}
            Some(Value::Object(map)) => settings.model_overrides = map.clone(),
            Some(_) => warnings.push(
                "pi-context: ignoring compaction.modelOverrides (expected an object keyed by \
                 provider/model id)."
                    .to_string(),
            ),
        }
        match ours.get("reminderMarginTokens") {
            None => {}
            Some(value) => match non_negative_safe_integer(value).filter(|n| *n > 0) {
                Some(n) => settings.reminder_margin_tokens = n,
                None => warnings.push(
                    "pi-context: ignoring pi-context.reminderMarginTokens (expected a positive \
                     whole number); using the default reminder margin."
                        .to_string(),
                ),
            },
        }
        match ours.get("dreamer") {
            None => {}
            Some(Value::String(s)) if !s.trim().is_empty() => {
                settings.dreamer = Some(s.trim().to_string())
            }
            Some(_) => warnings.push(
                "pi-context: ignoring pi-context.dreamer (expected a non-empty model name); the \
                 dreamer uses --dreamer or Pi's automatic model."
                    .to_string(),
            ),
        }
        (settings, warnings)
    }

    /// The effective hard reserve for `model` (`"<provider>/<id>"`): the model's
    /// `compaction.modelOverrides[model].reserveTokens` when present and valid, else the
    /// ordinary reserve. An invalid entry for this model falls back with one warning.
    #[allow(
        clippy::expect_used,
        reason = "an override entry was found, so a model id was given"
    )]
    pub fn reserve_tokens_for(&self, model: Option<&str>) -> (u64, Option<String>) {
        let Some(entry) = model.and_then(|m| self.model_overrides.get(m)) else {
            return (self.reserve_tokens, None);
        };
        let model = model.expect("an override entry was found, so a model id was given");
        let Value::Object(entry) = entry else {
            return (
                self.reserve_tokens,
                Some(format!(
                    "pi-context: ignoring compaction.modelOverrides[{}] (expected an object); \
                     using the ordinary reserve.",
                    Value::String(model.to_string())
                )),
            );
        };
        match entry.get("reserveTokens") {
            None => (self.reserve_tokens, None),
            Some(value) => match non_negative_safe_integer(value) {
                Some(n) => (n, None),
                None => (
                    self.reserve_tokens,
                    Some(format!(
                        "pi-context: ignoring compaction.modelOverrides[{}].reserveTokens \
                         (expected a non-negative whole number); using the ordinary reserve.",
                        Value::String(model.to_string())
                    )),
                ),
            },
        }
    }
}

/// Where the two settings files are, as resolved by the caller.
#[derive(Debug, Clone)]
pub struct SettingsPaths<'a> {
    /// `<agent-dir>/settings.json`.
    pub global: &'a Path,
    /// `<cwd>/.pi/settings.json`, or `None` when the project is not trusted.
    pub project: Option<&'a Path>,
}

/// Read and parse one settings file. A missing or empty file is `Ok(None)` (no settings, no
/// warning); an unreadable or malformed file is `Err(warning)`. A UTF-8 byte-order mark is
/// ignored, as Pi does.
pub fn read_settings_file(path: &Path) -> Result<Option<Value>, String> {
    let raw = match std::fs::read(path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "pi-context: could not read settings {} ({e}); using defaults for that file.",
                path.display()
            ));
        }
    };
    let text = String::from_utf8_lossy(&raw);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text).map(Some).map_err(|e| {
        format!(
            "pi-context: could not read settings {} (malformed JSON: {e}); using defaults for \
             that file.",
            path.display()
        )
    })
}

/// Load both files and resolve them: warnings for unreadable files come first, then the
/// validation warnings of [`Settings::resolve`]. An unreadable file contributes nothing; the
/// other file still applies (as in Pi, where each scope falls back on its own).
pub fn load(paths: &SettingsPaths) -> (Settings, Vec<String>) {
    load_keeping(paths, Some)
}

/// Only `pi-context.dreamer` (for `dream`), loaded by the same rules as [`load`] but with only
/// the warnings that concern it: an unreadable file, or an invalid dreamer value. The other
/// keys (and files whose root is not an object) are `budget-check`'s business and never warn
/// here.
pub fn load_dreamer(paths: &SettingsPaths) -> (Option<String>, Vec<String>) {
    let only_dreamer = |value: Value| {
        let dreamer = value.get("pi-context")?.get("dreamer")?.clone();
        Some(serde_json::json!({"pi-context": {"dreamer": dreamer}}))
    };
    let (settings, warnings) = load_keeping(paths, only_dreamer);
    (settings.dreamer, warnings)
}

/// Only `pi-context.syncRemote` (for `sync`): a non-empty string, trimmed, the project file
/// winning over the global one. Warnings: an unreadable file, or a value that is not a
/// non-empty string (that file's value is then ignored). Other keys never warn here.
pub fn load_sync_remote(paths: &SettingsPaths) -> (Option<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut remote = None;
    for path in std::iter::once(paths.global).chain(paths.project) {
        match read_settings_file(path) {
            Ok(Some(root)) => match root.get("pi-context").and_then(|o| o.get("syncRemote")) {
                None => {}
                Some(Value::String(s)) if !s.trim().is_empty() => {
                    remote = Some(s.trim().to_string())
                }
                Some(_) => warnings.push(format!(
                    "pi-context: ignoring pi-context.syncRemote in {} (expected a non-empty \
                     remote name or URL).",
                    path.display()
                )),
            },
            Ok(None) => {}
            Err(warning) => warnings.push(warning),
        }
    }
    (remote, warnings)
}

/// Read both files, keep what `keep` keeps of each, and resolve.
fn load_keeping(
    paths: &SettingsPaths,
    keep: impl Fn(Value) -> Option<Value>,
) -> (Settings, Vec<String>) {
    let mut warnings = Vec::new();
    let mut read = |path: &Path| match read_settings_file(path) {
        Ok(value) => value.and_then(&keep),
        Err(warning) => {
            warnings.push(warning);
            None
        }
    };
    let global = read(paths.global);
    let project = paths.project.and_then(&mut read);
    let (settings, more) = Settings::resolve(global.as_ref(), project.as_ref());
    warnings.extend(more);
    (settings, warnings)
}

fn root_object(
    value: Option<&Value>,
    scope: &str,
    warnings: &mut Vec<String>,
) -> Map<String, Value> {
    match value {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            warnings.push(format!(
                "pi-context: ignoring the {scope} settings (expected a JSON object); using \
                 defaults for them."
            ));
            Map::new()
        }
    }
}

fn section(root: &Map<String, Value>, key: &str, warnings: &mut Vec<String>) -> Map<String, Value> {
    match root.get(key) {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            warnings.push(format!(
                "pi-context: ignoring {key} settings that are not an object; using defaults for \
                 them."
            ));
            Map::new()
        }
    }
}

/// Pi's deep merge: objects merge recursively, anything else in `overrides` replaces.
fn deep_merge(mut base: Map<String, Value>, overrides: Map<String, Value>) -> Map<String, Value> {
    for (key, value) in overrides {
        let merged = match (base.remove(&key), value) {
            (Some(Value::Object(b)), Value::Object(o)) => Value::Object(deep_merge(b, o)),
            (_, value) => value,
        };
        base.insert(key, merged);
    }
    base
}

/// A JSON number that is a non-negative integer no larger than JavaScript's safe range
/// (`1.0` counts, as it does in JS; `1.5`, `"1000"` and `null` do not).
fn non_negative_safe_integer(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else {
        return None;
    };
    if let Some(u) = n.as_u64() {
        return (u <= MAX_SAFE_INTEGER).then_some(u);
    }
    let f = n.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f <= MAX_SAFE_INTEGER as f64).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(global: Value, project: Value) -> (Settings, Vec<String>) {
        Settings::resolve(Some(&global), Some(&project))
    }

    #[test]
    fn absent_everything_is_defaults_without_warnings() {
        let (settings, warnings) = Settings::resolve(None, None);
        assert_eq!(settings, Settings::default());
        assert!(warnings.is_empty());
    }

    #[test]
    fn project_wins_per_key_and_global_fills_the_rest() {
        let (s, w) = resolve(
            json!({"compaction": {"enabled": false, "reserveTokens": 1000},
                   "pi-context": {"reminderMarginTokens": 5000, "dreamer": "a/b"}}),
            json!({"compaction": {"reserveTokens": 2000},
                   "pi-context": {"dreamer": " c/d "}}),
        );
        assert!(w.is_empty(), "{w:?}");
        assert!(!s.compaction_enabled);
        assert_eq!(s.reserve_tokens, 2000);
        assert_eq!(s.reminder_margin_tokens, 5000);
        assert_eq!(s.dreamer.as_deref(), Some("c/d"));
    }

    #[test]
    fn model_overrides_deep_merge_and_select_by_full_id() {
        let (s, w) = resolve(
            json!({"compaction": {"reserveTokens": 1000,
                   "modelOverrides": {"p/a": {"reserveTokens": 7}, "p/b": {"reserveTokens": 8}}}}),
            json!({"compaction": {"modelOverrides": {"p/b": {"reserveTokens": 9}}}}),
        );
        assert!(w.is_empty());
        assert_eq!(s.reserve_tokens_for(Some("p/a")), (7, None));
        assert_eq!(s.reserve_tokens_for(Some("p/b")), (9, None));
        assert_eq!(s.reserve_tokens_for(Some("p/c")), (1000, None));
        assert_eq!(s.reserve_tokens_for(None), (1000, None));
    }

    #[test]
    fn invalid_override_for_the_active_model_warns_once_and_uses_the_ordinary_reserve() {
        let (s, _) = resolve(
            json!({"compaction": {"modelOverrides": {"p/a": 3, "p/b": {"reserveTokens": -1}}}}),
            json!({}),
        );
        let (reserve, warning) = s.reserve_tokens_for(Some("p/a"));
        assert_eq!(reserve, DEFAULT_RESERVE_TOKENS);
        assert!(warning.unwrap().contains(r#"modelOverrides["p/a"]"#));
        let (reserve, warning) = s.reserve_tokens_for(Some("p/b"));
        assert_eq!(reserve, DEFAULT_RESERVE_TOKENS);
        assert!(warning.unwrap().contains(r#"["p/b"].reserveTokens"#));
    }

    #[test]
    fn every_invalid_margin_falls_back_with_exactly_one_warning() {
        for bad in [
            json!(0),
            json!(-5),
            json!(1.5),
            json!("1000"),
            json!(null),
            json!(9007199254740992u64),
        ] {
            let (s, w) = resolve(
                json!({"pi-context": {"reminderMarginTokens": bad}}),
                json!({}),
            );
            assert_eq!(
                s.reminder_margin_tokens, DEFAULT_REMINDER_MARGIN_TOKENS,
                "{bad}"
            );
            assert_eq!(w.len(), 1, "{bad}: {w:?}");
            assert!(w[0].starts_with("pi-context:"));
            assert!(w[0].contains("pi-context.reminderMarginTokens"));
            assert!(w[0].contains("default reminder margin"));
            assert!(
                !w[0].chars().any(|c| c.is_ascii_digit()),
                "no token counts: {}",
                w[0]
            );
        }
    }

    #[test]
    fn a_whole_float_margin_is_accepted_as_in_js() {
        let (s, w) = resolve(
            json!({"pi-context": {"reminderMarginTokens": 2048.0}}),
            json!({}),
        );
        assert_eq!(s.reminder_margin_tokens, 2048);
        assert!(w.is_empty());
    }

    #[test]
    fn invalid_dreamer_values_are_ignored_with_one_warning() {
        for bad in [json!(""), json!("   "), json!(3), json!(null), json!(["x"])] {
            let (s, w) = resolve(json!({}), json!({"pi-context": {"dreamer": bad}}));
            assert_eq!(s.dreamer, None);
            assert_eq!(w.len(), 1);
            assert!(w[0].contains("pi-context.dreamer"));
        }
    }

    #[test]
    fn project_pi_context_object_replaces_keys_not_the_whole_object() {
        let (s, _) = resolve(
            json!({"pi-context": {"dreamer": "g"}}),
            json!({"pi-context": {"reminderMarginTokens": 100}}),
        );
        assert_eq!(s.dreamer.as_deref(), Some("g"));
        assert_eq!(s.reminder_margin_tokens, 100);
    }

    #[test]
    fn non_object_sections_count_as_empty_with_a_warning() {
        let (s, w) = resolve(json!({"pi-context": [1], "compaction": "x"}), json!([]));
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 3, "{w:?}");
    }

    #[test]
    fn invalid_compaction_values_warn_once_each() {
        let (s, w) = resolve(
            json!({"compaction": {"enabled": "false", "reserveTokens": 1.5}}),
            json!({}),
        );
        assert!(s.compaction_enabled);
        assert_eq!(s.reserve_tokens, DEFAULT_RESERVE_TOKENS);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn the_dreamer_loader_warns_only_about_the_dreamer() {
        let dir = tempfile::tempdir().unwrap();
        let global = dir.path().join("global.json");
        let project = dir.path().join("project.json");
        std::fs::write(
            &global,
            r#"{"compaction": {"reserveTokens": "x"}, "pi-context": {"dreamer": "g/m"}}"#,
        )
        .unwrap();
        std::fs::write(&project, "[1]").unwrap();
        let paths = SettingsPaths {
            global: &global,
            project: Some(&project),
        };
        assert_eq!(load_dreamer(&paths), (Some("g/m".to_string()), Vec::new()));
        assert_eq!(load(&paths).1.len(), 2, "the full loader does warn");
        std::fs::write(&project, r#"{"pi-context": {"dreamer": 7}}"#).unwrap();
        let (dreamer, warnings) = load_dreamer(&paths);
        assert_eq!(
            dreamer, None,
            "an invalid project value is not replaced by global"
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("pi-context.dreamer"));
    }

    #[test]
    fn files_missing_empty_malformed_and_with_bom() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.json");
        assert_eq!(read_settings_file(&missing), Ok(None));
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, "  \n").unwrap();
        assert_eq!(read_settings_file(&empty), Ok(None));
        let bom = dir.path().join("bom.json");
        std::fs::write(&bom, "\u{feff}{\"a\":1}").unwrap();
        assert_eq!(read_settings_file(&bom), Ok(Some(json!({"a": 1}))));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{oops").unwrap();
        assert!(
            read_settings_file(&bad)
                .unwrap_err()
                .starts_with("pi-context:")
        );
        // A directory where the file should be cannot be read, even by root.
        assert!(read_settings_file(dir.path()).is_err());

        let good = dir.path().join("good.json");
        std::fs::write(&good, r#"{"pi-context":{"dreamer":"x"}}"#).unwrap();
        let (s, w) = load(&SettingsPaths {
            global: &bad,
            project: Some(&good),
        });
        assert_eq!(s.dreamer.as_deref(), Some("x"));
        assert_eq!(w.len(), 1);
        let (s, w) = load(&SettingsPaths {
            global: &good,
            project: None,
        });
        assert_eq!(s.dreamer.as_deref(), Some("x"));
        assert!(w.is_empty());
    }
}
