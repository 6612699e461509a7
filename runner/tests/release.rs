//! One release, one version: Cargo.toml's package version, metadata.yml's
//! `io.kubewarden.policy.version`, artifacthub-pkg.yml (version, image tag,
//! download URL) and every pinned module reference
//! (`kata-runtime-policy:vX.Y.Z`, `releases/download/vX.Y.Z`) in examples/,
//! README.md and docs/*.md agree, and CHANGELOG.md has a dated section and a
//! link reference for that version. A user who copies a pinned reference
//! gets the release whose settings the documents describe.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::root;
use serde_yaml::Value;

const MODULE: &str = "kata-runtime-policy:v";
const DOWNLOAD: &str = "releases/download/v";
/// A link to the repository's own file at a release tag, and a clone of it.
const BLOB: &str = "kata-runtime-policy/blob/v";
const CLONE: &str = "git clone --branch v";

/// `X.Y.Z` with an optional `-pre` (what a tag `vX.Y.Z…` names), or None.
fn version_at(text: &str) -> Option<&str> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .unwrap_or(text.len());
    let v = text[..end].trim_end_matches(['.', '-']);
    let core = v.split('-').next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then_some(v)
}

/// A version found in a file, with where it was found.
#[derive(Debug)]
struct Pin {
    at: String,
    what: &'static str,
    version: String,
}

fn read(root: &Path, rel: &str) -> Result<String, String> {
    std::fs::read_to_string(root.join(rel)).map_err(|e| format!("{rel}: {e}"))
}

/// The root package's version: `version = "…"` in `[package]`.
fn cargo_version(toml: &str) -> Option<(usize, String)> {
    let mut in_package = false;
    for (i, line) in toml.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(rest) = line.strip_prefix("version") {
            let value = rest.trim_start().strip_prefix('=')?.trim();
            return Some((i + 1, value.trim_matches('"').to_string()));
        }
    }
    None
}

/// The line (1-based) of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(0, |i| i + 1)
}

/// Every `kata-runtime-policy:vX.Y.Z` and `releases/download/vX.Y.Z` in a
/// file.
fn pinned_in(rel: &str, text: &str) -> Vec<Pin> {
    let mut pins = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (marker, what) in [
            (MODULE, "module reference"),
            (DOWNLOAD, "download URL"),
            (BLOB, "link to a file of the release"),
            (CLONE, "clone of the release"),
        ] {
            for (at, _) in line.match_indices(marker) {
                let rest = &line[at + marker.len()..];
                pins.push(Pin {
                    at: format!("{rel}:{}", i + 1),
                    what,
                    version: version_at(rest).unwrap_or(rest).to_string(),
                });
            }
        }
    }
    pins
}

/// The user documents that may pin a release: examples/*, README.md,
/// docs/*.md (relative paths, sorted).
fn pinning_documents(root: &Path) -> Vec<String> {
    let mut files = vec!["README.md".to_string()];
    for (dir, md_only) in [("examples", false), ("docs", true)] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !md_only || n.ends_with(".md"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
}

/// A release section of the CHANGELOG: `## [X.Y.Z] - YYYY-MM-DD`.
#[derive(Debug)]
struct Section {
    line: usize,
    version: String,
    date: String,
}

fn is_date(d: &str) -> bool {
    let b = d.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// The release sections, newest first, and the problems of their headings.
fn changelog_sections(changelog: &str) -> (Vec<Section>, Vec<String>) {
    let mut sections = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in changelog.lines().enumerate() {
        let Some(rest) = line.strip_prefix("## [") else {
            continue;
        };
        let Some((version, tail)) = rest.split_once(']') else {
            problems.push(format!(
                "CHANGELOG.md:{}: heading without a closing ]",
                i + 1
            ));
            continue;
        };
        if version == "Unreleased" {
            continue;
        }
        match tail.strip_prefix(" - ") {
            Some(date) if is_date(date) && version_at(version) == Some(version) => {
                sections.push(Section {
                    line: i + 1,
                    version: version.to_string(),
                    date: date.to_string(),
                })
            }
            _ => problems.push(format!(
                "CHANGELOG.md:{}: a release heading is `## [X.Y.Z] - YYYY-MM-DD`, got `{line}`",
                i + 1
            )),
        }
    }
    (sections, problems)
}

/// The link reference `[label]: url`, if any.
fn link_reference<'a>(changelog: &'a str, label: &str) -> Option<(usize, &'a str)> {
    let prefix = format!("[{label}]: ");
    changelog
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.strip_prefix(&prefix).map(|url| (i + 1, url.trim())))
}

