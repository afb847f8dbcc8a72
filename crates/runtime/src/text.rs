//! Text a component produced, bounded and made safe before the host keeps
//! or prints it: failure messages, log lines, captured output, denial
//! reasons. Nothing a component says may be unbounded, and none of it may
//! forge a line of the host's log.

use std::borrow::Cow;

/// Longest failure message kept from a component (and trap detail).
pub(crate) const MAX_FAILURE: usize = 4096;

/// Longest denial reason kept in a call report.
pub(crate) const MAX_DENIAL: usize = 1024;

/// `text` cut to at most `max` bytes on a character boundary, saying how
/// much was cut.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{}… ({} bytes cut)", &text[..cut], text.len() - cut))
}

/// `text` with control characters escaped (`\n`, `\r`, `\t`, `\u{1b}`...),
/// so one message is one log line and cannot move the terminal's cursor.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::{clip, escape_controls};

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(clip("short", 10), "short");
        let cut = clip("ééééé", 3);
        assert_eq!(cut, "é… (8 bytes cut)");
    }

    #[test]
    fn control_characters_cannot_forge_a_line() {
        assert_eq!(escape_controls("ok"), "ok");
        assert_eq!(escape_controls("a\nINFO forged\r\t\u{1b}[2J"), "a\\nINFO forged\\r\\t\\u{1b}[2J");
    }
}
