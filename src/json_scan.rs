//! A small forward-only JSON reader for the one document the policy reads
//! in bulk: the node list. It validates the JSON grammar of everything it
//! passes over, like `serde::de::IgnoredAny` does, but extracts the few
//! fields it is asked for without serde's per-field visitor machinery, which
//! cost more than reading the list itself (BENCHMARKS.md).
//!
//! Strings that are kept are checked for UTF-8 and unescaped; skipped strings
//! are only checked for valid escapes and control characters, as serde_json
//! does when it ignores a value.

use std::borrow::Cow;

/// serde_json's default nesting limit.
const MAX_DEPTH: usize = 128;

/// An object key: the raw bytes between the quotes, or the decoded text of
/// a key with escapes.
pub enum Key<'a> {
    Raw(&'a [u8]),
    Decoded(String),
}

impl<'a> Key<'a> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Raw(b) => b,
            Key::Decoded(s) => s.as_bytes(),
        }
    }

    /// The key as text, for keeping it.
    pub fn into_text(self) -> Result<Cow<'a, str>> {
        match self {
            Key::Raw(b) => std::str::from_utf8(b)
                .map(Cow::Borrowed)
                .map_err(|_| "invalid UTF-8 in a key".to_string()),
            Key::Decoded(s) => Ok(Cow::Owned(s)),
        }
    }
}

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

    /// Moves past the body of a string whose opening quote is consumed; `Ok(true)` if
    /// it had escapes. Eight bytes at a time while none is special.
    fn string_body(&mut self) -> Result<bool> {
        let mut escaped = false;
        loop {
            // Jump to the first special byte of the first word that has one.
            while let Some(chunk) = self.bytes.get(self.pos..self.pos + 8) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                let mask = special_mask(u64::from_le_bytes(word));
                if mask != 0 {
                    self.pos += (mask.trailing_zeros() / 8) as usize;
                    break;
                }
                self.pos += 8;
            }
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 1;
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 1
                        }
                        Some(b'u') => {
                            let hex = self.bytes.get(self.pos + 1..self.pos + 5);
                            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                                return self.error("invalid \\u escape");
                            }
                            self.pos += 5;
                        }
                        _ => return self.error("invalid escape"),
                    }
                }
                Some(c) if c < 0x20 => return self.error("control character in string"),
                Some(_) => self.pos += 1,
                None => return self.error("EOF while parsing a string"),
            }
        }
    }

    /// Moves past a quoted string, checking its escapes; returns its raw
    /// text, quotes included, and whether it has escapes.
    #[inline]
    fn quoted(&mut self, what: &str) -> Result<(&'a [u8], bool)> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return self.error(what);
        }
        let start = self.pos;
        self.pos += 1;
        let escaped = self.string_body()?;
        Ok((self.bytes.get(start..self.pos).unwrap_or_default(), escaped))
    }

    /// Reads a string, borrowed when it has no escapes.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        let (raw, escaped) = self.quoted("expected a string")?;
        if escaped {
            return unescape(raw).map(Cow::Owned);
        }
        match std::str::from_utf8(between_quotes(raw)) {
            Ok(s) => Ok(Cow::Borrowed(s)),
            Err(_) => self.error("invalid UTF-8 in string"),
        }
    }

    /// Reads a member key and its `:`. Keys are compared as bytes, so only an
    /// escaped key (rare) is decoded; UTF-8 is checked when a key is kept.
    pub fn key(&mut self) -> Result<Key<'a>> {
        let (raw, escaped) = self.quoted("expected a key")?;
        let key = if escaped {
            Key::Decoded(unescape(raw)?)
        } else {
            Key::Raw(between_quotes(raw))
        };
        self.expect(b':')?;
        Ok(key)
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

/// Decodes a quoted string with escapes (rare): serde_json applies them,
/// surrogate pairs and all.
fn unescape(raw: &[u8]) -> Result<String> {
    serde_json::from_slice::<String>(raw).map_err(|e| e.to_string())
}

fn between_quotes(raw: &[u8]) -> &[u8] {
    raw.get(1..raw.len().saturating_sub(1)).unwrap_or_default()
}

/// The high bit of each byte of `word` (little-endian) that is `"`, `\` or a
/// control character. Above the lowest flagged byte there may be false
/// flags (borrows), so only the lowest one is used.
fn special_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}

#[cfg(test)]
mod tests {
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