/// Every disagreement between the files of the release under `root`.
fn check_release(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut pins = Vec::new();

    let cargo = match read(root, "Cargo.toml").map(|toml| cargo_version(&toml)) {
        Ok(Some((line, version))) => {
            pins.push(Pin {
                at: format!("Cargo.toml:{line}"),
                what: "package version",
                version: version.clone(),
            });
            version
        }
        Ok(None) => return vec!["Cargo.toml: no [package] version".into()],
        Err(e) => return vec![e],
    };

    match read(root, "metadata.yml") {
        Ok(text) => {
            let meta: Value = serde_yaml::from_str(&text).unwrap_or_default();
            match meta["annotations"]["io.kubewarden.policy.version"].as_str() {
                Some(v) => pins.push(Pin {
                    at: format!(
                        "metadata.yml:{}",
                        line_of(&text, "io.kubewarden.policy.version:")
                    ),
                    what: "io.kubewarden.policy.version",
                    version: v.to_string(),
                }),
                None => problems.push("metadata.yml: no io.kubewarden.policy.version".into()),
            }
        }
        Err(e) => problems.push(e),
    }

    let mut created_at = None;
    match read(root, "artifacthub-pkg.yml") {
        Ok(text) => {
            let pkg: Value = serde_yaml::from_str(&text).unwrap_or_default();
            match pkg["version"].as_str() {
                Some(v) => pins.push(Pin {
                    at: format!("artifacthub-pkg.yml:{}", line_of(&text, "version:")),
                    what: "version",
                    version: v.to_string(),
                }),
                None => problems.push("artifacthub-pkg.yml: no version".into()),
            }
            let images: Vec<&str> = pkg["containersImages"]
                .as_sequence()
                .into_iter()
                .flatten()
                .filter_map(|i| i["image"].as_str())
                .collect();
            if images.is_empty() {
                problems.push("artifacthub-pkg.yml: no containersImages image".into());
            }
            for image in images {
                let tag = image.rsplit_once(":v").map_or(image, |(_, t)| t);
                pins.push(Pin {
                    at: format!("artifacthub-pkg.yml:{}", line_of(&text, image)),
                    what: "image tag",
                    version: tag.to_string(),
                });
            }
            // The install text and the policy link are read by pinned_in.
            let pinned = pinned_in("artifacthub-pkg.yml", &text);
            if !pinned.iter().any(|p| p.what == "download URL") {
                problems.push("artifacthub-pkg.yml: no releases/download/v… link".into());
            }
            pins.extend(pinned);
            created_at = pkg["createdAt"]
                .as_str()
                .map(|c| (line_of(&text, "createdAt:"), c.to_string()));
        }
        Err(e) => problems.push(e),
    }

    for rel in pinning_documents(root) {
        match read(root, &rel) {
            Ok(text) => pins.extend(pinned_in(&rel, &text)),
            Err(e) if rel == "README.md" => problems.push(e),
            Err(_) => {}
        }
    }

    for pin in &pins {
        if pin.version != cargo {
            problems.push(format!(
                "{}: {} {} disagrees with Cargo.toml's version {cargo}",
                pin.at, pin.what, pin.version
            ));
        }
    }

    let changelog = match read(root, "CHANGELOG.md") {
        Ok(text) => text,
        Err(e) => {
            problems.push(e);
            return problems;
        }
    };
    let (sections, heading_problems) = changelog_sections(&changelog);
    problems.extend(heading_problems);
    let pinned: BTreeSet<&str> = pins.iter().map(|p| p.version.as_str()).collect();
    for version in pinned {
        let Some(section) = sections.iter().find(|s| s.version == version) else {
            problems.push(format!(
                "CHANGELOG.md: no `## [{version}] - YYYY-MM-DD` section for the pinned version {version}"
            ));
            continue;
        };
        match link_reference(&changelog, version) {
            Some((line, url)) if !url.ends_with(&format!("v{version}")) => problems.push(format!(
                "CHANGELOG.md:{line}: the link reference [{version}] should end with v{version}: {url}"
            )),
            Some(_) => {}
            None => problems.push(format!(
                "CHANGELOG.md:{}: no link reference `[{version}]: …` for this section",
                section.line
            )),
        }
    }
    match sections.first() {
        Some(newest) => {
            if newest.version != cargo {
                problems.push(format!(
                    "CHANGELOG.md:{}: the newest release is {}, Cargo.toml's version is {cargo}",
                    newest.line, newest.version
                ));
            }
            let compare = format!("compare/v{}...HEAD", newest.version);
            match link_reference(&changelog, "Unreleased") {
                Some((line, url)) if !url.ends_with(&compare) => problems.push(format!(
                    "CHANGELOG.md:{line}: [Unreleased] should compare from the newest release ({compare}): {url}"
                )),
                Some(_) => {}
                None => problems.push("CHANGELOG.md: no [Unreleased] link reference".into()),
            }
        }
        None => problems.push("CHANGELOG.md: no release section".into()),
    }
    if !changelog.lines().any(|l| l == "## [Unreleased]") {
        problems.push("CHANGELOG.md: no `## [Unreleased]` section".into());
    }
    if let (Some((line, created)), Some(section)) =
        (created_at, sections.iter().find(|s| s.version == cargo))
        && !created.starts_with(&format!("{}T", section.date))
    {
        problems.push(format!(
            "artifacthub-pkg.yml:{line}: createdAt {created} is not the release date {} of CHANGELOG.md:{}",
            section.date, section.line
        ));
    }
    problems
}

