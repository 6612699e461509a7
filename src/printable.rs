//! Text a tenant wrote, made safe to show in a warning, a message or a log
//! line. The webhook sees the pod before the API server validates it, so a
//! name or a path may hold anything: a newline or ESC makes the API server
//! drop a warning (apimachinery's `NewWarningHeader` refuses control
//! characters) and splits a log line; U+2028 and U+2029 break lines in
//! many viewers; bidirectional controls (U+202E) make text read other
//! than it is.

use std::borrow::Cow;

/// Whether `c` must not reach a reader as it is.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}'          // line and paragraph separators
            | '\u{200E}' | '\u{200F}'        // LRM, RLM
            | '\u{202A}'..='\u{202E}'        // LRE, RLE, PDF, LRO, RLO
            | '\u{2066}'..='\u{2069}') // LRI, RLI, FSI, PDI
}

/// `text` as written when every character is safe, else quoted with
/// Rust's escapes (`"/run/a\nb.sock"`), as the findings quote names.
pub fn quoted_if_unsafe(text: &str) -> Cow<'_, str> {
    match text.chars().any(is_unsafe) {
        false => Cow::Borrowed(text),
        true => Cow::Owned(format!("{:?}", Escaped(text))),
    }
}

/// `text` with each unsafe character escaped (`\n`, `\u{202e}`), the rest
/// as written.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match is_unsafe(c) {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// At most `max` bytes of `text`, cut on a character boundary and marked
/// with `...` when cut.
pub fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}...", prefix(text, max.saturating_sub(3))))
}

/// The longest start of `text` of at most `max` bytes that ends on a
/// character boundary.
pub fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// A string whose `Debug` quotes it and escapes every unsafe character
/// (Rust's own `Debug` for `str` leaves some format characters as they
/// are).
struct Escaped<'a>(&'a str);

impl std::fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' | '\\' => {
                    f.write_char('\\')?;
                    f.write_char(c)?;
                }
                c if is_unsafe(c) => {
                    for e in c.escape_default() {
                        f.write_char(e)?;
                    }
                }
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_text_is_shown_as_written() {
        for text in ["/var/run/docker.sock", "/srv/a b/ü", "", "web-0"] {
            assert_eq!(quoted_if_unsafe(text), text);
            assert_eq!(escaped(text), text);
        }
    }

    #[test]
    fn control_separator_and_bidi_characters_are_escaped() {
        let hostile = "/run/a\nb\u{1b}[31m\u{2028}\u{2029}\u{202e}x\"\\.sock";
        let quoted = quoted_if_unsafe(hostile);
        assert_eq!(
            quoted,
            r#""/run/a\nb\u{1b}[31m\u{2028}\u{2029}\u{202e}x\"\\.sock""#
        );
        assert!(!quoted.chars().any(is_unsafe), "{quoted}");
        let line = escaped(hostile);
        assert_eq!(
            line,
            r#"/run/a\nb\u{1b}[31m\u{2028}\u{2029}\u{202e}x"\.sock"#
        );
        // The API server's rule for a warning: no control character.
        assert!(!line.chars().any(char::is_control));
    }

    #[test]
    fn bounded_cuts_on_a_character_boundary() {
        assert_eq!(bounded("abc", 3), "abc");
        assert_eq!(bounded("abcdef", 5), "ab...");
        let cut = bounded("ééééé", 6);
        assert_eq!(cut, "é...");
        assert!(cut.len() <= 6);
        assert_eq!(bounded(&"x".repeat(1_000_000), 253).len(), 253);
    }
}
