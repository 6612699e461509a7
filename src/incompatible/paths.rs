//! Host paths as Go's `path` package and the kubelet compare them.

/// `path.Clean` of Go: `//` collapsed, `.` removed, `..` resolved, a
/// trailing `/` dropped; "" becomes ".".
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut elements: Vec<&str> = Vec::new();
    for element in path.split('/') {
        match element {
            "" | "." => {}
            ".." => {
                if elements.last().is_some_and(|last| *last != "..") {
                    elements.pop();
                } else if !rooted {
                    elements.push("..");
                }
            }
            other => elements.push(other),
        }
    }
    let joined = elements.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Whether the cleaned `path` is `dir` or lies under it, comparing whole
/// elements: `/run` covers `/run/x`, not `/runtime`.
pub fn is_within(path: &str, dir: &str) -> bool {
    match path.strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || dir.ends_with('/'),
        None => false,
    }
}
