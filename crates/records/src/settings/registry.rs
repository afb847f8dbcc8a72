//! Every setting the host knows: its key, type, bounds, default and what it
//! does. Anything else is refused, so a typo in a PATCH is an error rather
//! than a setting nobody reads.

use serde_json::{Value, json};

use crate::text::{http_url_pattern, not_blank_pattern};

/// What a setting holds.
#[derive(Debug, Clone, Copy)]
pub enum ValueKind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Text {
        max_len: usize,
    },
    Choice(&'static [&'static str]),
    /// Some of its choices, comma-separated, each once; empty for none.
    Choices(&'static [&'static str]),
    /// An `http://` or `https://` URL ([`http_url_pattern`], then parsed).
    Url,
    /// Write-only; encrypted at rest; reads show only whether it is set.
    Secret,
    /// A scripted model's script file (JSON text), checked by the same
    /// parser that will run it.
    Script,
}

/// One known setting.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    pub key: &'static str,
    /// What the console calls it.
    pub label: &'static str,
    pub kind: ValueKind,
    /// The default as JSON text (`null` for none).
    pub default: &'static str,
    pub help: &'static str,
}

impl SettingSpec {
    pub fn default_value(&self) -> Value {
        serde_json::from_str(self.default).unwrap_or(Value::Null)
    }

    pub fn is_secret(&self) -> bool {
        matches!(self.kind, ValueKind::Secret)
    }

    /// Checks `value` against the type and bounds; a script's text also
    /// against `check_script`.
    pub fn check(&self, value: &Value, check_script: super::ScriptCheck) -> Result<(), String> {
        let key = self.key;
        let ok = match (self.kind, value) {
            (ValueKind::Bool, Value::Bool(_)) => true,
            (ValueKind::Int { min, max }, Value::Number(n)) => {
                let v = n.as_i64().ok_or_else(|| format!("{key} must be a whole number"))?;
                if v < min || v > max {
                    return Err(format!("{key} must be between {min} and {max}"));
                }
                true
            }
            (ValueKind::Float { min, max }, Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(f64::NAN);
                if !(min..=max).contains(&v) {
                    return Err(format!("{key} must be between {min} and {max}"));
                }
                true
            }
            (ValueKind::Text { max_len }, Value::String(s)) => {
                if s.trim().is_empty() || s.chars().count() > max_len {
                    return Err(format!("{key} must be 1 to {max_len} characters"));
                }
                true
            }
            (ValueKind::Script, Value::String(s)) => {
                if s.chars().count() > 1 << 20 {
                    return Err(format!("{key} must be at most 1 MiB"));
                }
                check_script(s).map_err(|e| format!("{key}: {e}"))?;
                true
            }
            (ValueKind::Choice(options), Value::String(s)) => {
                if !options.contains(&s.as_str()) {
                    return Err(format!("{key} must be one of {}", options.join(", ")));
                }
                true
            }
            (ValueKind::Choices(options), Value::String(s)) => {
                let chosen: Vec<&str> = s.split(',').map(str::trim).filter(|c| !c.is_empty()).collect();
                if let Some(other) = chosen.iter().find(|c| !options.contains(c)) {
                    let other: String = other.chars().take(40).collect();
                    return Err(format!("{key}: {other:?} is not one of {}", options.join(", ")));
                }
                if (1..chosen.len()).any(|i| chosen[..i].contains(&chosen[i])) {
                    return Err(format!("{key} names a choice twice"));
                }
                true
            }
            (ValueKind::Url, Value::String(s)) => {
                // The document's pattern first, so the two refuse alike.
                static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
                let pattern = PATTERN.get_or_init(|| regex::Regex::new(&http_url_pattern()).expect("a valid pattern"));
                let parsed = reqwest::Url::parse(s).map_err(|e| format!("{key} is not a URL: {e}"))?;
                if !pattern.is_match(s) || !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!("{key} must be an http or https URL"));
                }
                true
            }
            (ValueKind::Secret, Value::String(s)) => {
                if s.is_empty() || s.chars().count() > 4096 {
                    return Err(format!("{key} must be 1 to 4096 characters"));
                }
                true
            }
            _ => false,
        };
        if ok { Ok(()) } else { Err(format!("{key} must be {}", self.kind_name())) }
    }

    fn kind_name(&self) -> &'static str {
        match self.kind {
            ValueKind::Bool => "true or false",
            ValueKind::Int { .. } => "a whole number",
            ValueKind::Float { .. } => "a number",
            ValueKind::Text { .. } | ValueKind::Url | ValueKind::Secret | ValueKind::Script => "a string",
            ValueKind::Choice(_) => "one of its choices",
            ValueKind::Choices(_) => "its choices, comma-separated",
        }
    }

    /// How the setting is described in `GET /settings`.
    pub fn describe(&self) -> Value {
        let kind = match self.kind {
            ValueKind::Bool => json!({"type": "boolean"}),
            ValueKind::Int { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
            ValueKind::Float { min, max } => json!({"type": "number", "minimum": min, "maximum": max}),
            ValueKind::Text { max_len } => {
                json!({"type": "string", "maxLength": max_len, "pattern": not_blank_pattern()})
            }
            ValueKind::Script => {
                json!({"type": "string", "contentMediaType": "application/json", "maxLength": 1 << 20})
            }
            ValueKind::Choice(options) => json!({"type": "string", "enum": options}),
            ValueKind::Choices(options) => {
                let one = format!("({})", options.join("|"));
                json!({"type": "string", "pattern": format!("^({one}(,{one})*)?$"), "maxLength": 300})
            }
            ValueKind::Url => json!({"type": "string", "format": "uri", "pattern": http_url_pattern()}),
            ValueKind::Secret => json!({"type": "string", "writeOnly": true, "minLength": 1, "maxLength": 4096}),
        };
        json!({
            "schema": kind,
            "default": self.default_value(),
            "help": self.help,
            "label": self.label,
            "group": group_of(self.key),
        })
    }
}