#[test]
fn every_pinned_version_is_the_release() {
    let problems = check_release(root());
    assert!(
        problems.is_empty(),
        "the release's versions disagree:\n{}",
        problems.join("\n")
    );
}

// The checker itself, on trees it can fail on.

/// A fresh directory under the system temp dir, removed on drop.
struct TempTree(PathBuf);

impl TempTree {
    fn new(name: &str) -> TempTree {
        let dir =
            std::env::temp_dir().join(format!("kata-release-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempTree(dir)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.0.join(rel)).unwrap();
        assert!(text.contains(from), "{rel} lacks {from:?}");
        self.write(rel, &text.replacen(from, to, 1));
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const MINI_CHANGELOG: &str = "# Changelog

## [Unreleased]

## [1.2.0] - 2027-01-15

### Added

- Something.

## [1.1.0] - 2026-12-24

First release.

[Unreleased]: https://example.com/r/compare/v1.2.0...HEAD
[1.2.0]: https://example.com/r/compare/v1.1.0...v1.2.0
[1.1.0]: https://example.com/r/releases/tag/v1.1.0
";

/// A small consistent release at 1.2.0.
fn mini_release(name: &str) -> TempTree {
    let t = TempTree::new(name);
    t.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"1.2.0\"\n\n[dependencies]\nx = { version = \"9.9.9\" }\n",
    );
    t.write(
        "metadata.yml",
        "rules: []\nannotations:\n  io.kubewarden.policy.version: 1.2.0\n",
    );
    t.write(
        "artifacthub-pkg.yml",
        "version: 1.2.0\ncreatedAt: 2027-01-15T00:00:00Z\ncontainersImages:\n- name: policy\n  image: ghcr.io/o/kata-runtime-policy:v1.2.0\nlinks:\n- name: policy\n  url: https://github.com/o/r/releases/download/v1.2.0/policy.wasm\ninstall: |\n  kwctl pull ghcr.io/o/kata-runtime-policy:v1.2.0\n",
    );
    t.write("CHANGELOG.md", MINI_CHANGELOG);
    t.write(
        "README.md",
        "Install:\n\n    kwctl pull ghcr.io/o/kata-runtime-policy:v1.2.0\n",
    );
    t.write(
        "examples/policy.yaml",
        "spec:\n  module: registry://ghcr.io/o/kata-runtime-policy:v1.2.0\n",
    );
    t.write(
        "docs/install.md",
        "`registry://ghcr.io/o/kata-runtime-policy:v1.2.0`\n",
    );
    t
}

fn problems_after(name: &str, rel: &str, from: &str, to: &str) -> String {
    let t = mini_release(name);
    t.edit(rel, from, to);
    let problems = check_release(&t.0);
    assert!(
        !problems.is_empty(),
        "{rel}: {from:?} -> {to:?} went unseen"
    );
    problems.join("\n")
}

#[test]
fn the_checker_passes_a_consistent_release() {
    let t = mini_release("consistent");
    assert_eq!(check_release(&t.0), Vec::<String>::new());
}

#[test]
fn the_checker_names_each_disagreement() {
    for (rel, from, to, expected) in [
        (
            "Cargo.toml",
            "version = \"1.2.0\"",
            "version = \"1.3.0\"",
            "Cargo.toml's version 1.3.0",
        ),
        (
            "metadata.yml",
            "version: 1.2.0",
            "version: 1.1.0",
            "metadata.yml:3: io.kubewarden.policy.version 1.1.0 disagrees",
        ),
        (
            "artifacthub-pkg.yml",
            "version: 1.2.0",
            "version: 1.1.0",
            "artifacthub-pkg.yml:1: version 1.1.0 disagrees",
        ),
        (
            "artifacthub-pkg.yml",
            "runtime-policy:v1.2.0\nlinks",
            "runtime-policy:v1.1.0\nlinks",
            "image tag 1.1.0 disagrees",
        ),
        (
            "artifacthub-pkg.yml",
            "download/v1.2.0",
            "download/v1.1.0",
            "download URL 1.1.0 disagrees",
        ),
        (
            "artifacthub-pkg.yml",
            "kwctl pull ghcr.io/o/kata-runtime-policy:v1.2.0",
            "kwctl pull ghcr.io/o/kata-runtime-policy:v1.1.0",
            "artifacthub-pkg.yml:10: module reference 1.1.0 disagrees",
        ),
        (
            "artifacthub-pkg.yml",
            "createdAt: 2027-01-15",
            "createdAt: 2027-01-16",
            "createdAt 2027-01-16T00:00:00Z is not the release date 2027-01-15",
        ),
        (
            "README.md",
            "policy:v1.2.0",
            "policy:v1.1.0",
            "README.md:3: module reference 1.1.0 disagrees",
        ),
        (
            "examples/policy.yaml",
            "policy:v1.2.0",
            "policy:v0.9.0",
            "examples/policy.yaml:2: module reference 0.9.0 disagrees",
        ),
        (
            "examples/policy.yaml",
            "policy:v1.2.0",
            "policy:v0.9.0",
            "no `## [0.9.0] - YYYY-MM-DD` section for the pinned version 0.9.0",
        ),
        (
            "docs/install.md",
            "policy:v1.2.0",
            "policy:vlatest",
            "docs/install.md:1: module reference latest`",
        ),
        (
            "CHANGELOG.md",
            "## [1.2.0] - 2027-01-15",
            "## [1.2.0]",
            "CHANGELOG.md:5: a release heading is `## [X.Y.Z] - YYYY-MM-DD`",
        ),
        (
            "CHANGELOG.md",
            "## [1.2.0] - 2027-01-15",
            "## [1.2.0] - 15.01.2027",
            "no `## [1.2.0] - YYYY-MM-DD` section",
        ),
        (
            "CHANGELOG.md",
            "[1.2.0]: https://example.com/r/compare/v1.1.0...v1.2.0\n",
            "",
            "CHANGELOG.md:5: no link reference `[1.2.0]: …`",
        ),
        (
            "CHANGELOG.md",
            "compare/v1.1.0...v1.2.0",
            "compare/v1.0.0...v1.1.0",
            "the link reference [1.2.0] should end with v1.2.0",
        ),
        (
            "CHANGELOG.md",
            "compare/v1.2.0...HEAD",
            "compare/v1.1.0...HEAD",
            "[Unreleased] should compare from the newest release (compare/v1.2.0...HEAD)",
        ),
        (
            "CHANGELOG.md",
            "## [Unreleased]\n",
            "",
            "no `## [Unreleased]` section",
        ),
        (
            "CHANGELOG.md",
            "## [Unreleased]\n",
            "## [Unreleased]\n\n## [1.3.0] - 2027-02-01\n",
            "the newest release is 1.3.0, Cargo.toml's version is 1.2.0",
        ),
    ] {
        let problems = problems_after("tampered", rel, from, to);
        assert!(
            problems.contains(expected),
            "{rel}: {from:?} -> {to:?}: expected {expected:?} in\n{problems}"
        );
    }
}

/// The same checker on a copy of this repository's release files, with one
/// pin tampered with: the real files are read the same way.
#[test]
fn the_checker_sees_a_tampered_copy_of_this_repository() {
    let t = TempTree::new("copy");
    let mut files = vec![
        "Cargo.toml".to_string(),
        "metadata.yml".into(),
        "artifacthub-pkg.yml".into(),
        "CHANGELOG.md".into(),
    ];
    files.extend(pinning_documents(root()));
    for rel in &files {
        if let Ok(text) = std::fs::read_to_string(root().join(rel)) {
            t.write(rel, &text);
        }
    }
    let cargo = cargo_version(&read(root(), "Cargo.toml").unwrap())
        .unwrap()
        .1;
    let before = check_release(&t.0);
    assert_eq!(
        before,
        check_release(root()),
        "the copy is read as the repository"
    );

    t.edit(
        "metadata.yml",
        &format!("io.kubewarden.policy.version: {cargo}"),
        "io.kubewarden.policy.version: 99.0.0",
    );
    let example = files
        .iter()
        .find(|f| f.starts_with("examples/") && read(root(), f).unwrap().contains(MODULE))
        .expect("an example pins the module");
    let pinned = read(root(), example).unwrap();
    let at = pinned.find(MODULE).unwrap() + MODULE.len();
    let old = format!("{MODULE}{}", version_at(&pinned[at..]).unwrap());
    t.edit(example, &old, &format!("{MODULE}98.0.0"));

    let after = check_release(&t.0).join("\n");
    for expected in [
        "metadata.yml:".to_string(),
        "io.kubewarden.policy.version 99.0.0 disagrees".into(),
        format!("{example}:"),
        "module reference 98.0.0 disagrees".into(),
        "no `## [98.0.0] - YYYY-MM-DD` section".into(),
        "no `## [99.0.0] - YYYY-MM-DD` section".into(),
    ] {
        assert!(after.contains(&expected), "{expected:?} not in\n{after}");
    }
}

#[test]
fn versions_are_read_as_tags_name_them() {
    assert_eq!(version_at("0.2.0 > policy.yaml"), Some("0.2.0"));
    assert_eq!(version_at("0.2.0.\n"), Some("0.2.0"));
    assert_eq!(version_at("1.0.0-rc1/policy.wasm"), Some("1.0.0-rc1"));
    assert_eq!(version_at("0.2"), None);
    assert_eq!(version_at("latest"), None);
    assert_eq!(
        cargo_version(
            "[workspace]\nversion = \"9\"\n[package]\nname = \"x\"\nversion = \"0.3.1\"\n"
        ),
        Some((5, "0.3.1".into()))
    );
    assert!(is_date("2026-12-01"));
    assert!(!is_date("2026-12-1"));
    assert!(!is_date("2026/12/01"));
}
