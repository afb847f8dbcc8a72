//! Splitting one path component into word tokens.
//!
//! Owns: what counts as a word, the separator text between words, bracket
//! pairs, and an ASCII-lower-cased copy of the text. Lower-casing only
//! ASCII keeps every byte offset valid in both copies, so a token's span
//! can be read from either.

/// One word: a maximal run of letters, digits and `@` (group names such as
/// `HiS@SiLUHD` stay whole). Everything else separates words.
#[derive(Debug, Clone, Copy)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    /// Index into [`Tokens::brackets`] of the innermost pair around it.
    pub bracket: Option<usize>,
}

/// A tokenised path component.
pub struct Tokens<'a> {
    pub text: &'a str,
    pub lower: String,
    pub list: Vec<Token>,
    /// `(open, close)` byte offsets of `()`, `[]` and `{}` pairs; an
    /// unclosed bracket runs to the end of the text.
    pub brackets: Vec<(usize, usize)>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '@'
}

impl<'a> Tokens<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut list = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            match (is_word(c), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    list.push(Token { start: s, end: i, bracket: None });
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            list.push(Token { start: s, end: text.len(), bracket: None });
        }

        let mut brackets = Vec::new();
        let mut stack: Vec<(usize, u8)> = Vec::new();
        for (i, b) in text.bytes().enumerate() {
            match b {
                b'(' | b'[' | b'{' => stack.push((i, b)),
                b')' | b']' | b'}' => {
                    let want = match b {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if let Some(pos) = stack.iter().rposition(|&(_, o)| o == want) {
                        let (open, _) = stack[pos];
                        stack.truncate(pos);
                        brackets.push((open, i));
                    }
                }
                _ => {}
            }
        }
        brackets.extend(stack.into_iter().map(|(open, _)| (open, text.len())));
        for t in &mut list {
            t.bracket = brackets
                .iter()
                .enumerate()
                .filter(|(_, (o, c))| *o < t.start && t.end <= *c)
                .max_by_key(|(_, (o, _))| *o)
                .map(|(i, _)| i);
        }
        Tokens { text, lower: text.to_ascii_lowercase(), list, brackets }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// The token as written.
    pub fn raw(&self, i: usize) -> &'a str {
        &self.text[self.list[i].start..self.list[i].end]
    }

    /// The token in ASCII lower case.
    pub fn low(&self, i: usize) -> &str {
        &self.lower[self.list[i].start..self.list[i].end]
    }

    /// Text between token `i - 1` (or the start) and token `i`.
    pub fn sep_before(&self, i: usize) -> &'a str {
        let from = if i == 0 { 0 } else { self.list[i - 1].end };
        &self.text[from..self.list[i].start]
    }

    /// Text between token `i` and token `i + 1` (or the end).
    pub fn sep_after(&self, i: usize) -> &'a str {
        let to = self.list.get(i + 1).map_or(self.text.len(), |t| t.start);
        &self.text[self.list[i].end..to]
    }

    /// Whether token `i` is all ASCII digits.
    pub fn is_digits(&self, i: usize) -> bool {
        self.raw(i).bytes().all(|b| b.is_ascii_digit())
    }

    /// The token's value if it is all digits (and fits).
    pub fn number(&self, i: usize) -> Option<u32> {
        if self.is_digits(i) && self.raw(i).len() <= 6 { self.raw(i).parse().ok() } else { None }
    }

    /// Whether token `i` is the only token inside its bracket pair.
    pub fn alone_in_bracket(&self, i: usize) -> bool {
        let Some(b) = self.list[i].bracket else { return false };
        let same = |j: usize| self.list.get(j).is_some_and(|t| t.bracket == Some(b));
        let before = i > 0 && same(i - 1);
        !(before || same(i + 1))
    }

    /// Token index range `[first, last]` inside bracket pair `b` (directly
    /// or nested), if any.
    pub fn bracket_tokens(&self, b: usize) -> Option<(usize, usize)> {
        let (o, c) = self.brackets[b];
        let first = self.list.iter().position(|t| t.start > o && t.end <= c)?;
        let last = self.list.iter().rposition(|t| t.start > o && t.end <= c)?;
        Some((first, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_separators_and_brackets() {
        let t = Tokens::new("[Grp] Show.Name - 01 (1080p) [AB12CD34].mkv");
        let words: Vec<&str> = (0..t.len()).map(|i| t.raw(i)).collect();
        assert_eq!(words, ["Grp", "Show", "Name", "01", "1080p", "AB12CD34", "mkv"]);
        assert_eq!(t.sep_before(3), " - ");
        assert!(t.alone_in_bracket(0));
        assert!(t.alone_in_bracket(4));
        assert!(t.list[1].bracket.is_none());
        assert_eq!(t.low(4), "1080p");
    }
}
