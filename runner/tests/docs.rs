//! The user documents hold together: README.md, CHANGELOG.md, BENCHMARKS.md,
//! RELIABILITY.md, docs/*.md, examples/*.yaml, metadata.yml and
//! questions-ui.yml.
//!
//! - every relative markdown link (`[text](target)`, `[label]: target`)
//!   names a file or folder that exists, and its `#anchor`, into a markdown
//!   file, is one of that file's headings (GitHub's slugs);
//! - every repository path a document names (`examples/rbac.yaml`,
//!   `docs/settings.md#annotatedecision`, `scripts/*.sh`: a path whose first
//!   folder is one of the repository's), every `NAME.md` document, and every
//!   file given to `kubectl … -f` exists (unless the document writes it
//!   itself with `> file`);
//! - no document mentions "issue N" or `../shared`: readers cannot look them
//!   up; cite upstream sources by URL instead.
//!
//! Each problem is reported as `file:line: …`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::root;

/// What the checker reads: files by repository-relative path.
trait Tree {
    /// The text of a file (empty for a file that is not UTF-8), or None.
    fn text(&self, rel: &str) -> Option<String>;
    fn is_dir(&self, rel: &str) -> bool;
    /// The names in a folder.
    fn list(&self, dir: &str) -> Vec<String>;

    /// Whether git ignores the path: an output the tools write (such as
    /// `fuzz/run/`), which a document may name though it is not committed.
    fn ignored(&self, rel: &str) -> bool;

    fn exists(&self, rel: &str) -> bool {
        self.text(rel).is_some() || self.is_dir(rel)
    }
}

/// The repository on disk.
struct Disk<'a>(&'a Path);

impl Tree for Disk<'_> {
    fn text(&self, rel: &str) -> Option<String> {
        let path = self.0.join(rel);
        if !path.is_file() {
            return None;
        }
        Some(std::fs::read_to_string(path).unwrap_or_default())
    }

    fn is_dir(&self, rel: &str) -> bool {
        rel.is_empty() || self.0.join(rel).is_dir()
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.0.join(dir))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }

    fn ignored(&self, rel: &str) -> bool {
        std::process::Command::new("git")
            .arg("-C")
            .arg(self.0)
            .args(["check-ignore", "-q", "--no-index", rel])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// An in-memory tree, for the checker's own tests; paths under `run/`
/// folders are taken as ignored.
struct Memory(BTreeMap<String, String>);

impl Tree for Memory {
    fn text(&self, rel: &str) -> Option<String> {
        self.0.get(rel).cloned()
    }

    fn is_dir(&self, rel: &str) -> bool {
        rel.is_empty() || self.0.keys().any(|k| k.starts_with(&format!("{rel}/")))
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let names: BTreeSet<String> = self
            .0
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or_default().to_string())
            .collect();
        names.into_iter().collect()
    }

    fn ignored(&self, rel: &str) -> bool {
        rel.split('/').any(|part| part == "run")
    }
}

/// The documents to check, sorted.
fn documents(tree: &dyn Tree) -> Vec<String> {
    let mut docs: Vec<String> = [
        "README.md",
        "CHANGELOG.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
        "metadata.yml",
        "questions-ui.yml",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    for (dir, exts) in [("docs", &[".md"][..]), ("examples", &[".yaml", ".yml"][..])] {
        for name in tree.list(dir) {
            if exts.iter().any(|e| name.ends_with(e)) {
                docs.push(format!("{dir}/{name}"));
            }
        }
    }
    docs
}

/// The repository's top-level folders, which a path must start with to be
/// taken for a repository path (`target` and `.git` are not documents'
/// business).
fn top_dirs(tree: &dyn Tree) -> BTreeSet<String> {
    tree.list("")
        .into_iter()
        .filter(|n| n != "target" && n != ".git" && tree.is_dir(n))
        .collect()
}

/// GitHub's heading anchor: lowercase, punctuation dropped (letters,
/// numbers, `_`, `-` and spaces kept), each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// A heading's text as GitHub renders it: code spans, links, images and
/// HTML tags reduced to their text.
fn rendered(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '`' {
            rest = &rest[1..];
            continue;
        }
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            rest = &rest[end + 1..];
            continue;
        }
        if c == '!' && rest[1..].starts_with('[') {
            rest = &rest[1..];
            continue;
        }
        if c == ']'
            && rest[1..].starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether a line opens or closes a fenced code block.
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The anchors of a markdown document: its headings' slugs (a repeated
/// heading gets `-1`, `-2`, …) and `id`/`name` attributes of HTML tags.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut add = |text: &str, out: &mut BTreeSet<String>| {
        let base = slug(&rendered(text.trim()));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    };
    let mut in_code = false;
    let mut previous = "";
    for line in markdown.lines() {
        if is_fence(line) {
            in_code = !in_code;
            previous = "";
            continue;
        }
        if in_code {
            continue;
        }
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t']) {
            add(line[hashes..].trim().trim_end_matches('#'), &mut out);
        } else if !previous.trim().is_empty()
            && !line.is_empty()
            && (line.trim_end().bytes().all(|b| b == b'=')
                || line.trim_end().bytes().all(|b| b == b'-'))
            && !previous.trim_start().starts_with(['-', '*', '|', '>', '#'])
        {
            add(previous, &mut out);
        }
        for attr in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(attr) {
                if line[..at].contains('<') {
                    let value = &line[at + attr.len()..];
                    if let Some(end) = value.find('"') {
                        out.insert(value[..end].to_string());
                    }
                }
            }
        }
        previous = line;
    }
    out
}

