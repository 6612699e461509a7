//! Kubernetes label syntax: qualified names, label values, and the
//! label-selector string language used by `kataNodeSelector`.
//!
//! The selector is sent to the host verbatim (the API server evaluates it);
//! it is parsed here only so that a typo is refused when the policy is
//! configured, with a message that says where, instead of failing on every
//! admission. API objects' selectors are compiled by `selector`.

mod selector;

pub use selector::Selector;

/// A `key` in a label or node-selector requirement: `[prefix/]name`, where the
/// prefix is a DNS subdomain and the name is at most 63 characters of
/// `[A-Za-z0-9._-]`, starting and ending alphanumeric.
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    prefix.is_none_or(is_dns_subdomain) && is_name_part(name)
}

fn is_name_part(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A label value: empty, or a name part (at most 63 characters).
pub fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_name_part(value)
}

/// A DNS-1123 label: what namespace and service account names are.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && !s.contains('.') && is_dns_subdomain(s)
}

/// A DNS-1123 subdomain: what RuntimeClass names and label-key prefixes are.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.first()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.last()
                    .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// One parsed requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: SelectorOp,
    pub values: Vec<String>,
}

impl Requirement {
    /// `labels.Requirement.Matches`, given a label lookup: how the API
    /// server applies `kataNodeSelector`, for a node read by name.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = label(&self.key);
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            SelectorOp::Equals | SelectorOp::In => value.is_some_and(listed),
            SelectorOp::NotEquals | SelectorOp::NotIn => !value.is_some_and(listed),
            SelectorOp::Exists => value.is_some(),
            SelectorOp::DoesNotExist => value.is_none(),
            SelectorOp::GreaterThan | SelectorOp::LessThan => {
                let (Some(have), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == SelectorOp::GreaterThan {
                    have > bound
                } else {
                    have < bound
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorOp {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'s> {
    Ident(&'s str),
    Comma,
    Open,
    Close,
    Bang,
    Eq,
    NotEq,
    Gt,
    Lt,
}

fn tokenize(s: &str) -> Result<Vec<Token<'_>>, String> {
    let mut tokens = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let (token, len) = match c {
            // Upstream's `isWhitespace`: only these four. Any other blank
            // (NBSP, form feed, …) is part of a word, and so an invalid one:
            // the API server would refuse the selector.
            ' ' | '\t' | '\r' | '\n' => (None, 1),
            ',' => (Some(Token::Comma), 1),
            '(' => (Some(Token::Open), 1),
            ')' => (Some(Token::Close), 1),
            '>' => (Some(Token::Gt), 1),
            '<' => (Some(Token::Lt), 1),
            '!' if rest.starts_with("!=") => (Some(Token::NotEq), 2),
            '!' => (Some(Token::Bang), 1),
            '=' if rest.starts_with("==") => (Some(Token::Eq), 2),
            '=' => (Some(Token::Eq), 1),
            _ => {
                let len = rest
                    .find(|c: char| " \t\r\n,()!=<>".contains(c))
                    .unwrap_or(rest.len());
                (rest.get(..len).map(Token::Ident), len)
            }
        };
        tokens.extend(token);
        rest = rest.get(len..).ok_or("selector is not valid UTF-8 text")?;
    }
    Ok(tokens)
}

/// Parses a label selector in the syntax of `kubectl -l` / `labels.Parse`:
/// `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`, `k>1`, `k<1`,
/// joined by commas (AND). An empty or blank string selects everything.
pub fn parse_selector(s: &str) -> Result<Vec<Requirement>, String> {
    let tokens = tokenize(s)?;
    let mut it = tokens.iter().peekable();
    let mut requirements = Vec::new();
    if it.peek().is_none() {
        return Ok(requirements);
    }
    loop {
        requirements.push(parse_requirement(&mut it)?);
        match it.next() {
            None => return Ok(requirements),
            Some(Token::Comma) => {}
            Some(t) => return Err(format!("expected ',' after a requirement, found {t:?}")),
        }
    }
}

type Tokens<'a, 's> = std::iter::Peekable<std::slice::Iter<'a, Token<'s>>>;

fn parse_requirement(it: &mut Tokens<'_, '_>) -> Result<Requirement, String> {
    if it.peek() == Some(&&Token::Bang) {
        it.next();
        let key = expect_key(it)?;
        return requirement(key, SelectorOp::DoesNotExist, vec![]);
    }
    let key = expect_key(it)?;
    match it.peek() {
        None | Some(Token::Comma) => requirement(key, SelectorOp::Exists, vec![]),
        Some(Token::Eq) | Some(Token::NotEq) => {
            let op = if it.next() == Some(&Token::Eq) {
                SelectorOp::Equals
            } else {
                SelectorOp::NotEquals
            };
            let value = match it.peek() {
                Some(Token::Ident(v)) => {
                    it.next();
                    v.to_string()
                }
                _ => String::new(),
            };
            requirement(key, op, vec![value])
        }
        Some(Token::Gt) | Some(Token::Lt) => {
            let op = if it.next() == Some(&Token::Gt) {
                SelectorOp::GreaterThan
            } else {
                SelectorOp::LessThan
            };
            match it.next() {
                Some(Token::Ident(v)) => requirement(key, op, vec![v.to_string()]),
                _ => Err(format!("{key}: expected an integer after '>' or '<'")),
            }
        }
        Some(Token::Ident(word)) if *word == "in" || *word == "notin" => {
            let op = if *word == "in" {
                SelectorOp::In
            } else {
                SelectorOp::NotIn
            };
            it.next();
            if it.next() != Some(&Token::Open) {
                return Err(format!("{key} {word}: expected '(' before the values"));
            }
            let mut values = Vec::new();
            let mut want_value = true;
            loop {
                match it.next() {
                    Some(Token::Ident(v)) if want_value => {
                        values.push(v.to_string());
                        want_value = false;
                    }
                    Some(Token::Comma) => {
                        if want_value {
                            values.push(String::new());
                        }
                        want_value = true;
                    }
                    // `()` and a trailing `,` hold one empty value, as
                    // upstream's `parseValues` reads them.
                    Some(Token::Close) => {
                        if want_value {
                            values.push(String::new());
                        }
                        break;
                    }
                    _ => return Err(format!("{key} {word}: expected a value list like (a,b)")),
                }
            }
            requirement(key, op, values)
        }
        Some(t) => Err(format!(
            "{key}: unexpected {t:?}; expected =, ==, !=, in, notin, >, < or ','"
        )),
    }
}

fn expect_key<'s>(it: &mut Tokens<'_, 's>) -> Result<&'s str, String> {
    match it.next() {
        Some(Token::Ident(k)) => Ok(k),
        Some(t) => Err(format!("expected a label key, found {t:?}")),
        None => Err("expected a label key, found the end of the selector".to_string()),
    }
}

/// Builds a requirement with the checks of `labels.NewRequirement`.
fn requirement(key: &str, op: SelectorOp, values: Vec<String>) -> Result<Requirement, String> {
    if !is_qualified_name(key) {
        return Err(format!("{key:?} is not a valid label key"));
    }
    // `labels.NewRequirement`'s checks.
    match op {
        SelectorOp::In | SelectorOp::NotIn if values.is_empty() => {
            return Err(format!("{key}: 'in' and 'notin' need at least one value"));
        }
        SelectorOp::Equals | SelectorOp::NotEquals if values.len() != 1 => {
            return Err(format!("{key}: '=' and '!=' need exactly one value"));
        }
        SelectorOp::Exists | SelectorOp::DoesNotExist if !values.is_empty() => {
            return Err(format!("{key}: an existence check takes no value"));
        }
        SelectorOp::GreaterThan | SelectorOp::LessThan
            if values.len() != 1 || values.iter().any(|v| v.parse::<i64>().is_err()) =>
        {
            return Err(format!("{key}: '>' and '<' need one integer value"));
        }
        _ => {}
    }
    if let Some(bad) = values.iter().find(|v| !is_label_value(v)) {
        return Err(format!("{key}: {bad:?} is not a valid label value"));
    }
    Ok(Requirement {
        key: key.to_string(),
        op,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use SelectorOp::*;

    fn req(key: &str, op: SelectorOp, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            op,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    #[test]
    fn parses_every_form() {
        let cases: &[(&str, Vec<Requirement>)] = &[
            ("", vec![]),
            ("   ", vec![]),
            (
                "katacontainers.io/kata-runtime=true",
                vec![req("katacontainers.io/kata-runtime", Equals, &["true"])],
            ),
            ("a==b", vec![req("a", Equals, &["b"])]),
            ("a = ", vec![req("a", Equals, &[""])]),
            ("a!=b", vec![req("a", NotEquals, &["b"])]),
            ("a in (x, y)", vec![req("a", In, &["x", "y"])]),
            ("a notin (x)", vec![req("a", NotIn, &["x"])]),
            ("a", vec![req("a", Exists, &[])]),
            ("!a", vec![req("a", DoesNotExist, &[])]),
            ("a>5", vec![req("a", GreaterThan, &["5"])]),
            ("a<5", vec![req("a", LessThan, &["5"])]),
            (
                "a=1, !b ,c in (d)",
                vec![
                    req("a", Equals, &["1"]),
                    req("b", DoesNotExist, &[]),
                    req("c", In, &["d"]),
                ],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_selector(input).as_ref(), Ok(want), "input {input:?}");
        }
    }

    /// Upstream's own tables and probes decided by upstream's parser
    /// (`upstream_selectors.tsv`): every selector, key and value it accepts
    /// is accepted here and every one it refuses is refused, except a NUL
    /// byte, which upstream's lexer reads as the end of the input (so that
    /// "\0a=b" selects every node): refused here, as no setting means it.
    #[test]
    fn agrees_with_upstream_on_its_tables() {
        let mut checked = 0;
        for line in include_str!("labels/upstream_selectors.tsv")
            .lines()
            .filter(|l| !l.starts_with('#'))
        {
            let cols: Vec<&str> = line.split('\t').collect();
            let [kind, group, verdict, hex] = cols[..] else {
                panic!("bad line {line:?}")
            };
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let Ok(input) = String::from_utf8(bytes) else {
                continue;
            };
            let accepted = match kind {
                "sel" => parse_selector(&input).is_ok(),
                "key" => is_qualified_name(&input),
                "val" => is_label_value(&input),
                other => panic!("unknown kind {other}"),
            };
            let upstream = verdict == "A" && !input.contains('\0');
            assert_eq!(accepted, upstream, "{group} {kind} {input:?}");
            checked += 1;
        }
        assert!(checked > 350, "{checked}");
    }

    #[test]
    fn empty_value_lists_and_blanks_as_upstream_reads_them() {
        let r = parse_selector("x in (),y notin (a,)").unwrap();
        assert_eq!(r[0].values, vec![String::new()]);
        assert_eq!(r[1].values, vec!["a".to_string(), String::new()]);
        assert!(parse_selector("a=b\t,\r\nc").is_ok());
        for blank in ["a=b\u{a0}", "\u{c}", "a=b\u{b}", "\u{3000}a", "a\0=b"] {
            assert!(parse_selector(blank).is_err(), "{blank:?}");
        }
    }

    #[test]
    fn requirements_match_labels_as_the_api_server_does() {
        let labels = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
        };
        let node = labels(&[("kata", "true"), ("gen", "5"), ("zone", "")]);
        for (selector, want) in [
            ("kata=true", true),
            ("kata==false", false),
            ("kata!=false", true),
            ("missing!=x", true),
            ("kata in (true,yes)", true),
            ("missing notin (x)", true),
            ("kata notin (true)", false),
            ("zone", true),
            ("!zone", false),
            ("!missing", true),
            ("gen>4", true),
            ("gen<5", false),
            ("kata>1", false),
            ("missing<9", false),
            ("zone in ()", true),
            ("kata=true,gen>9", false),
        ] {
            let reqs = parse_selector(selector).unwrap();
            assert_eq!(reqs.iter().all(|r| r.matches(node)), want, "{selector}");
        }
    }

    #[test]
    fn refuses_malformed_selectors() {
        for input in [
            "a=b=c",
            "=b",
            "a in x",
            "a in (x",
            "a>x",
            "a>",
            "Not A Key=1",
            "a=b,",
            ",a",
            "a=-bad-",
            "a b",
            "!",
            "a notin",
            // As in Kubernetes, a '<'/'>' bound must also be a valid label value.
            "a<-5",
        ] {
            assert!(parse_selector(input).is_err(), "accepted {input:?}");
        }
    }

    #[test]
    fn qualified_names_follow_kubernetes_rules() {
        for ok in [
            "a",
            "node-role.kubernetes.io/master",
            "A_b.c",
            "x/y",
            "katacontainers.io/kata-runtime",
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "/a",
            "a/",
            "Bad_Prefix/a",
            "a/b/c",
            &"x".repeat(64),
        ] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn dns_subdomains() {
        for ok in ["kata", "kata-qemu", "a.b-c.d", "0kata"] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in ["", "Kata", "kata_qemu", "-kata", "kata.", "a..b"] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
    }
}
