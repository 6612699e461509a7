//! Strings and keys: moving past them a word at a time, checking their
//! escapes, and decoding only those that are kept and have escapes.

use std::borrow::Cow;

use super::{Cursor, Result};

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

impl<'a> Cursor<'a> {
    /// Moves past the body of a string whose opening quote is consumed; `Ok(true)` if
    /// it had escapes. Eight bytes at a time while none is special.
    pub(super) fn string_body(&mut self) -> Result<bool> {
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
    pub(super) fn quoted(&mut self, what: &str) -> Result<(&'a [u8], bool)> {
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
pub(super) fn special_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(word ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control
}