/// `base/rel` with `.` and `..` resolved; None if it leaves the repository.
fn join(base_dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base_dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

fn dir_of(doc: &str) -> &str {
    doc.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Whether `name` matches a pattern with `*` wildcards.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            let Some(rest) = name.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .filter(|&i| rest.is_char_boundary(i))
                .any(|i| glob_matches(tail, &rest[i..]))
        }
    }
}

/// Whether a repository path exists; `*` in its last part matches any name.
fn path_exists(tree: &dyn Tree, rel: &str) -> bool {
    let rel = rel.trim_end_matches('/');
    match rel.rsplit_once('/') {
        Some((dir, name)) if name.contains('*') => {
            tree.list(dir).iter().any(|n| glob_matches(name, n))
        }
        _ => tree.exists(rel),
    }
}

/// Checks `#anchor` in a markdown file `target` (repository path).
fn check_anchor(tree: &dyn Tree, at: &str, target: &str, anchor: &str, problems: &mut Vec<String>) {
    if anchor.is_empty() || !target.ends_with(".md") {
        return;
    }
    let Some(text) = tree.text(target) else {
        return;
    };
    if !anchors(&text).contains(&anchor.to_lowercase()) {
        problems.push(format!("{at}: {target} has no heading for #{anchor}"));
    }
}

/// The line with code spans blanked out (their text is not markdown).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// Whether a link target is a URL (`https:`, `mailto:`, …), not a path.
fn is_url(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && !scheme.contains('/')
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

/// The link targets on a markdown line (outside code spans): inline links
/// and images `[text](target "title")`, and reference definitions
/// `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && !trimmed[..close].contains("](")
    {
        if let Some(target) = trimmed[close + 2..].split_whitespace().next() {
            targets.push(target.trim_matches(['<', '>']).to_string());
        }
        return targets;
    }
    for (at, _) in line.match_indices("](") {
        let rest = &line[at + 2..];
        let mut depth = 0usize;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = i;
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let inside = rest[..end].trim();
        let target = if let Some(angle) = inside.strip_prefix('<') {
            angle.split('>').next().unwrap_or_default()
        } else {
            inside.split_whitespace().next().unwrap_or_default()
        };
        targets.push(target.to_string());
    }
    targets
}