const fn spec(
    key: &'static str,
    label: &'static str,
    kind: ValueKind,
    default: &'static str,
    help: &'static str,
) -> SettingSpec {
    SettingSpec { key, label, kind, default, help }
}

/// The areas settings are shown in, by key prefix, in the order shown.
pub const GROUPS: &[(&str, &str)] = &[
    ("model", "Model"),
    ("agent", "Agent"),
    ("budget", "Budgets"),
    ("automation", "Automation"),
    ("acquisition", "Downloads"),
    ("library", "Library"),
    ("notifications", "Notifications"),
    ("data", "Data"),
];

/// The area a key belongs to: its first dotted part.
fn group_of(key: &str) -> &'static str {
    let prefix = key.split('.').next().unwrap_or(key);
    GROUPS.iter().find(|(p, _)| *p == prefix).map(|(_, name)| *name).unwrap_or("Other")
}

const MAX: i64 = i64::MAX / 2;

/// Every setting, in the order they are shown.
pub const SETTINGS: &[SettingSpec] = &[
    spec(
        "automation.enabled",
        "Automation on",
        ValueKind::Bool,
        "true",
        "Master switch: off denies every automated execute call.",
    ),
    spec(
        "automation.read_only_reconcile",
        "Read-only reconcile",
        ValueKind::Bool,
        "false",
        "While on, automated execute calls are denied.",
    ),
    spec(
        "model.provider",
        "Provider",
        ValueKind::Choice(&["scripted", "anthropic", "openai-compatible"]),
        "\"scripted\"",
        "Which model drives agent runs.",
    ),
    spec(
        "model.base_url",
        "API base URL",
        ValueKind::Url,
        "null",
        "The provider's API base URL; the provider's public endpoint when unset.",
    ),
    spec("model.model", "Model name", ValueKind::Text { max_len: 200 }, "null", "The model name sent to the provider."),
    spec(
        "model.thinking_level",
        "Extended reasoning",
        ValueKind::Choice(&["off", "low", "medium", "high"]),
        "\"off\"",
        "How much extended reasoning to ask for.",
    ),
    spec(
        "model.context_budget",
        "Context window (tokens)",
        ValueKind::Int { min: 1024, max: 10_000_000 },
        "200000",
        "The context window in tokens.",
    ),
    spec(
        "model.compaction.enabled",
        "Compact long conversations",
        ValueKind::Bool,
        "true",
        "Compact the conversation when it nears the context budget.",
    ),
    spec(
        "model.compaction.threshold_ratio",
        "Compact at (share of the window)",
        ValueKind::Float { min: 0.1, max: 0.95 },
        "0.8",
        "Share of the context budget at which to compact.",
    ),
    spec(
        "model.price_input_usd_per_mtok",
        "Input price (USD per million tokens)",
        ValueKind::Float { min: 0.0, max: 1.0e4 },
        "0.0",
        "Price of a million input tokens, for cost budgets.",
    ),
    spec(
        "model.price_output_usd_per_mtok",
        "Output price (USD per million tokens)",
        ValueKind::Float { min: 0.0, max: 1.0e4 },
        "0.0",
        "Price of a million output tokens, for cost budgets.",
    ),
    spec(
        "model.script",
        "Script (scripted provider)",
        ValueKind::Script,
        "null",
        "For the scripted provider: a JSON script file's text; the built-in demo when unset.",
    ),
    spec(
        "model.api_key",
        "API key",
        ValueKind::Secret,
        "null",
        "The provider's API key; decrypted only for a request.",
    ),
    spec(
        "agent.max_tool_calls",
        "Tool calls per run",
        ValueKind::Int { min: 1, max: 10_000 },
        "50",
        "Tool calls per run.",
    ),
    spec(
        "agent.max_duration_sec",
        "Time per run (seconds)",
        ValueKind::Int { min: 1, max: 604_800 },
        "1800",
        "Wall-clock time per run, in seconds.",
    ),
    spec(
        "agent.max_tokens_per_run",
        "Tokens per run",
        ValueKind::Int { min: 1, max: MAX },
        "500000",
        "Model tokens per run.",
    ),
    spec(
        "agent.max_cost_usd_per_run",
        "Cost per run (USD)",
        ValueKind::Float { min: 0.0, max: 1.0e6 },
        "5.0",
        "Model cost per run, in US dollars.",
    ),
    spec(
        "agent.max_tools",
        "Tools offered at first",
        ValueKind::Int { min: 0, max: 1000 },
        "0",
        "Tools offered on the first request; 0 offers every allowed tool.",
    ),
    spec(
        "agent.goal_poll_sec",
        "Check what a run touched every (seconds)",
        ValueKind::Int { min: 1, max: 86_400 },
        "30",
        "How often a waiting run checks what it touched.",
    ),
    spec(
        "agent.goal_wait_hours",
        "Wait for it to settle (hours)",
        ValueKind::Int { min: 0, max: 720 },
        "48",
        "How long a run waits for what it touched to settle.",
    ),
    spec(
        "agent.auto_investigate",
        "Investigate what goes wrong",
        ValueKind::Bool,
        "false",
        "Start one bounded, read-only agent run for each new decision about a failed or stalled download or an ambiguous identity (and a failed import or submit, when a skill is its playbook); its conclusion is added to the decision.",
    ),
    spec(
        "agent.investigate_max_tool_calls",
        "Tool calls per investigation",
        ValueKind::Int { min: 1, max: 100 },
        "8",
        "Tool calls one investigation may make; it also has at most 10 minutes (or the time per run, if shorter).",
    ),
    spec(
        "agent.auto_investigate_mode",
        "What an investigation may do",
        ValueKind::Choice(&["investigate", "recover"]),
        "investigate",
        "investigate: read and report. recover: also recheck or resume the download and retry its task, each only within a standing grant; the outcome is then checked against qBittorrent before the decision is closed.",
    ),
    spec(
        "agent.investigate_max_attempts",
        "Recovery attempts per problem",
        ValueKind::Int { min: 1, max: 20 },
        "2",
        "How many times the same problem (the same download, say) is recovered automatically before it is left to you.",
    ),
    spec(
        "agent.recover_verify_sec",
        "Check a recovery for (seconds)",
        ValueKind::Int { min: 30, max: 86_400 },
        "600",
        "How long after a recovery run Capstan watches for the download to move again before it asks you.",
    ),
    spec(
        "budget.max_runs_per_day",
        "Runs per day",
        ValueKind::Int { min: 0, max: 1_000_000 },
        "100",
        "Agent runs started per day.",
    ),
    spec(
        "budget.max_cost_usd_per_day",
        "Model cost per day (USD)",
        ValueKind::Float { min: 0.0, max: 1.0e7 },
        "50.0",
        "Model cost per day, in US dollars.",
    ),
    spec(
        "acquisition.stalled_after_minutes",
        "A download is stalled after (minutes without progress)",
        ValueKind::Int { min: 1, max: 10_080 },
        "60",
        "How long a download may go without progress before a decision asks about it; a paused or queued one is never stalled.",
    ),
    spec(
        "library.poster_base_url",
        "Posters from",
        ValueKind::Url,
        "null",
        "Where the console loads TMDB posters from: TMDB's image host with a size (https://image.tmdb.org/t/p/w92 when unset), or a mirror of it; the poster's path is added to it.",
    ),
    spec(
        "notifications.events",
        "Tell the notification targets about",
        ValueKind::Choices(&["grabbed", "imported", "upgraded", "download-failed", "decision-waiting", "run-finished"]),
        "\"imported,upgraded,download-failed,decision-waiting\"",
        "What the connected notification targets (a webhook, ntfy) are told, comma-separated: grabbed, imported, upgraded, download-failed, decision-waiting, run-finished; empty tells nothing. Everything since the last message goes in one message.",
    ),
    spec(
        "data.cleanup_enabled",
        "Clean up old records",
        ValueKind::Bool,
        "true",
        "Prune receipts of calls made outside any agent run once they are older than data.retention_days; off keeps everything. Writes whose outcome is open and the audit log are never pruned.",
    ),
    spec(
        "data.retention_days",
        "Keep records for (days)",
        ValueKind::Int { min: 0, max: 3650 },
        "30",
        "How long receipts of calls made outside any agent run are kept; 0 keeps them for ever, as turning cleanup off does.",
    ),
];

/// The spec of `key`, if it is a known setting.
pub fn find(key: &str) -> Option<&'static SettingSpec> {
    SETTINGS.iter().find(|s| s.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_label_and_a_known_area() {
        let mut labels = std::collections::HashSet::new();
        for spec in SETTINGS {
            assert!(!spec.label.trim().is_empty() && labels.insert(spec.label), "{}: label {:?}", spec.key, spec.label);
            assert_ne!(group_of(spec.key), "Other", "{} is in no area", spec.key);
            assert_eq!(spec.describe()["label"], spec.label);
        }
    }

    #[test]
    fn whole_numbers_are_described_with_their_bounds() {
        let described = find("agent.max_tool_calls").unwrap().describe();
        assert_eq!(described["schema"], json!({"type": "integer", "minimum": 1, "maximum": 10_000}));
        assert_eq!(described["group"], "Agent");
    }
}
