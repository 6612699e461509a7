//! A small forward-only JSON reader for the one document the policy reads
//! in bulk: the node list. It validates the JSON grammar of everything it
//! passes over, like `serde::de::IgnoredAny` does, but extracts the few
//! fields it is asked for without serde's per-field visitor machinery, which
//! cost more than reading the list itself (BENCHMARKS.md).
//!
//! Strings that are kept are checked for UTF-8 and unescaped; skipped strings
//! are only checked for valid escapes and control characters, as serde_json
//! does when it ignores a value (`strings`).

mod strings;

pub use strings::Key;

/// serde_json's default nesting limit.
const MAX_DEPTH: usize = 128;

pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    depth: usize,
}

pub type Result<T> = std::result::Result<T, String>;

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor {
            bytes,
            pos: 0,
            depth: 0,
        }
    }

    pub fn error<T>(&self, what: &str) -> Result<T> {
        Err(format!("{what} at byte {}", self.pos))
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    /// Skips whitespace; then, if the next byte is `c`, consumes it.
    pub fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, c: u8) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            self.error(&format!("expected `{}`", c as char))
        }
    }

    /// Whether only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.bytes.len()
    }

    pub fn eat_null(&mut self) -> Result<bool> {
        self.skip_ws();
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(true);
        }
        Ok(false)
    }

    pub fn boolean(&mut self) -> Result<bool> {
        self.skip_ws();
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => self.error("expected a boolean"),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.error("invalid literal")
        }
    }

    /// Whether the next value (after whitespace) starts with `c`.
    pub fn peek_is(&mut self, c: u8) -> bool {
        self.skip_ws();
        self.peek() == Some(c)
    }

    /// Skips one value of any kind, validating it, and returns its text.
    pub fn raw_value(&mut self) -> Result<&'a [u8]> {
        self.skip_ws();
        let start = self.pos;
        self.skip_value()?;
        Ok(self.bytes.get(start..self.pos).unwrap_or_default())
    }

    /// Skips one object, validating it, and returns its text.
    pub fn raw_object(&mut self) -> Result<&'a [u8]> {
        self.skip_ws();
        if self.peek() != Some(b'{') {
            return self.error("expected an object");
        }
        let start = self.pos;
        self.skip_value()?;
        Ok(self.bytes.get(start..self.pos).unwrap_or_default())
    }

    /// Skips one value of any kind, validating it. Objects and arrays are
    /// walked inline rather than through `object`/`array`: that reuse cost
    /// 7 % of the worst case (BENCHMARKS.md).
    pub fn skip_value(&mut self) -> Result<()> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.string_body().map(|_| ())
            }
            Some(b'{') => {
                self.enter()?;
                self.pos += 1;
                if !self.eat(b'}') {
                    loop {
                        self.quoted("expected a key")?;
                        self.expect(b':')?;
                        self.skip_value()?;
                        if self.eat(b',') {
                            continue;
                        }
                        self.expect(b'}')?;
                        break;
                    }
                }
                self.leave();
                Ok(())
            }
            Some(b'[') => {
                self.enter()?;
                self.pos += 1;
                if !self.eat(b']') {
                    loop {
                        self.skip_value()?;
                        if self.eat(b',') {
                            continue;
                        }
                        self.expect(b']')?;
                        break;
                    }
                }
                self.leave();
                Ok(())
            }
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.error("expected a value"),
            None => self.error("EOF while parsing a value"),
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.error("recursion limit exceeded")
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<()> {
        let digits = |c: &mut Self| {
            let start = c.pos;
            while c.peek().is_some_and(|b| b.is_ascii_digit()) {
                c.pos += 1;
            }
            c.pos > start
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return self.error("invalid number"),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !digits(self) {
                return self.error("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !digits(self) {
                return self.error("invalid number");
            }
        }
        Ok(())
    }

    /// Calls `member` for each key of an object (after its `:`); `member`
    /// must consume the value. The opening `{` is expected next.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Key<'a>) -> Result<()>,
    ) -> Result<()> {
        self.expect(b'{')?;
        self.enter()?;
        if !self.eat(b'}') {
            loop {
                let key = self.key()?;
                member(self, key)?;
                if self.eat(b',') {
                    continue;
                }
                self.expect(b'}')?;
                break;
            }
        }
        self.leave();
        Ok(())
    }

    /// Calls `element` for each element of an array until it returns
    /// `Ok(false)` (stop: the rest is not read). `Ok(true)` if every element
    /// was read.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self) -> Result<bool>) -> Result<bool> {
        self.expect(b'[')?;
        self.enter()?;
        if !self.eat(b']') {
            loop {
                if !element(self)? {
                    return Ok(false);
                }
                if self.eat(b',') {
                    continue;
                }
                self.expect(b']')?;
                break;
            }
        }
        self.leave();
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::strings::special_mask;
    use super::*;

    fn skip(text: &str) -> Result<()> {
        let mut c = Cursor::new(text.as_bytes());
        c.skip_value()?;
        if c.at_end() {
            Ok(())
        } else {
            c.error("trailing characters")
        }
    }

    #[test]
    fn accepts_and_refuses_what_serde_json_does() {
        let cases = [
            "0",
            "-0",
            "1.5e3",
            "-12.25E-2",
            "1E+2",
            "true",
            "false",
            "null",
            "\"\"",
            "\"a\\\"b\\\\c\\u00e9\\/\"",
            "[]",
            "{}",
            "[1,[2,{\"a\":[]}],\"x\"]",
            " { \"k\" : { \"n\" : null } } ",
            "\"é😀 plain utf8\"",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "{\"a\":1,}",
            "{a:1}",
            "[1 2]",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\nb\"",
            "\"unterminated",
            "[",
            "{\"a\"}",
            "",
            "1 2",
            "\"tab\there\"",
        ];
        for text in cases {
            let serde_ok = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
            assert_eq!(skip(text).is_ok(), serde_ok, "{text:?}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(skip(&deep).is_err(), "nesting is limited like serde_json");
    }

    #[test]
    fn strings_are_borrowed_unless_escaped() {
        let mut c = Cursor::new(br#" "plain, with spaces and a long tail to cross eight-byte words" "es\"caped\u00e9" "#);
        assert!(matches!(
            c.string().unwrap(),
            Cow::Borrowed("plain, with spaces and a long tail to cross eight-byte words")
        ));
        assert_eq!(c.string().unwrap(), "es\"capedé");
        assert!(
            Cursor::new(b"\"\xff\"").string().is_err(),
            "kept strings are UTF-8"
        );
    }

    #[test]
    fn special_bytes_are_found_in_words() {
        for at in 0..8 {
            for special in [b'"', b'\\', b'\n', 0u8, 0x1f] {
                let mut w = *b"abcdefgh";
                w[at] = special;
                let mask = special_mask(u64::from_le_bytes(w));
                assert_eq!(mask.trailing_zeros() / 8, at as u32, "{special:#x} at {at}");
            }
        }
        assert_eq!(special_mask(u64::from_le_bytes(*b"a b~\x7f\xc3\xa9z")), 0);
        // The lowest special byte wins even when a later one follows.
        assert_eq!(
            special_mask(u64::from_le_bytes(*b"ab\"d\\f\x01h")).trailing_zeros() / 8,
            2
        );
    }
}