/// The line with URLs and the text of external links blanked out: what
/// they name is not in this repository.
fn without_urls(line: &str) -> String {
    let mut out = line.to_string();
    // `[text](https://…)`: the text names the upstream file.
    let mut search = 0;
    while let Some(open) = out[search..].find("](") {
        let open = search + open;
        let target_start = open + 2;
        let target: String = out[target_start..]
            .chars()
            .take_while(|&c| c != ')' && !c.is_whitespace())
            .collect();
        if is_url(&target)
            && let Some(text_start) = out[..open].rfind('[')
        {
            let end = target_start + target.len();
            out.replace_range(text_start..end, &" ".repeat(end - text_start));
        }
        search = open + 2;
    }
    for scheme in ["https://", "http://", "registry://"] {
        while let Some(at) = out.find(scheme) {
            let len = out[at..]
                .find(|c: char| c.is_whitespace() || "`)>\"'".contains(c))
                .unwrap_or(out.len() - at);
            out.replace_range(at..at + len, &" ".repeat(len));
        }
    }
    out
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-/*".contains(c)
}

/// The repository paths a line names: words whose first folder is one of
/// the repository's (`examples/rbac.yaml`, `docs/`), with the `#anchor`
/// that follows, if any; and `NAME.md` documents.
fn named_paths(line: &str, dirs: &BTreeSet<String>) -> Vec<(String, String)> {
    let line = without_urls(line);
    let mut found = Vec::new();
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        let starts_word = is_path_char(c)
            && (i == 0 || {
                let p = chars[i - 1].1;
                !(is_path_char(p) || p == ':' || p == '~' || p == '@' || p == '$')
            });
        if !starts_word {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && is_path_char(chars[j].1) {
            j += 1;
        }
        let end = chars.get(j).map_or(line.len(), |&(e, _)| e);
        let word = line[start..end].trim_end_matches(['.', '-']);
        let anchor: String = if line[end..].starts_with('#') {
            line[end + 1..]
                .chars()
                .take_while(|&c| c.is_alphanumeric() || c == '-' || c == '_')
                .collect()
        } else {
            String::new()
        };
        let first = word.split('/').next().unwrap_or_default();
        let is_doc = !word.contains('/')
            && word.strip_suffix(".md").is_some_and(|stem| {
                !stem.is_empty()
                    && stem.starts_with(|c: char| c.is_ascii_uppercase())
                    && stem
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            });
        if (word.contains('/') && dirs.contains(first)) || is_doc {
            found.push((word.to_string(), anchor));
        }
        i = j;
    }
    found
}

/// The files a `kubectl … -f FILE` (or `--filename`) on this line reads,
/// unless they are URLs, `-` or variables.
fn kubectl_files(line: &str) -> Vec<String> {
    let Some(at) = line.find("kubectl ") else {
        return Vec::new();
    };
    let words: Vec<&str> = line[at..].split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "-f" || w[0] == "--filename")
        .map(|w| w[1].trim_matches(['`', '"', '\'', ';']))
        .filter(|f| *f != "-" && !is_url(f) && !f.contains('$') && !f.is_empty())
        .map(String::from)
        .collect()
}

/// The files a document writes itself (`> file`, `-o file`,
/// `--output file`), which it may then name.
fn written_files(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for w in words.windows(2) {
            if [">", ">>", "-o", "--output"].contains(&w[0]) {
                out.insert(w[1].trim_matches(['`', '"', '\'']).to_string());
            }
        }
        for w in &words {
            if let Some(f) = w
                .strip_prefix('>')
                .filter(|f| !f.is_empty() && !f.starts_with('>'))
            {
                out.insert(f.trim_matches(['`', '"', '\'']).to_string());
            }
        }
    }
    out
}

/// An "issue N" / "issues N" mention (case-insensitive, `#` allowed).
fn issue_mention(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    for (at, _) in lower.match_indices("issue") {
        if lower[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        let mut i = at + "issue".len();
        if bytes.get(i) == Some(&b's') {
            i += 1;
        }
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        if bytes.get(i) == Some(&b'#') {
            i += 1;
        }
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            return Some(line[at..i + digits].to_string());
        }
    }
    None
}

/// Every problem of one document.
/// This repository's files on GitHub, followed by `TAG/PATH`.
const OWN_BLOB: &str = "https://github.com/kata-runtime-policy/kata-runtime-policy/blob/";

fn check_document(tree: &dyn Tree, doc: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let dirs = top_dirs(tree);
    let markdown = doc.ends_with(".md");
    let written = written_files(text);
    let mut in_code = false;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{doc}:{}", n + 1);
        if let Some(mention) = issue_mention(line) {
            problems.push(format!(
                "{at}: mentions {mention:?}: readers cannot look it up; say what it is, or cite an upstream URL"
            ));
        }
        if line.contains("../shared") {
            problems.push(format!(
                "{at}: mentions ../shared, which is not in the repository"
            ));
        }
        for (path, anchor) in named_paths(line, &dirs) {
            if !path_exists(tree, &path) {
                if !tree.ignored(&path) {
                    problems.push(format!(
                        "{at}: names {path}, which does not exist (an upstream file? cite it by URL)"
                    ));
                }
            } else {
                check_anchor(tree, &at, &path, &anchor, &mut problems);
            }
        }
        for file in kubectl_files(line) {
            let in_repo = join("", &file).is_some_and(|p| path_exists(tree, &p));
            // A repository path is already checked as a named path.
            if !in_repo && !written.contains(&file) && named_paths(&file, &dirs).is_empty() {
                problems.push(format!(
                    "{at}: kubectl reads {file}, which is not in the repository"
                ));
            }
        }
        if !markdown {
            continue;
        }
        if is_fence(line) {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        for target in link_targets(line) {
            // A link to this repository's own file at a release tag is
            // that file here: the release is this tree.
            if let Some(rest) = target.strip_prefix(OWN_BLOB) {
                let rest = rest.split_once('/').map_or("", |(_tag, path)| path);
                let (path, anchor) = rest.split_once('#').unwrap_or((rest, ""));
                if path_exists(tree, path) {
                    check_anchor(tree, &at, path, anchor, &mut problems);
                } else {
                    problems.push(format!(
                        "{at}: link {target} names {path}, which does not exist"
                    ));
                }
                continue;
            }
            if target.is_empty() || is_url(&target) {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            if path.is_empty() {
                check_anchor(tree, &at, doc, anchor, &mut problems);
                continue;
            }
            // README.md is also the module's embedded documentation (kwctl
            // annotate -u) and the Artifact Hub page, where a relative link
            // leads nowhere.
            if doc == "README.md" {
                problems.push(format!(
                    "{at}: link {target} is relative: README.md is also read inside the module and on Artifact Hub; link {OWN_BLOB}vX.Y.Z/{path}"
                ));
                continue;
            }
            match join(dir_of(doc), path) {
                None => problems.push(format!("{at}: link {target} leaves the repository")),
                Some(resolved) if !path_exists(tree, &resolved) => problems.push(format!(
                    "{at}: link {target} points to {resolved}, which does not exist"
                )),
                Some(resolved) => check_anchor(tree, &at, &resolved, anchor, &mut problems),
            }
        }
    }
    problems
}

fn check_tree(tree: &dyn Tree) -> Vec<String> {
    let mut problems = Vec::new();
    for doc in documents(tree) {
        match tree.text(&doc) {
            Some(text) => problems.extend(check_document(tree, &doc, &text)),
            None => problems.push(format!("{doc}: missing")),
        }
    }
    problems
}

#[test]
fn the_documents_link_and_name_only_what_exists() {
    let problems = check_tree(&Disk(root()));
    assert!(
        problems.is_empty(),
        "{} problem(s) in the documents:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

// The checker itself, on inline documents.

fn tree(files: &[(&str, &str)]) -> Memory {
    Memory(
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect(),
    )
}

/// A small repository whose documents are all fine.
fn sound() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "README.md",
            "# Kata runtime policy\n\n## Monitor, then protect\n\n## Upgrade and roll back\n\n\
             See [the settings](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/settings.md#annotatedecision), [RBAC](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/examples/rbac.yaml),\n\
             [below](#monitor-then-protect), [docs](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs) and ![a logo](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/logo.svg \"Logo\").\n\
             Apply `examples/rbac.yaml`, then run `scripts/*.sh`; BENCHMARKS.md has the figures.\n\
             Upstream: [docs/Limitations.md](https://github.com/kata-containers/kata-containers/blob/main/docs/Limitations.md),\n\
             kata-containers [#12008](https://github.com/kata-containers/kata-containers/pull/12008),\n\
             https://github.com/kata-containers/kata-containers/issues/13322 and nvidia.com/gpu, /var/run,\n\
             kubernetes/can_i, `tissue 5`. Fuzzing writes fuzz/run/ (not committed).\n\n\
             ```console\n$ kwctl scaffold manifest > policy.yaml\n$ kubectl apply -f policy.yaml\n\
             $ kubectl apply -f examples/rbac.yaml\n$ kubectl apply -f - <<EOF\n[not a link](nowhere.md)\n```\n\n\
             [ref]: https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/settings.md#restrictruntimeclasses\n",
        ),
        (
            "CHANGELOG.md",
            "# Changelog\n\n## [Unreleased]\n\n[Unreleased]: https://x/compare/v1...HEAD\n",
        ),
        ("BENCHMARKS.md", "# Benchmarks\n"),
        (
            "RELIABILITY.md",
            "# Reliability\n\nSee [the guide](README.md#upgrade-and-roll-back).\n",
        ),
        (
            "docs/settings.md",
            "# Settings\n\n## `annotateDecision`\n\n## `restrictRuntimeClasses`\n\nBack to [the README](../README.md#kata-runtime-policy).\n",
        ),
        ("docs/logo.svg", "<svg/>"),
        (
            "examples/rbac.yaml",
            "# kubectl apply -f examples/rbac.yaml\nkind: ClusterRole\n",
        ),
        ("metadata.yml", "# BENCHMARKS.md\nrules: []\n"),
        ("questions-ui.yml", "questions: []\n"),
        ("scripts/demo.sh", "#!/bin/sh\n"),
        ("src/lib.rs", ""),
        ("fuzz/Cargo.toml", ""),
    ]
}

fn problems_with(edit: (&str, &str)) -> Vec<String> {
    let mut files = sound();
    match files.iter_mut().find(|(p, _)| *p == edit.0) {
        Some(file) => file.1 = edit.1,
        None => files.push(edit),
    }
    check_tree(&tree(&files))
}

#[test]
fn the_checker_passes_sound_documents() {
    assert_eq!(check_tree(&tree(&sound())), Vec::<String>::new());
}

#[test]
fn the_checker_names_each_problem_with_its_line() {
    for (file, text, expected) in [
        (
            "README.md",
            "# A\n\nSee [x](docs/settings.md).\n",
            "README.md:3: link docs/settings.md is relative: README.md is also read inside the module and on Artifact Hub; link https://github.com/kata-runtime-policy/kata-runtime-policy/blob/vX.Y.Z/docs/settings.md",
        ),
        (
            "README.md",
            "# A\n\nSee [x](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/missing.md).\n",
            "README.md:3: link https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/missing.md names docs/missing.md, which does not exist",
        ),
        (
            "RELIABILITY.md",
            "# R\n\nSee [x](https://github.com/kata-runtime-policy/kata-runtime-policy/blob/v1.0.0/docs/settings.md#checkvolumes).\n",
            "RELIABILITY.md:3: docs/settings.md has no heading for #checkvolumes",
        ),
        (
            "docs/settings.md",
            "# Settings\n\n[up](../../outside.md)\n",
            "docs/settings.md:3: link ../../outside.md leaves the repository",
        ),
        (
            "docs/settings.md",
            "# Settings\n\n[up](README.md)\n",
            "docs/settings.md:3: link README.md points to docs/README.md, which does not exist",
        ),
        (
            "RELIABILITY.md",
            "# R\n\n[x](README.md#no-such-part)\n",
            "RELIABILITY.md:3: README.md has no heading for #no-such-part",
        ),
        (
            "RELIABILITY.md",
            "# R\n\n[x](#r-1)\n",
            "RELIABILITY.md:3: RELIABILITY.md has no heading for #r-1",
        ),
        (
            "RELIABILITY.md",
            "# R\n\n[x]: docs/settings.md#checkvolumes\n",
            "RELIABILITY.md:3: docs/settings.md has no heading for #checkvolumes",
        ),
        (
            "BENCHMARKS.md",
            "# B\n\nThe manifest is `examples/nginx.yaml`.\n",
            "BENCHMARKS.md:3: names examples/nginx.yaml, which does not exist",
        ),
        (
            "BENCHMARKS.md",
            "# B\n\nSee `docs/settings.md#allowedruntimeclasses`.\n",
            "BENCHMARKS.md:3: docs/settings.md has no heading for #allowedruntimeclasses",
        ),
        (
            "BENCHMARKS.md",
            "# B\n\nas VOLUMES.md states\n",
            "BENCHMARKS.md:3: names VOLUMES.md, which does not exist",
        ),
        (
            "BENCHMARKS.md",
            "# B\n\nInputs go to fuzz/run/ (not committed) and src/runtime/Makefile.\n",
            "BENCHMARKS.md:3: names src/runtime/Makefile, which does not exist",
        ),
        (
            "BENCHMARKS.md",
            "# B\n\nrun scripts/*.py\n",
            "BENCHMARKS.md:3: names scripts/*.py, which does not exist",
        ),
        (
            "README.md",
            "# A\n\n```console\n$ kubectl apply -f nginx-schedule-on-master.yaml\n```\n",
            "README.md:4: kubectl reads nginx-schedule-on-master.yaml, which is not in the repository",
        ),
        (
            "CHANGELOG.md",
            "# C\n\n- Fixed (Issue 9/11/17).\n",
            "CHANGELOG.md:3: mentions \"Issue 9\"",
        ),
        (
            "CHANGELOG.md",
            "# C\n\n- see issues #12 and 13\n",
            "CHANGELOG.md:3: mentions \"issues #12\"",
        ),
        (
            "docs/settings.md",
            "# S\n\nfrom ../shared/bin\n",
            "docs/settings.md:3: mentions ../shared",
        ),
        (
            "examples/rbac.yaml",
            "# See issue 20 and docs/rbac.md.\nkind: ClusterRole\n",
            "examples/rbac.yaml:1: mentions \"issue 20\"",
        ),
        (
            "examples/rbac.yaml",
            "# See docs/rbac.md.\nkind: ClusterRole\n",
            "examples/rbac.yaml:1: names docs/rbac.md, which does not exist",
        ),
        (
            "metadata.yml",
            "# README.md, \"How Kata is found\"; KATA.md\nrules: []\n",
            "metadata.yml:1: names KATA.md, which does not exist",
        ),
        (
            "questions-ui.yml",
            "questions:\n  - tooltip: see examples/policy-server.yaml\n",
            "questions-ui.yml:2: names examples/policy-server.yaml, which does not exist",
        ),
        (
            "docs/missing-title.md",
            "# T\n\n[x](settings.md#annotate-decision)\n",
            "docs/missing-title.md:3: docs/settings.md has no heading for #annotate-decision",
        ),
    ] {
        let problems = problems_with((file, text));
        assert!(
            problems.iter().any(|p| p.starts_with(expected)),
            "{file}: expected {expected:?} in {problems:#?}"
        );
    }
}

#[test]
fn headings_get_githubs_anchors() {
    let doc = "# Kata runtime policy\n\n## Monitor, then protect\n\n### `annotateDecision`\n\n\
               ## What Kata cannot run (with sources)\n\n## Upgrade — and roll back\n\n## FAQ\n\n## FAQ\n\n\
               ## [Linked](https://x) heading\n\n```\n# not a heading\n```\n\nSetext title\n============\n\n\
               <a id=\"custom\"></a>\n\n#NoSpace\n\n## snake_case and CAPS 2.0 ##\n";
    let got = anchors(doc);
    for expected in [
        "kata-runtime-policy",
        "monitor-then-protect",
        "annotatedecision",
        "what-kata-cannot-run-with-sources",
        "upgrade--and-roll-back",
        "faq",
        "faq-1",
        "linked-heading",
        "setext-title",
        "custom",
        "snake_case-and-caps-20",
    ] {
        assert!(got.contains(expected), "{expected} not in {got:?}");
    }
    assert!(!got.contains("not-a-heading"), "{got:?}");
    assert!(!got.contains("nospace"), "{got:?}");
}

#[test]
fn only_repository_paths_are_taken_for_paths() {
    let dirs: BTreeSet<String> = ["docs", "examples", "src", "scripts"]
        .into_iter()
        .map(String::from)
        .collect();
    let names = |line: &str| -> Vec<String> {
        named_paths(line, &dirs)
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    };
    assert_eq!(
        names("Apply `examples/rbac.yaml`, then examples/policy-server.yaml."),
        ["examples/rbac.yaml", "examples/policy-server.yaml"]
    );
    assert_eq!(
        names("see docs/settings.md#annotatedecision"),
        ["docs/settings.md"]
    );
    assert_eq!(
        named_paths("`docs/settings.md#annotatedecision`", &dirs)[0].1,
        "annotatedecision"
    );
    assert!(names("upstream crates/kwctl/src/scaffold/artifacthub.rs and a/docs/x.md").is_empty());
    assert!(names("https://github.com/o/r/blob/main/docs/x.md and nvidia.com/gpu").is_empty());
    assert!(
        names("[docs/Limitations.md](https://github.com/k/k/blob/main/docs/Limitations.md)")
            .is_empty()
    );
    assert!(names("registry://ghcr.io/o/docs/p:v1 and /var/lib/kubelet/plugins").is_empty());
    assert_eq!(
        names("as VOLUMES.md and README.md say, not notes.md"),
        ["VOLUMES.md", "README.md"]
    );
    assert_eq!(issue_mention("Issue 9/11"), Some("Issue 9".into()));
    assert_eq!(issue_mention("(issues #4)"), Some("issues #4".into()));
    assert_eq!(issue_mention("issue9"), Some("issue9".into()));
    assert_eq!(
        issue_mention("tissue 5, issues/13322, an issue with 5 nodes"),
        None
    );
    assert_eq!(
        kubectl_files("$ kubectl apply -f a.yaml -f https://x/y.yaml -f -"),
        ["a.yaml"]
    );
    assert!(written_files("kwctl scaffold manifest x > policy.yaml").contains("policy.yaml"));
}
