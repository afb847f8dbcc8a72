//! Example plugin `example.word-count` (label read): counts the words of a
//! text, ignoring words shorter than the operator's `min_length` setting.
//! It is the worked example of docs/writing-a-capability.md; the same
//! capability in Python and JavaScript is in `examples/python-word-count`
//! and `examples/js-word-count`.

use capstan_sdk::host::{self, Level};
use capstan_sdk::{Capability, Failure, Label, Meta, Outcome, Replay};
use serde::{Deserialize, Serialize};

/// Input: the text to count.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Any text.
    pub text: String,
}

/// Output: how many words were counted, and for whom.
#[derive(Serialize, schemars::JsonSchema, Debug, PartialEq)]
pub struct Output {
    /// Words at least `min_length` characters long.
    pub words: usize,
    /// Who started the call (`cli`, `api-key`, `agent`...), from the call
    /// context.
    pub called_by: String,
}

pub struct WordCount;

impl Capability for WordCount {
    type Input = Input;
    type Output = Output;
    const META: Meta = Meta {
        id: "example.word-count",
        version: 1,
        label: Label::Read,
        summary: "Count the words in a text",
        description: "Counts whitespace-separated words, skipping those shorter than the min_length setting (default 1).",
        tags: &["example", "text"],
        aliases: &["count words", "字数"],
        replay: Replay::Safe,
        services: &[],
    };

    fn invoke(input: Input) -> Result<Outcome<Output>, Failure> {
        let min: usize = match host::setting("min_length") {
            Some(v) => {
                v.parse().map_err(|_| Failure::InvalidInput(format!("setting min_length={v} is not a number")))?
            }
            None => 1,
        };
        let words = input.text.split_whitespace().filter(|w| w.chars().count() >= min).count();
        host::log(Level::Debug, &format!("counted {words} words"));
        let called_by = host::context().actor.as_str().to_string();
        Ok(Outcome::Succeeded(Output { words, called_by }))
    }
}

capstan_sdk::export_capability!(WordCount);

#[cfg(test)]
mod tests {
    use capstan_sdk::testing::{Called, MockHost, invoke};
    use serde_json::json;

    use super::WordCount;

    #[test]
    fn counts_words_longer_than_the_setting() {
        MockHost::new("example.word-count").with_setting("min_length", "3").install();
        let out = invoke::<WordCount>(json!({ "text": "a bb ccc dddd" })).unwrap();
        assert_eq!(out, Called::Succeeded(json!({ "words": 2, "called_by": "cli" })));
        let mock = MockHost::take().unwrap();
        assert_eq!(mock.logs.len(), 1);
    }

    #[test]
    fn unknown_fields_are_invalid_input() {
        MockHost::new("example.word-count").install();
        let err = invoke::<WordCount>(json!({ "txt": "x" })).unwrap_err();
        assert!(matches!(err, capstan_sdk::Failure::InvalidInput(_)), "{err}");
    }
}
